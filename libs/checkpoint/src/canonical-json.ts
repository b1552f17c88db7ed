import { createHash } from 'node:crypto';
import { z } from 'zod';
import { AgentState, agentStateSchema, conversationStateSchema } from '@agent/contracts';

/**
 * JSON with object keys sorted at every level, so equal states hash equally, and with the strings Postgres
 * `jsonb` rejects made storable: a NUL character or a lone UTF-16 surrogate in a user message would otherwise
 * make every later commit of that conversation fail.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(normalize(value, true));
}

const UNSTORABLE_ESCAPE = /\\u(?:0000|d[89a-f][0-9a-f]{2})/i;

/**
 * JSON text a `jsonb` column accepts (keys in insertion order); for events and stored responses. JSON.stringify
 * writes a NUL as `\u0000` and a lone surrogate as `\udXXX`, both of which jsonb rejects: only text containing
 * such an escape (or a user's literal backslash that looks like one) takes the normalizing copy.
 */
export function jsonbText(value: unknown): string {
  const text = JSON.stringify(value) ?? 'null';
  return UNSTORABLE_ESCAPE.test(text) ? JSON.stringify(normalize(value, false)) : text;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

function storableString(text: string): string {
  return text.replaceAll('\u0000', '\ufffd').replace(LONE_SURROGATE, '\ufffd');
}

function normalize(value: unknown, sort: boolean): unknown {
  if (typeof value === 'string') return storableString(value);
  if (value === null || typeof value !== 'object') return value;
  // Dates and other objects with toJSON serialize as JSON.stringify would, not as their own keys.
  const withToJson = value as { toJSON?: () => unknown };
  if (typeof withToJson.toJSON === 'function') return normalize(withToJson.toJSON(), sort);
  if (Array.isArray(value)) return value.map((item: unknown) => normalize(item, sort));
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  const out: Record<string, unknown> = {};
  for (const key of sort ? keys.sort() : keys) {
    if (record[key] !== undefined) out[storableString(key)] = normalize(record[key], sort);
  }
  return out;
}

/**
 * How a checkpoint row's state and checksum are written. 1: the state's canonical JSON was hashed and jsonb
 * stored it (rows of earlier releases, verified by re-canonicalizing); 2: the stored text is what was hashed.
 */
export type CheckpointFormat = 1 | 2;

export interface SerializedCheckpoint {
  text: string;
  checksum: string;
}

/**
 * The text a checkpoint stores and its checksum: one serialization, one hash (format 2). JSON.stringify escapes
 * NUL and lone surrogates, so the text is always storable and parses back to the same state.
 */
export function serializeCheckpoint(state: unknown, parentVersion: number | null): SerializedCheckpoint {
  const text = JSON.stringify(state) ?? 'null';
  return { text, checksum: storedTextChecksum(text, parentVersion) };
}

/**
 * How much of a stored state a reader validates and gets back: the whole of it, or what a turn carries over (the
 * scratch keys, which the next turn clears, are then left out unread).
 */
export type CheckpointReading = 'whole state' | 'carried over';

const READING_SCHEMAS: Record<CheckpointReading, z.ZodType<AgentState, z.ZodTypeDef, unknown>> = {
  'whole state': agentStateSchema,
  'carried over': conversationStateSchema,
};

/**
 * The parsed state when the stored row passes integrity and the state schema, else why not: a state this
 * release cannot read is skipped like a corrupt one, never half-used.
 */
export function readCheckpoint(
  row: {
    state_text: string;
    format: number;
    checksum: string;
    parent_version: number | null;
  },
  reading: CheckpointReading = 'whole state',
): { state: AgentState } | { problem: string } {
  let state: unknown;
  try {
    state = JSON.parse(row.state_text);
  } catch {
    return { problem: 'state is not JSON' };
  }
  if (state === null || typeof state !== 'object' || Array.isArray(state)) {
    return { problem: 'state is not an object' };
  }
  const checksum =
    row.format === 2
      ? storedTextChecksum(row.state_text, row.parent_version)
      : checkpointChecksum(state, row.parent_version);
  if (checksum !== row.checksum) return { problem: 'checksum mismatch' };
  const parsed = READING_SCHEMAS[reading].safeParse(state);
  if (parsed.success) return { state: parsed.data };
  const issue = parsed.error.issues[0];
  return {
    problem: `state does not match the schema at ${issue.path.join('.') || '(root)'}: ${issue.message}`,
  };
}

function storedTextChecksum(text: string, parentVersion: number | null): string {
  return createHash('sha256')
    .update(`${parentVersion ?? 'null'}\n`)
    .update(text)
    .digest('hex');
}

/** SHA-256 over the canonical state plus its parent version (format 1). */
export function checkpointChecksum(state: unknown, parentVersion: number | null): string {
  return createHash('sha256')
    .update(canonicalJson({ parent_version: parentVersion, state }))
    .digest('hex');
}
