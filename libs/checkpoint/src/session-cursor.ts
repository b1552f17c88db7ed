import { InvalidCursorError } from './checkpoint.errors';

/**
 * The opaque cursor of the admin session list: the last row's `updated_at` and `conversation_key`. The instant
 * keeps the database's microseconds: cut to milliseconds, it would skip the rows of the next page that fall in
 * the same millisecond as the last row (concurrent turns commit that close together).
 */
export interface SessionCursor {
  updated_at: string;
  conversation_key: string;
}

/** `updatedAt` as the store keeps it: Postgres's microseconds, or a JavaScript date's milliseconds. */
export function encodeSessionCursor(updatedAt: string, conversationKey: string): string {
  return Buffer.from(JSON.stringify([updatedAt, conversationKey])).toString('base64url');
}

/** UTC ISO-8601 with milliseconds and, optionally, three more digits of microseconds. */
const INSTANT = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})(?:\d{3})?Z$/;

function isCanonicalTimestamp(value: string): boolean {
  const milliseconds = INSTANT.exec(value)?.[1];
  if (milliseconds === undefined) return false;
  const time = Date.parse(`${milliseconds}Z`);
  return !Number.isNaN(time) && new Date(time).toISOString() === `${milliseconds}Z`;
}

export function decodeSessionCursor(cursor: string): SessionCursor {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(parsed) &&
      typeof parsed[0] === 'string' &&
      typeof parsed[1] === 'string' &&
      // Exactly what encodeSessionCursor writes: anything else (a date Postgres reads differently, a NUL) is not ours.
      isCanonicalTimestamp(parsed[0]) &&
      !parsed[1].includes('\u0000')
    ) {
      return { updated_at: parsed[0], conversation_key: parsed[1] };
    }
  } catch {
    // fall through
  }
  throw new InvalidCursorError();
}
