import type { ResponseFormatJSONSchema } from 'openai/resources/shared';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';

/**
 * The one rule for a model's confidence: a JSON number in [0, 1]. Nothing is coerced: a quoted "0.9", null or
 * an out-of-range value makes the answer invalid rather than being turned into something acceptable.
 */
export const confidenceSchema = z.number().finite().min(0).max(1);

/**
 * What a stage asks the model to answer: a name (sent with the JSON schema), the zod schema that validates the
 * answer, and the JSON schema the provider's structured-output mode constrains generation with. Define it once
 * at module level: the JSON schema is derived once, never per call.
 */
export interface StructuredOutput<T> {
  readonly name: string;
  readonly schema: z.ZodType<T, z.ZodTypeDef, unknown>;
  readonly jsonSchema: ResponseFormatJSONSchema.JSONSchema;
}

/**
 * `schema` validates; `wire` (default: `schema`) describes the answer to the provider and must be expressible
 * as a strict JSON schema (every property required, `.nullish()` for optional ones, no records). A stage passes
 * its own `wire` when validation is deliberately looser than what the model is asked for (memory keeps the
 * valid facts of a list and counts the others).
 */
export function structuredOutput<T>(
  name: string,
  schema: z.ZodType<T, z.ZodTypeDef, unknown>,
  wire: z.ZodTypeAny = schema,
): StructuredOutput<T> {
  return { name, schema, jsonSchema: zodResponseFormat(wire, name).json_schema };
}

export type JsonObjectParse = { ok: true; object: Record<string, unknown> } | { ok: false; problem: string };

/**
 * Tolerant extraction of exactly one JSON object from a model answer: a ``` fence or prose around it is fine,
 * two objects are not (the answer is ambiguous, and taking the first would guess). A balanced `{...}` that is
 * not JSON (prose like "{see below}") is skipped.
 */
export function parseJsonObject(text: string | null | undefined): JsonObjectParse {
  if (typeof text !== 'string' || text.trim() === '') return { ok: false, problem: 'empty answer' };
  const objects: Record<string, unknown>[] = [];
  let from = 0;
  while (objects.length < 2) {
    const start = text.indexOf('{', from);
    if (start === -1) break;
    const end = balancedEnd(text, start);
    if (end === -1) {
      from = start + 1;
      continue;
    }
    const object = objectOf(text.slice(start, end + 1));
    if (object) objects.push(object);
    from = end + 1;
  }
  if (objects.length === 0) return { ok: false, problem: 'no JSON object in the answer' };
  if (objects.length > 1) return { ok: false, problem: 'more than one JSON object in the answer' };
  return { ok: true, object: objects[0] };
}

/** Index of the `}` closing the object opened at `start` (strings and escapes respected), or -1. */
function balancedEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  let escaped = false;
  for (let i = start; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === '\\') escaped = true;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === '{') depth++;
    else if (ch === '}' && --depth === 0) return i;
  }
  return -1;
}

function objectOf(candidate: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(candidate);
    return isRecord(value) ? value : null;
  } catch {
    return null;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** `path: message; ...` of a zod error, the way every stage reports an invalid answer. */
export function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
}
