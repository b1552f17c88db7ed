import { z } from 'zod';
import { CONTINUITY_DECISIONS } from '@agent/contracts';
import { confidenceSchema, structuredOutput } from '@agent/llm';

/**
 * The classifier's output contract: {decision, confidence, reason, target?}. Validation is strict: a label
 * outside the closed set, or a confidence that is not a number in [0, 1], makes the whole answer invalid. Nothing
 * is clamped or defaulted into an acceptable value, so a malformed answer can never be accepted. `target` is a
 * capability (or pending topic) a ROUTE names; one that matches none is ignored and the router decides.
 */
export const continuityOutput = structuredOutput(
  'continuity_decision',
  z.object({
    // Case and surrounding spaces are formatting, not meaning; any other spelling is an unknown label.
    decision: z.preprocess(
      (label) => (typeof label === 'string' ? label.trim().toUpperCase() : label),
      z.enum(CONTINUITY_DECISIONS),
    ),
    confidence: confidenceSchema,
    reason: z.string().nullish(),
    target: z.string().nullish(),
  }),
);
