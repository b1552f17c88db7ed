import { GUARDRAIL_MODEL_UNAVAILABLE, RailDecision } from '@agent/contracts';

/** A deterministic rail crashed or timed out, and its fail_closed posture stopped the text without a verdict. */
export const GUARDRAIL_FAILED = 'GUARDRAIL_FAILED';

type Reported = Pick<RailDecision, 'code' | 'error' | 'metadata'>;

/**
 * The code a stopped text is reported under: the rail's when it judged the text; when it could not decide (its
 * fail_closed posture stopped the text anyway), why it could not. A PINJ that got no verdict is an outage of the
 * guardrail model, never a finding of injection.
 */
export function reportedCode(result: Reported): string {
  if (result.error === undefined) return result.code;
  return result.metadata.source === 'llm' ? GUARDRAIL_MODEL_UNAVAILABLE : GUARDRAIL_FAILED;
}

/** The reported codes of the results that stopped a text, each once, in order. */
export function reportedCodes(results: readonly Reported[]): string[] {
  return [...new Set(results.map(reportedCode))];
}
