import { z } from 'zod';
import { DOMAIN_AGENT_NODES, JsonRecord } from '@agent/contracts';

/** Canonical statuses (reference §10.3): two active, the rest terminal. */
export const ACTIVE_TRANSACTION_STATUSES = ['COLLECTING_PARAMETERS', 'AWAITING_CONFIRMATION'] as const;
export const TERMINAL_TRANSACTION_STATUSES = ['COMPLETED', 'FAILED', 'CANCELLED', 'OUT_OF_SCOPE'] as const;
export type ActiveTransactionStatus = (typeof ACTIVE_TRANSACTION_STATUSES)[number];
export type TransactionStatus = ActiveTransactionStatus | (typeof TERMINAL_TRANSACTION_STATUSES)[number];

const argumentsSchema = z.record(z.string(), z.unknown());

/**
 * `active_transaction` as persisted in the checkpoint. Parsed (not cast) when a turn resumes it, so a
 * checkpoint written by another version that does not fit is treated as no transaction.
 */
export const activeTransactionSchema = z
  .object({
    transaction_id: z.string().min(1),
    tool_name: z.string().min(1),
    server: z.string().min(1),
    agent: z.enum(DOMAIN_AGENT_NODES),
    state_domain: z.string().min(1),
    arguments: argumentsSchema,
    status: z.enum(ACTIVE_TRANSACTION_STATUSES),
    started_turn: z.number().int().nullable(),
    updated_turn: z.number().int().nullable(),
    started_from_intent: z.string().nullable(),
    /** The routing intent that started it: the router's state policy reads it (`active_transaction.intent`). */
    intent: z.string().nullable(),
    tool_description: z.string(),
    requires: z.array(z.string()),
    missing_parameters: z.array(z.string()),
    /** Turns spent in the current status without progress (unclear answers). */
    attempts: z.number().int().min(0),
  })
  .passthrough();
export type ActiveTransaction = z.output<typeof activeTransactionSchema>;

/** `pending_tool_call`: the exact call a confirmation executes. */
export const pendingToolCallSchema = z
  .object({
    call_id: z.string().min(1),
    transaction_id: z.string().min(1),
    tool_name: z.string().min(1),
    server: z.string().min(1),
    arguments: argumentsSchema,
    /** The turn that asked for the confirmation: part of the idempotency key. */
    requested_turn: z.number().int().nullable(),
  })
  .passthrough();
export type PendingToolCall = z.output<typeof pendingToolCallSchema>;

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
  values: JsonRecord;
  /** REPLACE: the operation the customer wants instead. */
  operation: string | null;
  /** null when the model answered validly; else why the decision fell back to OTHER. */
  fallback_reason: 'below_threshold' | 'invalid_output' | 'llm_error' | 'incomplete' | null;
}
