import {
  ActiveTransaction,
  AgentState,
  hasPendingTransaction,
  noPendingTransaction,
  PendingToolCall,
  ToolArguments,
  waitingState,
} from '@agent/contracts';
import type { CollectionAction, CollectionReading } from './parameter-extractor';
import { TransactionInterruption, transactionEvent } from './transaction.events';
import {
  advance,
  begin,
  execute,
  isMissing,
  terminal,
  validateAndConfirm,
  endingTurn,
  withOutcome,
} from './transaction.flow';
import { after, done, DoneStep, TransactionStep, TransactionTurn } from './transaction.step';
import { ConfirmationDecision, ConfirmationResult } from './transaction.types';

/*
 * The transaction state machine. Between turns an operation is COLLECTING_PARAMETERS or AWAITING_CONFIRMATION;
 * the customer's reply, read by a model, picks its transition from TRANSITIONS, and whatever the status, the
 * conversation moving elsewhere is `interrupted`. Every transition is a pure function of the turn returning a
 * TransactionStep: its events and its state patch, or the tool or model call it needs first. The way forward
 * from a set of values (collect, pre-validate, confirm, execute) is transaction.flow.ts.
 */

type CollectionHandler = (
  turn: TransactionTurn,
  transaction: ActiveTransaction,
  reading: CollectionReading,
) => TransactionStep;
type ConfirmationHandler = (
  turn: TransactionTurn,
  transaction: ActiveTransaction,
  pending: PendingToolCall,
  decision: ConfirmationResult,
) => TransactionStep;

/** Status × the customer's reply (as the model read it) → the transition. */
export const TRANSITIONS: {
  COLLECTING_PARAMETERS: Record<CollectionAction, CollectionHandler>;
  AWAITING_CONFIRMATION: Record<ConfirmationDecision, ConfirmationHandler>;
} = {
  COLLECTING_PARAMETERS: {
    ANSWER: (turn, transaction, reading) => collected(turn, transaction, reading.values),
    OTHER: (turn, transaction, reading) => collected(turn, transaction, reading.values),
    ABANDON: (turn, transaction) => abandoned(turn, transaction),
    REPLACE: (turn, transaction, reading) =>
      reading.operation
        ? replaced(turn, transaction, reading.operation, reading.values)
        : collected(turn, transaction, reading.values),
  },
  AWAITING_CONFIRMATION: {
    CONFIRM: (turn, transaction, pending) => execute(turn, transaction, pending, []),
    REJECT: (turn, transaction) => rejected(turn, transaction),
    CORRECT: (turn, transaction, _pending, decision) => corrected(turn, transaction, decision.values),
    REPLACE: (turn, transaction, pending, decision) =>
      decision.operation
        ? replaced(turn, transaction, decision.operation, decision.values)
        : unclear(turn, transaction, pending, decision),
    OTHER: (turn, transaction, pending, decision) => unclear(turn, transaction, pending, decision),
  },
};

/** The reply to a parameter question, as the extraction read it. */
export function onParameters(
  turn: TransactionTurn,
  transaction: ActiveTransaction,
  reading: CollectionReading,
): TransactionStep {
  const classified = transactionEvent('IC.TRANSACTION_REPLY_CLASSIFIED', transaction, {
    stage: 'collecting_parameters',
    action: reading.action,
    confidence: reading.confidence,
    operation: reading.operation,
  });
  return after(
    done({}, [classified]),
    TRANSITIONS.COLLECTING_PARAMETERS[reading.action](turn, transaction, reading),
  );
}

/** The reply to the confirmation question, as the confirmation model read it. */
export function onConfirmation(
  turn: TransactionTurn,
  transaction: ActiveTransaction,
  pending: PendingToolCall,
  decision: ConfirmationResult,
): TransactionStep {
  const classified = transactionEvent('IC.TRANSACTION_CONFIRMATION_CLASSIFIED', transaction, {
    decision: decision.decision,
    confidence: decision.confidence,
    accepted: decision.accepted,
    fallback_reason: decision.fallback_reason,
    ...(decision.operation ? { operation: decision.operation } : {}),
  });
  return after(
    done({}, [classified]),
    TRANSITIONS.AWAITING_CONFIRMATION[decision.decision](turn, transaction, pending, decision),
  );
}

/** AWAITING_CONFIRMATION without its pending call (a checkpoint that lost it): validate and ask again. */
export function confirmationLost(turn: TransactionTurn, transaction: ActiveTransaction): TransactionStep {
  return validateAndConfirm(turn, { ...transaction, status: 'COLLECTING_PARAMETERS' }, []);
}

/**
 * The conversation went elsewhere (another subject or agent, another operation, a person, the end of the
 * session): the operation ends without running, recorded as CANCELLED with the reason.
 */
export function interrupted(
  state: AgentState,
  transaction: ActiveTransaction,
  reason: TransactionInterruption,
): DoneStep {
  return done(
    {
      operation_results: withOutcome(state, transaction, 'CANCELLED'),
      ...noPendingTransaction(),
      transaction_status: 'CANCELLED',
      next_state: null,
      last_transaction: {
        ...transaction,
        status: 'CANCELLED',
        interruption: reason,
        finished_turn: endingTurn(state),
      },
      tool_policy_result: { action: 'interrupted', tool_name: transaction.tool_name, reason },
    },
    [transactionEvent('IC.TRANSACTION_INTERRUPTED', transaction, { reason })],
  );
}

/**
 * A person or the end of the session took the turn: the operation waiting for the customer ends interrupted, so
 * no later message (in notify mode, after a resume) can confirm it. A pending state without its transaction (an
 * older checkpoint) is only cleared: there is nothing to record.
 */
