import { ApiError } from '../api/client';

/** A failed call, said plainly, with the request id operators can find in the server's logs. */
export function ErrorNotice({ error, action }: { error: unknown; action: string }) {
  const detail =
    error instanceof ApiError
      ? `${error.message} (${error.status} ${error.code}${error.requestId ? `, request ${error.requestId}` : ''})`
      : error instanceof Error
        ? error.message
        : String(error);
  return (
    <div role="alert" className="notice notice-error">
      <strong>Could not {action}:</strong> {detail}
    </div>
  );
}
