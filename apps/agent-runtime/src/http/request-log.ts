import type { SerializedRequest } from 'pino';

/** Headers that carry credentials, whatever the caller put in them. */
export const SECRET_HEADERS = ['authorization', 'proxy-authorization', 'x-api-key', 'cookie'];

/**
 * The URL as it may be logged: path and parameter names, every query value replaced. A key sent by mistake as
 * `?api_key=…` (or under any other name) never reaches the log in plain text.
 */
export function loggableUrl(url: string): string {
  const queryStart = url.indexOf('?');
  if (queryStart === -1) return url;
  const names = url
    .slice(queryStart + 1)
    .split('&')
    .filter((pair) => pair !== '')
    .map((pair) => `${pair.split('=')[0]}=[REDACTED]`);
  return `${url.slice(0, queryStart)}?${names.join('&')}`;
}

/** pino-http's request serializer: what a request log line says about the request, and nothing secret. */
export function serializeRequest(
  request: Pick<SerializedRequest, 'id' | 'method' | 'url' | 'headers' | 'remoteAddress'>,
): Record<string, unknown> {
  const headers: Record<string, unknown> = { ...request.headers };
  for (const name of SECRET_HEADERS) if (name in headers) headers[name] = '[REDACTED]';
  return {
    id: request.id,
    method: request.method,
    url: loggableUrl(request.url),
    headers,
    remoteAddress: request.remoteAddress,
  };
}
