import { z } from 'zod';
import { ChatMessage, LlmError, LlmService, parseJsonObject } from '@agent/llm';

/** Why an LLM-backed routing stage did not decide; recorded in the decision's metadata. */
export type LlmRejectionReason =
  | 'disabled'
  | 'empty_message'
  | 'not_configured'
  | 'timeout'
  | 'http_error'
  | 'invalid_output'
  | 'unknown_intent'
  | 'below_threshold'
  | 'cancelled'
  | 'error';

export interface LlmRejection {
  accepted: false;
  reason: LlmRejectionReason;
  detail: string;
  latency_ms: number;
}

export type LlmJsonResult<T> = { ok: true; value: T; latency_ms: number } | LlmRejection;

/** 0..1, also accepted as a numeric string since some models quote numbers. */
export const confidenceSchema = z
  .union([
    z.number(),
    z
      .string()
      .trim()
      .regex(/^\d+(\.\d+)?$/, 'must be a number')
      .transform(Number),
  ])
  .pipe(z.number().min(0).max(1));

function reasonOf(error: unknown): LlmRejectionReason {
  if (!(error instanceof LlmError)) return 'error';
  return error.kind === 'invalid_response' ? 'invalid_output' : error.kind;
}

/**
 * One JSON-answering LLM call: parse tolerantly, validate with zod. Every failure (no endpoint, timeout,
 * HTTP error, unparsable or invalid JSON) becomes a rejection, never an exception, so the router always decides.
 */
export async function callLlmJson<S extends z.ZodTypeAny>(
  llm: LlmService,
  profile: string,
  messages: ChatMessage[],
  schema: S,
): Promise<LlmJsonResult<z.output<S>>> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let content: string | null;
  try {
    content = (await llm.chat({ profile, messages, json: true })).content;
  } catch (error) {
    return {
      accepted: false,
      reason: reasonOf(error),
      detail: error instanceof Error ? error.message : String(error),
      latency_ms: elapsed(),
    };
  }
  const parsed = parseJsonObject(content);
  if (!parsed) {
    return {
      accepted: false,
      reason: 'invalid_output',
      detail: 'no JSON object in the answer',
      latency_ms: elapsed(),
    };
  }
  const validated = schema.safeParse(parsed);
  if (!validated.success) {
    const detail = validated.error.issues
      .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
      .join('; ');
    return { accepted: false, reason: 'invalid_output', detail, latency_ms: elapsed() };
  }
  return { ok: true, value: validated.data as z.output<S>, latency_ms: elapsed() };
}
