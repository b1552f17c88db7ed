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
export type WaitingHandoff = Schemas['WaitingHandoffDto'];
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
 * Whether this server checks admin keys, asked of GET /v1/admin/me without one: with authentication off it
 * answers (`authentication: false`, any key signs in), with it on it refuses (401). Null when it cannot tell.
 */
export async function authenticationRequired(): Promise<boolean | null> {
  try {
    const { data, response } = await createClient<paths>({ baseUrl: window.location.origin }).GET(
      '/v1/admin/me',
    );
    if (data) return data.authentication;
    return response.status === 401 ? true : null;
  } catch {
    return null;
  }
}

/** The data of a call, or its error as an ApiError (for TanStack Query, which expects a throw). */
export async function unwrap<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  const { data, error, response } = await call;
  if (error !== undefined || data === undefined) throw apiErrorOf(response.status, error);
  return data;
}
