import type { ToolArguments } from '@agent/contracts';

/**
 * CONFIRM the pending call; REJECT it (a no, or giving the operation up); CORRECT one of its values and keep
 * the operation; REPLACE it with another operation; OTHER for anything else.
 */
export const CONFIRMATION_DECISIONS = ['CONFIRM', 'REJECT', 'CORRECT', 'REPLACE', 'OTHER'] as const;
export type ConfirmationDecision = (typeof CONFIRMATION_DECISIONS)[number];

export interface ConfirmationResult {
  decision: ConfirmationDecision;
  confidence: number;
  accepted: boolean;
  reason: string;
  /** CORRECT and REPLACE: the values the customer gave (only those written in the message). */
  values: ToolArguments;
  /** REPLACE: the operation the customer wants instead. */
  operation: string | null;
  /** null when the model answered validly; else why the decision fell back to OTHER. */
  fallback_reason: 'below_threshold' | 'invalid_output' | 'llm_error' | 'incomplete' | null;
}
