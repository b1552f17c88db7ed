import { z } from 'zod';
import { nodeNameSchema } from './route-decision';

/**
 * The transaction slice of the state: what a transactional operation keeps between turns, and the helpers that
 * routing, continuity, the agents and the turn response share to read and clear it.
 */

/** Canonical transaction statuses: two active, the rest terminal. */
export const ACTIVE_TRANSACTION_STATUSES = ['COLLECTING_PARAMETERS', 'AWAITING_CONFIRMATION'] as const;
export const TERMINAL_TRANSACTION_STATUSES = ['COMPLETED', 'FAILED', 'CANCELLED', 'OUT_OF_SCOPE'] as const;
export const TRANSACTION_STATUSES = [
  ...ACTIVE_TRANSACTION_STATUSES,
  ...TERMINAL_TRANSACTION_STATUSES,
] as const;
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];

export const toolArgumentsSchema = z.record(z.string(), z.unknown());
export type ToolArguments = z.output<typeof toolArgumentsSchema>;

const transactionFields = {
  transaction_id: z.string().min(1),
  tool_name: z.string().min(1),
  server: z.string().min(1),
  agent: nodeNameSchema,
  state_domain: z.string().min(1),
  arguments: toolArgumentsSchema,
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
  /** A replacement: the transaction it replaced and the fields whose values carried over. */
  replaces: z.string().optional(),
  carried_over: z.array(z.string()).optional(),
};

/** `active_transaction`: the operation waiting for parameters or for the customer's confirmation. */
export const activeTransactionSchema = z.object({
  ...transactionFields,
  status: z.enum(ACTIVE_TRANSACTION_STATUSES),
});
export type ActiveTransaction = z.output<typeof activeTransactionSchema>;

/** `last_transaction`: the operation as it ended. */
export const lastTransactionSchema = z.object({
  ...transactionFields,
  status: z.enum(TRANSACTION_STATUSES),
  finished_turn: z.number().int().nullable().optional(),
  /** Why it ended unrun: `intent_shift`, `replaced`, `explicit_abandonment`, ... */
  interruption: z.string().optional(),
});
export type LastTransaction = z.output<typeof lastTransactionSchema>;

/** `pending_tool_call`: the exact call a confirmation executes. */
export const pendingToolCallSchema = z.object({
  call_id: z.string().min(1),
  transaction_id: z.string().min(1),
  tool_name: z.string().min(1),
  server: z.string().min(1),
  arguments: toolArgumentsSchema,
  /** The turn that asked for the confirmation: part of the idempotency key. */
  requested_turn: z.number().int().nullable(),
});
export type PendingToolCall = z.output<typeof pendingToolCallSchema>;

/** `selected_tool_call`: the last tool call the agent's model made this turn. */
export const selectedToolCallSchema = z.object({
  tool_name: z.string(),
  arguments: toolArgumentsSchema,
  call_id: z.string().optional(),
});
export type SelectedToolCall = z.output<typeof selectedToolCallSchema>;

/** `transaction_pre_validation`: the side-effect-free check before the confirmation. */
export const preValidationSchema = z.object({
  tool_name: z.string(),
  ok: z.boolean(),
  eligible: z.boolean().nullable(),
  reason: z.string().nullable(),
  message: z.string(),
  error: z.string().nullable(),
  turn: z.number().int().nullable(),
});
export type PreValidation = z.output<typeof preValidationSchema>;

/** `tool_policy_result`: what the transaction policy did with the turn. */
export const toolPolicyResultSchema = z.object({
  action: z.string(),
  tool_name: z.string(),
  missing_parameters: z.array(z.string()).optional(),
  decision: z.string().optional(),
  ok: z.boolean().optional(),
  reason: z.string().optional(),
});

/** One executed call, as `transaction_evidence` keeps it for the judges and the REVPREC rail. */
export const transactionEvidenceSchema = z.object({
  transaction_id: z.string(),
  call_id: z.string(),
  tool_name: z.string(),
  server: z.string(),
  arguments: toolArgumentsSchema,
  status: z.enum(TRANSACTION_STATUSES),
  ok: z.boolean(),
  result: z.unknown(),
  error: z.string().nullable(),
  idempotency_key: z.string(),
  idempotent_replay: z.boolean(),
  requested_turn: z.number().int().nullable(),
  executed_turn: z.number().int().nullable(),
  executed_at: z.string(),
  latency_ms: z.number(),
});
export type TransactionEvidence = z.output<typeof transactionEvidenceSchema>;

