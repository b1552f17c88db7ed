import { z } from 'zod';
import { CONTINUITY_DECISIONS, ContinuityDecision } from '@agent/contracts';
import { parseJsonObject } from '@agent/llm';

/**
 * The classifier's output contract (docs/architecture.md). Parsing is tolerant (a code fence or prose around one object);
 * validation is strict: a label outside the closed set, or a confidence that is not a number in [0, 1], makes
 * the whole answer invalid. Nothing is clamped or defaulted into an acceptable value, so a malformed answer
 * can never be accepted.
 */
const continuityOutputSchema = z.object({
  // Case and surrounding spaces are formatting, not meaning; any other spelling is an unknown label.
  decision: z
    .string()
    .transform((label) => label.trim().toUpperCase())
    .pipe(z.enum(CONTINUITY_DECISIONS)),
  confidence: z.number().finite().min(0).max(1),
  reason: z.string().optional(),
});

export interface ContinuityOutput {
  decision: ContinuityDecision;
  confidence: number;
  reason: string;
}

export type ContinuityOutputResult = { ok: true; output: ContinuityOutput } | { ok: false; problem: string };

export function parseContinuityOutput(content: string | null): ContinuityOutputResult {
  const object = parseJsonObject(content);
  if (!object) return { ok: false, problem: 'no JSON object in the answer' };
  const result = continuityOutputSchema.safeParse(object);
  if (!result.success) {
    return {
      ok: false,
      problem: result.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '),
    };
  }
  return {
    ok: true,
    output: {
      decision: result.data.decision,
      confidence: result.data.confidence,
      reason: (result.data.reason ?? '').trim(),
    },
  };
}
