import type { ActiveTransaction, DomainAgentNode, EventName, EventPayloads } from '@agent/contracts';
import type { CollectionAction } from './parameter-extractor';
import type { ConfirmationDecision, ConfirmationResult } from './transaction.types';

/** What every `IC.TRANSACTION_*` payload starts with: which operation, of which agent. */
export interface TransactionEventBase {
  transaction_id: string;
  tool_name: string;
  agent: DomainAgentNode;
}

/**
 * Why an operation ended without running: the router moved the turn to another intent (`intent_shift`) or agent
 * (`routed_to_another_agent`), the customer asked for another operation (`replaced`), for a person
 * (`human_handoff`) or for the end of the session (`end_session`).
 */
export type TransactionInterruption =
  'intent_shift' | 'routed_to_another_agent' | 'replaced' | 'human_handoff' | 'end_session';

/** A confirmed call's outcome, as `IC.TRANSACTION_EXECUTED` and an execution's `IC.TRANSACTION_FAILED` report it. */
interface ExecutionOutcome {
  stage: 'execution';
  ok: boolean;
  error: string | null;
  /** The server recognised the idempotency key and answered with the first execution's result. */
  idempotent_replay: boolean;
}

/*
 * The transaction engine's events (docs/api.md#events), declared here because this module emits them: the
 * payloads join the event catalogue of `@agent/contracts`, so every emitter and listener is type-checked.
 */
declare module '@agent/contracts' {
  interface EventPayloads {
    /** The operation needs values the customer has not given yet. */
    'IC.TRANSACTION_PARAMETERS_REQUIRED': TransactionEventBase & { missing_parameters: string[] };
    /** How the extraction model read the customer's reply to a parameter question. */
    'IC.TRANSACTION_REPLY_CLASSIFIED': TransactionEventBase & {
      stage: 'collecting_parameters';
      action: CollectionAction;
      confidence: number | null;
      operation: string | null;
    };
    /** How the confirmation model read the customer's reply to the confirmation question. */
    'IC.TRANSACTION_CONFIRMATION_CLASSIFIED': TransactionEventBase & {
      decision: ConfirmationDecision;
      confidence: number;
      accepted: boolean;
      fallback_reason: ConfirmationResult['fallback_reason'];
      /** REPLACE: the operation the customer wants instead. */
      operation?: string;
    };
    /** The customer changed values of the pending call: validated and confirmed again. */
    'IC.TRANSACTION_CORRECTED': TransactionEventBase & { fields: string[] };
    /** This operation replaces another one, with the values of the fields they share. */
    'IC.TRANSACTION_REPLACED': TransactionEventBase & {
      replaced_transaction_id: string;
      replaced_tool_name: string;
      carried_over: string[];
    };
    /** The operation ended without running because the conversation went elsewhere. */
    'IC.TRANSACTION_INTERRUPTED': TransactionEventBase & { reason: TransactionInterruption };
    /** The customer said no or gave the operation up, or answered unclearly `max_attempts` times. */
    'IC.TRANSACTION_CANCELLED': TransactionEventBase & {
      source: 'customer' | 'max_attempts';
      stage?: 'collecting_parameters';
    };
    'IC.TRANSACTION_PREVALIDATION_REQUESTED': TransactionEventBase & { validator: string };
    'IC.TRANSACTION_PREVALIDATION_PASSED': TransactionEventBase & { validator: string };
    /** The side-effect-free check found the operation ineligible: it ends OUT_OF_SCOPE. */
    'IC.TRANSACTION_PREVALIDATION_REJECTED': TransactionEventBase & {
      validator: string;
      reason: string | null;
    };
    'IC.TRANSACTION_CONFIRMATION_REQUIRED': TransactionEventBase & { call_id: string };
    /** The confirmed call ran (its result may have been withheld by the tool rails: `ok` false). */
    'IC.TRANSACTION_EXECUTED': TransactionEventBase & ExecutionOutcome;
    /** Before the call (no server, tools off), at a fail-closed pre-validation, or at the confirmed call. */
    'IC.TRANSACTION_FAILED': TransactionEventBase &
      ({ stage: 'preparation' | 'pre_validation'; error: string | null } | ExecutionOutcome);
  }
}

export type TransactionEventName = Extract<EventName, `IC.TRANSACTION_${string}`>;

/** A payload without its base: what a transition says about the event (the union kept member by member). */
type EventDetails<N extends TransactionEventName> = EventPayloads[N] extends infer P
  ? P extends unknown
    ? Omit<P, keyof TransactionEventBase>
    : never
  : never;

/** One event a transition returns, emitted by the engine as `{...transaction, ...details}`. */
export type TransactionEvent<N extends TransactionEventName = TransactionEventName> = {
  [K in N]: { name: K; transaction: TransactionEventBase; details: EventDetails<K> };
}[N];

export function transactionEvent<N extends TransactionEventName>(
  name: N,
  transaction: ActiveTransaction,
  details: EventDetails<N>,
): TransactionEvent<N> {
  return {
    name,
    transaction: {
      transaction_id: transaction.transaction_id,
      tool_name: transaction.tool_name,
      agent: transaction.agent,
    },
    details,
  };
}