export function sessionTookOver(state: AgentState, reason: 'human_handoff' | 'end_session'): DoneStep {
  if (state.active_transaction) {
    const ended = interrupted(state, state.active_transaction, reason);
    return done({ ...ended.patch, transaction_interruption: reason }, ended.events);
  }
  if (!hasPendingTransaction(state)) return done({});
  return done({
    ...noPendingTransaction(),
    transaction_status: 'CANCELLED',
    transaction_interruption: reason,
  });
}

/** A reply while parameters are collected: what it gave is merged; no progress counts as an attempt. */
function collected(
  turn: TransactionTurn,
  transaction: ActiveTransaction,
  values: ToolArguments,
): TransactionStep {
  const { state, rules } = turn;
  const prepared = rules.prepare(transaction.tool_name, { ...transaction.arguments, ...values });
  const merged = prepared.ok ? prepared.call.arguments : prepared.arguments;
  const progressed = transaction.missing_parameters.some((field) => !isMissing(merged[field]));
  const next: ActiveTransaction = {
    ...transaction,
    arguments: merged,
    updated_turn: state.turn,
    attempts: progressed ? 0 : transaction.attempts + 1,
  };
  if (!progressed && next.attempts >= rules.maxAttempts) return gaveUp(turn, next);
  return advance(turn, next, [], !progressed);
}

/** The customer gave the operation up while it collected parameters: it ends now, nothing ran. */
function abandoned(turn: TransactionTurn, transaction: ActiveTransaction): TransactionStep {
  return terminal(turn, transaction, 'CANCELLED', turn.rules.wording.message('cancelled', transaction), {
    events: [
      transactionEvent('IC.TRANSACTION_CANCELLED', transaction, {
        source: 'customer',
        stage: 'collecting_parameters',
      }),
    ],
    extra: {
      last_transaction: {
        ...transaction,
        status: 'CANCELLED',
        interruption: 'explicit_abandonment',
        finished_turn: turn.state.turn,
      },
      tool_policy_result: { action: 'abandoned_by_user', tool_name: transaction.tool_name },
    },
  });
}

/** The customer said no to the confirmation: nothing runs. */
function rejected(turn: TransactionTurn, transaction: ActiveTransaction): TransactionStep {
  return terminal(turn, transaction, 'CANCELLED', turn.rules.wording.message('cancelled', transaction), {
    events: [transactionEvent('IC.TRANSACTION_CANCELLED', transaction, { source: 'customer' })],
    extra: {
      confirmation_received: false,
      tool_policy_result: { action: 'cancelled_by_user', tool_name: transaction.tool_name },
    },
  });
}

/**
 * The customer wants another operation instead: this one ends unrun and the new one starts with what carries
 * over (fields of the same name) and what the message gives.
 */
function replaced(
  turn: TransactionTurn,
  transaction: ActiveTransaction,
  toolName: string,
  values: ToolArguments,
): TransactionStep {
  const ended = interrupted(turn.state, transaction, 'replaced');
  const properties = turn.rules.tool(toolName).args_schema.properties;
  const given = Object.fromEntries(Object.entries(values).filter(([field]) => field in properties));
  const next = begin(
    { ...turn, state: { ...turn.state, ...ended.patch } },
    transaction.agent,
    toolName,
    given,
    [],
    transaction,
  );
  return after(ended, next);
}

/** The customer changed values of the pending call: same transaction, validated and confirmed again. */
function corrected(
  turn: TransactionTurn,
  transaction: ActiveTransaction,
  values: ToolArguments,
): TransactionStep {
  const prepared = turn.rules.prepare(transaction.tool_name, { ...transaction.arguments, ...values });
  const next: ActiveTransaction = {
    ...transaction,
    arguments: prepared.ok ? prepared.call.arguments : prepared.arguments,
    attempts: 0,
    updated_turn: turn.state.turn,
  };
  const event = transactionEvent('IC.TRANSACTION_CORRECTED', next, { fields: Object.keys(values) });
  // A value that does not validate is dropped and collected again, like a missing one.
  return after(done({}, [event]), advance(turn, next, [], false));
}

/** An unclear answer to the confirmation: asked again, until `max_attempts` gives the operation up. */
function unclear(
  turn: TransactionTurn,
  transaction: ActiveTransaction,
  pending: PendingToolCall,
  decision: ConfirmationResult,
): TransactionStep {
  const { rules } = turn;
  const next = { ...transaction, attempts: transaction.attempts + 1, updated_turn: turn.state.turn };
  if (next.attempts >= rules.maxAttempts) return gaveUp(turn, next);
  return done({
    answer: rules.wording.message('confirm_again', next, {
      arguments: rules.wording.arguments(next.tool_name, pending.arguments),
    }),
    active_transaction: next,
    pending_tool_call: pending,
    transaction_status: 'AWAITING_CONFIRMATION',
    confirmation_required: true,
    confirmation_received: false,
    next_state: waitingState(next.state_domain),
    mcp_results: [],
    tool_policy_result: {
      action: 'confirmation_unclear',
      tool_name: next.tool_name,
      decision: decision.decision,
    },
  });
}

function gaveUp(turn: TransactionTurn, transaction: ActiveTransaction): TransactionStep {
  return terminal(turn, transaction, 'CANCELLED', turn.rules.wording.message('gave_up', transaction), {
    events: [transactionEvent('IC.TRANSACTION_CANCELLED', transaction, { source: 'max_attempts' })],
    extra: {
      tool_policy_result: { action: 'cancelled_after_unclear_answers', tool_name: transaction.tool_name },
    },
  });
}
