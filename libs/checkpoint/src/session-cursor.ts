import { InvalidCursorError } from './checkpoint.errors';

/** The opaque cursor of the admin session list: the last row's `updated_at` and `conversation_key`. */
export interface SessionCursor {
  updated_at: string;
  conversation_key: string;
}

export function encodeSessionCursor(updatedAt: Date, conversationKey: string): string {
  return Buffer.from(JSON.stringify([updatedAt.toISOString(), conversationKey])).toString('base64url');
}

function isCanonicalTimestamp(value: string): boolean {
  const time = Date.parse(value);
  return !Number.isNaN(time) && new Date(time).toISOString() === value;
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
