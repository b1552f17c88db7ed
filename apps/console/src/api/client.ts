import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './openapi';

export type Schemas = components['schemas'];
export type AdminKey = Schemas['AdminKeyDto'];
export type SessionSummary = Schemas['SessionSummaryDto'];
export type SessionList = Schemas['SessionListDto'];
export type SessionStatus = SessionSummary['status'];
export type SessionTimeline = Schemas['SessionTimelineDto'];
export type TimelineTurn = Schemas['TimelineTurnDto'];
export type StickinessStats = Schemas['StickinessStatsDto'];
export type AdminClient = Client<paths>;

/** A refused or failed admin API call, from the error envelope `{error: {code, message, details?}, request_id}`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | null,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** Reads the envelope; anything else (a proxy's HTML page, an empty body) still becomes an ApiError. */
export function apiErrorOf(status: number, body: unknown): ApiError {
  const envelope = isRecord(body) && isRecord(body.error) ? body.error : null;
  const requestId = isRecord(body) && typeof body.request_id === 'string' ? body.request_id : null;
  const code = typeof envelope?.code === 'string' ? envelope.code : `HTTP_${status}`;
  const message = typeof envelope?.message === 'string' ? envelope.message : `the server answered ${status}`;
  return new ApiError(status, code, message, requestId, envelope?.details);
}

/**
 * The typed admin API client for one key. Every call carries `Authorization: Bearer <key>`; a 401 on any call
 * means the key stopped working (rotated or removed), which the caller turns into a sign-out.
 */
export function createAdminClient(key: string, onUnauthorized: () => void): AdminClient {
  const client = createClient<paths>({ baseUrl: window.location.origin });
  client.use({
    onRequest({ request }) {
      request.headers.set('authorization', `Bearer ${key}`);
      return request;
    },
    onResponse({ response }) {
      if (response.status === 401) onUnauthorized();
      return undefined;
    },
  });
  return client;
}

/**
 * A call to an admin endpoint this console knows from the API's documentation but that the server's
 * openapi.json (and so the typed client) may not have yet: same key, same error envelope.
 */
export async function callDocumented(key: string, method: 'POST', path: string): Promise<unknown> {
  const response = await fetch(new URL(path, window.location.origin), {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: '{}',
  });
  const body: unknown = await response.json().catch(() => null);
  if (!response.ok) throw apiErrorOf(response.status, body);
  return body;
}

/** The operations the server documents at /docs/json (its live OpenAPI document), as "METHOD path". */
export async function documentedOperations(): Promise<Set<string>> {
  const response = await fetch(new URL('/docs/json', window.location.origin));
  if (!response.ok) return new Set();
  const document: unknown = await response.json();
  const paths = isRecord(document) && isRecord(document.paths) ? document.paths : {};
  return new Set(
    Object.entries(paths).flatMap(([path, operations]) =>
      isRecord(operations) ? Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`) : [],
    ),
  );
}

/** The data of a call, or its error as an ApiError (for TanStack Query, which expects a throw). */
export async function unwrap<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  const { data, error, response } = await call;
  if (error !== undefined || data === undefined) throw apiErrorOf(response.status, error);
  return data;
}
