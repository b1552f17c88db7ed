import { CodedError } from '@agent/contracts';
import type { NetworkCause, StructuredFailureReason } from '@agent/llm';

export const GUARDRAILS_ERROR_CODES = ['RAIL_VERDICT_MISSING', 'RAIL_TIMEOUT', 'RAIL_CANCELLED'] as const;
export type GuardrailsErrorCode = (typeof GUARDRAILS_ERROR_CODES)[number];

/**
 * The guardrail model gave no usable answer; `reason` is the structured call's failure reason, `networkCause`
 * why nothing answered when the endpoint could not be reached (refused, dns, ...).
 */
export class ModelVerdictError extends CodedError<GuardrailsErrorCode> {
  constructor(
    readonly reason: StructuredFailureReason,
    detail: string,
    readonly networkCause?: NetworkCause,
  ) {
    super('RAIL_VERDICT_MISSING', `no guardrail verdict (${reason}): ${detail}`);
  }
}

export class RailTimeoutError extends CodedError<GuardrailsErrorCode> {
  constructor(rail: string, timeoutMs: number) {
    super('RAIL_TIMEOUT', `rail ${rail} timed out after ${timeoutMs} ms`);
  }
}

/** The reason a rail's signal carries when fail_fast cancels it. */
export class RailCancelledError extends CodedError<GuardrailsErrorCode> {
  constructor(rail: string, by: string) {
    super('RAIL_CANCELLED', `rail ${rail} cancelled after the terminal result of ${by}`);
  }
}