/** One entry of `operation_results` (keyed by transaction id): a finished or dropped operation. */
export const operationResultSchema = z.object({
  tool_name: z.string(),
  agent: nodeNameSchema,
  intent: z.string().nullable(),
  status: z.enum(TRANSACTION_STATUSES),
  arguments: toolArgumentsSchema,
  finished_turn: z.number().int().nullable(),
});
export type OperationResult = z.output<typeof operationResultSchema>;

/** The state keys of the transaction slice, with their schemas. */
export const transactionSliceSchema = z.object({
  active_transaction: activeTransactionSchema.nullable(),
  pending_tool_call: pendingToolCallSchema.nullable(),
  selected_tool_call: selectedToolCallSchema.nullable(),
  missing_parameters: z.array(z.string()),
  confirmation_required: z.boolean(),
  confirmation_received: z.boolean(),
  next_state: z.string().nullable(),
  transaction_status: z.enum(TRANSACTION_STATUSES).nullable(),
  transaction_pre_validation: preValidationSchema.nullable(),
  tool_policy_result: toolPolicyResultSchema.nullable(),
  last_transaction: lastTransactionSchema.nullable(),
  transaction_evidence: z.array(transactionEvidenceSchema),
  last_transaction_evidence: transactionEvidenceSchema.nullable(),
});
export type TransactionSlice = z.output<typeof transactionSliceSchema>;

/** What a domain agent may leave pending: the keys that travel with the transaction (supervisor mode picks them). */
export const TRANSACTION_KEYS = transactionSliceSchema.keyof().options;
export type TransactionKey = (typeof TRANSACTION_KEYS)[number];

/** The transaction keys a patch sets, and nothing else. */
export function transactionSliceOf(patch: Partial<TransactionSlice>): Partial<TransactionSlice> {
  const slice: Partial<TransactionSlice> = {};
  const copy = <K extends TransactionKey>(key: K) => {
    if (key in patch) slice[key] = patch[key];
  };
  TRANSACTION_KEYS.forEach(copy);
  return slice;
}

/** No operation waiting for the customer: what a dropped or finished transaction leaves. */
export function noPendingTransaction(): Pick<
  TransactionSlice,
  | 'active_transaction'
  | 'pending_tool_call'
  | 'selected_tool_call'
  | 'missing_parameters'
  | 'confirmation_required'
  | 'confirmation_received'
> {
  return {
    active_transaction: null,
    pending_tool_call: null,
    selected_tool_call: null,
    missing_parameters: [],
    confirmation_required: false,
    confirmation_received: false,
  };
}

/**
 * The status of the operation a turn worked on, as the turn's response reports it: the waiting operation's, else
 * that of the one that ended on this turn; null when the turn touched none.
 */
export function turnTransactionStatus(
  state: Partial<Pick<TransactionSlice, 'active_transaction' | 'last_transaction'>> & { turn?: number },
): TransactionStatus | null {
  if (state.active_transaction) return state.active_transaction.status;
  const last = state.last_transaction;
  return last && last.finished_turn === state.turn ? last.status : null;
}

/** `next_state` while an operation collects its parameters. */
export function collectingState(stateDomain: string): string {
  return `COLLECTING_${stateDomain}_PARAMETERS`;
}

/** `next_state` while an operation waits for the customer's confirmation. */
export function waitingState(stateDomain: string): string {
  return `WAITING_${stateDomain}_CONFIRMATION`;
}

const TRANSACTION_STATE = /^(WAITING_[A-Z0-9_]+_CONFIRMATION|COLLECTING_[A-Z0-9_]+_PARAMETERS)$/;

/** Whether a state waits for an operation (one of `collectingState` / `waitingState`). */
function isTransactionState(nextState: string | null | undefined): boolean {
  return typeof nextState === 'string' && TRANSACTION_STATE.test(nextState);
}

/** Whether an operation waits for the customer: a transaction state, a pending call or an active transaction. */
export function hasPendingTransaction(state: Partial<TransactionSlice>): boolean {
  return (
    isTransactionState(state.next_state) ||
    (state.pending_tool_call ?? null) !== null ||
    (state.active_transaction ?? null) !== null ||
    state.confirmation_required === true
  );
}
