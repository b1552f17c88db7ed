import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { ToolConfig } from '@agent/config';
import {
  ActiveTransaction,
  AgentState,
  collectingState,
  DomainAgentNode,
  McpToolResult,
  noPendingTransaction,
  OperationResult,
  PendingToolCall,
  PreValidation,
  ToolArguments,
  TransactionEvidence,
  TransactionStatus,
  waitingState,
} from '@agent/contracts';
import { requiredArguments } from '@agent/mcp';
import { executedButWithheld } from './screened-content';
import { TransactionEvent, transactionEvent } from './transaction.events';
import {
  after,
  done,
  DoneStep,
  TransactionPatch,
  TransactionStep,
  TransactionTurn,
} from './transaction.step';

/*
 * The way forward of an operation, as pure transitions (see transaction.machine.ts): start it, ask for what is
 * missing, pre-validate, ask for the confirmation or execute, and end it.
 */

/**
 * What the engine reads of a tool's own JSON answer: a field of another type counts as absent, and an answer
 * that is no object reads as `{}`.
 */
const preValidationBody = z
  .object({
    eligible: z.boolean().optional().catch(undefined),
    reason: z.string().optional().catch(undefined),
    message: z.string().optional().catch(undefined),
  })
  .catch({});
const executionBody = z.object({ idempotent_replay: z.boolean().optional().catch(undefined) }).catch({});

/** Finished operations `operation_results` keeps, newest last: the state stays bounded. */
const OPERATION_RESULTS_KEPT = 20;

/** Whether a tool argument still has to be given: absent, null or blank. */
export function isMissing(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
}

/** The idempotency key of a confirmed call: (conversation, turn that asked, tool call). */
export function idempotencyKey(conversationKey: string, pending: PendingToolCall): string {
  const digest = createHash('sha256')
    .update(`${conversationKey}\n${pending.requested_turn ?? ''}\n${pending.call_id}\n${pending.tool_name}`)
    .digest('hex');
  return `txn-${digest}`;
}

/**
 * The agent's model called a transactional tool: collect, pre-validate, confirm (or execute when no confirmation
 * is required). `replaced` is the operation this one replaces: its values for fields of the same name carry
 * over, unless the message or the model gives new ones.
 */
export function begin(
  turn: TransactionTurn,
  node: DomainAgentNode,
  toolName: string,
  modelArguments: ToolArguments,
  turnResults: McpToolResult[],
  replaced: ActiveTransaction | null = null,
): TransactionStep {
  const { rules } = turn;
  const config = rules.tool(toolName);
  const fromText = rules.patternValues(
    toolName,
    config,
    requiredArguments(config).filter((field) => isMissing(modelArguments[field])),
  );
  const given = { ...fromText, ...modelArguments };
  const carried = replaced ? carriedOver(replaced, config, given) : {};
  const prepared = rules.prepare(toolName, { ...carried, ...given });
  const fresh = newTransaction(turn, node, toolName, config);
  if (!prepared.ok && prepared.error.code !== 'invalid_arguments') {
    // Tools disabled or not configured: nothing to collect, the operation cannot run.
    const refused = rules.refuse(toolName, prepared.error);
    const error = refused.error ?? '';
    return terminal(turn, fresh, 'FAILED', rules.wording.message('failed', fresh, { error }), {
      events: [transactionEvent('IC.TRANSACTION_FAILED', fresh, { stage: 'preparation', error })],
      extra: { mcp_results: [...turnResults, refused] },
    });
  }
  const transaction: ActiveTransaction = {
    ...fresh,
    // Invalid arguments are dropped, so they are collected again like missing ones.
    arguments: prepared.ok ? prepared.call.arguments : prepared.arguments,
    ...(replaced
      ? { replaces: replaced.transaction_id, carried_over: Object.keys(carried), intent: replaced.intent }
      : {}),
  };
  const events = replaced
    ? [
        transactionEvent('IC.TRANSACTION_REPLACED', transaction, {
          replaced_transaction_id: replaced.transaction_id,
          replaced_tool_name: replaced.tool_name,
          carried_over: Object.keys(carried),
        }),
      ]
    : [];
  return after(done({}, events), advance(turn, transaction, turnResults, false));
}

/** The values of the replaced operation for fields this tool has too, where nothing new was given. */
function carriedOver(replaced: ActiveTransaction, config: ToolConfig, given: ToolArguments): ToolArguments {
  return Object.fromEntries(
    Object.entries(replaced.arguments).filter(
      ([field, value]) =>
        field in config.args_schema.properties && !isMissing(value) && isMissing(given[field]),
    ),
  );
}

function newTransaction(
  { state, rules }: TransactionTurn,
  node: DomainAgentNode,
  toolName: string,
  config: ToolConfig,
): ActiveTransaction {
  return {
    transaction_id: rules.newId(),
    tool_name: toolName,
    server: config.server,
    agent: node,
    state_domain: rules.stateDomain(node),
    arguments: {},
    status: 'COLLECTING_PARAMETERS',
    started_turn: state.turn,
    updated_turn: state.turn,
    started_from_intent: state.intent ?? null,
    intent: state.intent ?? null,
    tool_description: config.description,
    requires: requiredArguments(config),
    missing_parameters: [],
    attempts: 0,
  };
}

/** Asks for what is still missing (`again` after a reply that gave nothing), else goes on to the confirmation. */
export function advance(
  turn: TransactionTurn,
  transaction: ActiveTransaction,
  turnResults: McpToolResult[],
  again: boolean,
): TransactionStep {
  const missing = transaction.requires.filter((field) => isMissing(transaction.arguments[field]));
  if (missing.length === 0) return validateAndConfirm(turn, transaction, turnResults);
  const collecting: ActiveTransaction = {
    ...transaction,
    status: 'COLLECTING_PARAMETERS',
    missing_parameters: missing,
  };
  const event = transactionEvent('IC.TRANSACTION_PARAMETERS_REQUIRED', collecting, {
    missing_parameters: missing,
  });
  return done(
    {
      answer: turn.rules.wording.message(again ? 'ask_parameters_again' : 'ask_parameters', collecting),
      active_transaction: collecting,
      pending_tool_call: null,
      transaction_status: 'COLLECTING_PARAMETERS',
      missing_parameters: missing,
      confirmation_required: false,
      confirmation_received: false,
      next_state: collectingState(collecting.state_domain),
      selected_tool_call: { tool_name: collecting.tool_name, arguments: collecting.arguments },
      tool_policy_result: {
        action: 'collecting_parameters',
        tool_name: collecting.tool_name,
        missing_parameters: missing,
      },
      mcp_results: [
        ...turnResults,
        {
          ok: true,
          executed: false,
          collecting_parameters: true,
          tool_name: collecting.tool_name,
          transaction_status: 'COLLECTING_PARAMETERS',
          missing_parameters: missing,
        },
      ],
    },
    [event],
  );
}

/** Every value is there: the side-effect-free pre-validation first, when the tool has one. */
export function validateAndConfirm(
  turn: TransactionTurn,
  transaction: ActiveTransaction,
  turnResults: McpToolResult[],
): TransactionStep {
  const { rules } = turn;
  const preValidation = rules.tool(transaction.tool_name).pre_validation;
  if (!preValidation) return confirmOrExecute(turn, transaction, turnResults, null, '');
  const { tool: validator, fail_open: failOpen } = preValidation;
  const properties = rules.tool(validator).args_schema.properties;
  return {
    kind: 'call',
    events: [transactionEvent('IC.TRANSACTION_PREVALIDATION_REQUESTED', transaction, { validator })],
    request: {
      purpose: 'pre_validation',
      tool_name: validator,
      arguments: Object.fromEntries(
        Object.entries(transaction.arguments).filter(([key]) => key in properties),
      ),
    },
    then: (result) =>
      preValidated(turn, transaction, [...turnResults, result], { validator, failOpen }, result),
  };
}

/** The pre-validation answered: ineligible ends OUT_OF_SCOPE, a failure FAILED unless the tool fails open. */
function preValidated(
  turn: TransactionTurn,
  transaction: ActiveTransaction,
  results: McpToolResult[],
  { validator, failOpen }: { validator: string; failOpen: boolean },
  result: McpToolResult,
): TransactionStep {
  const { state, rules } = turn;
  const body = preValidationBody.parse(result.result);
  const eligible = result.ok ? body.eligible !== false : null;
  const message = body.message ?? '';
  const preValidation: PreValidation = {
    tool_name: validator,
    ok: result.ok,
    eligible,
    reason: body.reason ?? null,
    message,
    error: result.error,
    turn: state.turn,
  };
  const outcome = { transaction_pre_validation: preValidation, mcp_results: results };
  if (result.ok && eligible === false) {
    return terminal(
      turn,
      transaction,
      'OUT_OF_SCOPE',
      rules.wording.message('out_of_scope', transaction, {
        reason: message || String(preValidation.reason),
      }),
      {
        events: [
          transactionEvent('IC.TRANSACTION_PREVALIDATION_REJECTED', transaction, {
            validator,
            reason: preValidation.reason,
          }),
        ],
        extra: outcome,
      },
    );
  }
  if (!result.ok && !failOpen) {
    return terminal(turn, transaction, 'FAILED', rules.wording.message('validation_failed', transaction), {
      events: [
        transactionEvent('IC.TRANSACTION_FAILED', transaction, {
          stage: 'pre_validation',
          error: result.error,
        }),
      ],
      extra: outcome,
    });
  }
  const events = result.ok
    ? [transactionEvent('IC.TRANSACTION_PREVALIDATION_PASSED', transaction, { validator })]
    : [];
  return after(
    done({}, events),
    confirmOrExecute(turn, transaction, results, preValidation, result.ok ? message : ''),
  );
}

/** Asks the customer to confirm the exact call, or runs it when neither the policy nor the tool requires that. */
function confirmOrExecute(
  turn: TransactionTurn,
  transaction: ActiveTransaction,
  results: McpToolResult[],
  preValidation: PreValidation | null,
  validationMessage: string,
): TransactionStep {
  const { state, rules } = turn;
  const pending: PendingToolCall = {
    call_id: rules.newId(),
    transaction_id: transaction.transaction_id,
    tool_name: transaction.tool_name,
    server: transaction.server,
    arguments: transaction.arguments,
    requested_turn: state.turn,
  };
  if (!rules.confirmationRequired(transaction.tool_name)) {
    return execute(turn, transaction, pending, results);
  }
  const waiting: ActiveTransaction = {
    ...transaction,
    status: 'AWAITING_CONFIRMATION',
    missing_parameters: [],
    attempts: 0,
    updated_turn: state.turn,
  };
  return done(
    {
      answer: rules.wording.message('confirm', waiting, {
        validation: validationMessage ? `${validationMessage} ` : '',
      }),
      active_transaction: waiting,
      pending_tool_call: pending,
      transaction_status: 'AWAITING_CONFIRMATION',
      transaction_pre_validation: preValidation,
      missing_parameters: [],
      confirmation_required: true,
      confirmation_received: false,
      next_state: waitingState(waiting.state_domain),
      selected_tool_call: { tool_name: waiting.tool_name, arguments: waiting.arguments },
      tool_policy_result: { action: 'confirmation_requested', tool_name: waiting.tool_name },
      mcp_results: results,
    },
    [transactionEvent('IC.TRANSACTION_CONFIRMATION_REQUIRED', waiting, { call_id: pending.call_id })],
  );
}

/** Runs the confirmed call once: with confirmed: true and the idempotency key of (conversation, turn, call). */
export function execute(
  turn: TransactionTurn,
  transaction: ActiveTransaction,
  pending: PendingToolCall,
  turnResults: McpToolResult[],
): TransactionStep {
  const key = idempotencyKey(turn.state.conversation_key, pending);
  return {
    kind: 'call',
    events: [],
    request: { purpose: 'execution', pending, idempotency_key: key },
    then: (result) => executed(turn, transaction, pending, key, [...turnResults, result], result),
  };
}

/**
 * The call answered: COMPLETED when it ran (also when the tool rails withheld its result), else FAILED. The
 * evidence is kept for the judges, and the agent's model explains the result.
 */
function executed(
  turn: TransactionTurn,
  transaction: ActiveTransaction,
  pending: PendingToolCall,
  key: string,
  results: McpToolResult[],
  result: McpToolResult,
): TransactionStep {
  const { state, rules } = turn;
  const status = result.ok || executedButWithheld(result) ? 'COMPLETED' : 'FAILED';
  const evidence = evidenceOf(turn, pending, key, result, status);
  const outcome = {
    stage: 'execution',
    ok: result.ok,
    error: result.error,
    idempotent_replay: evidence.idempotent_replay,
  } as const;
  const event: TransactionEvent =
    status === 'COMPLETED'
      ? transactionEvent('IC.TRANSACTION_EXECUTED', transaction, outcome)
      : transactionEvent('IC.TRANSACTION_FAILED', transaction, outcome);
  const template =
    status === 'COMPLETED'
      ? rules.wording.message('completed', transaction)
      : rules.wording.message('failed', transaction, { error: rules.wording.customerError(result) });
  return {
    kind: 'compose',
    events: [event],
    request: { transaction, result, status },
    then: (answer) => {
      const ended = terminal(turn, transaction, status, answer || template, {
        extra: {
          confirmation_received: true,
          mcp_results: results,
          tool_policy_result: {
            action: 'executed_after_confirmation',
            tool_name: pending.tool_name,
            ok: result.ok,
          },
        },
      });
      return done({
        ...ended.patch,
        transaction_evidence: [...(state.transaction_evidence ?? []), evidence],
        last_transaction_evidence: evidence,
        relevant_transaction_evidence: [evidence],
      });
    },
  };
}

/** What the judges and the REVPREC rail keep of an executed call. */
function evidenceOf(
  { state, rules }: TransactionTurn,
  pending: PendingToolCall,
  key: string,
  result: McpToolResult,
  status: TransactionStatus,
): TransactionEvidence {
  return {
    transaction_id: pending.transaction_id,
    call_id: pending.call_id,
    tool_name: pending.tool_name,
    server: pending.server,
    arguments: pending.arguments,
    status,
    ok: result.ok,
    result: result.result,
    error: result.error,
    idempotency_key: key,
    idempotent_replay: executionBody.parse(result.result).idempotent_replay === true,
    requested_turn: pending.requested_turn,
    executed_turn: state.turn,
    executed_at: rules.now(),
    latency_ms: result.latency_ms,
  };
}

/**
 * Common shape of every finished transaction: latch cleared, next_state null, last_transaction set, and its
 * outcome added to `operation_results`.
 */
export function terminal(
  turn: TransactionTurn,
  transaction: ActiveTransaction,
  status: TransactionStatus,
  answer: string,
  { events = [], extra = {} }: { events?: TransactionEvent[]; extra?: TransactionPatch },
): DoneStep {
  return done(
    {
      operation_results: withOutcome(turn.state, transaction, status),
      answer,
      ...noPendingTransaction(),
      transaction_status: status,
      next_state: null,
      mcp_results: [],
      last_transaction: { ...transaction, status, finished_turn: turn.state.turn },
      selected_tool_call: { tool_name: transaction.tool_name, arguments: transaction.arguments },
      ...extra,
    },
    events,
  );
}

/**
 * The turn an operation ends in: the running turn's, or, when a person or the end of the session takes over
 * through the admin API, outside any turn, the stored state's last (none before its first turn).
 */
export function endingTurn(state: AgentState): number | null {
  return state.turn ?? null;
}

/** `operation_results` with this transaction's outcome, the newest OPERATION_RESULTS_KEPT by transaction id. */
export function withOutcome(
  state: AgentState,
  transaction: ActiveTransaction,
  status: TransactionStatus,
): Record<string, OperationResult> {
  const outcome: OperationResult = {
    tool_name: transaction.tool_name,
    agent: transaction.agent,
    intent: transaction.intent,
    status,
    arguments: transaction.arguments,
    finished_turn: endingTurn(state),
  };
  return Object.fromEntries(
    [
      ...Object.entries(state.operation_results ?? {}).filter(([id]) => id !== transaction.transaction_id),
      [transaction.transaction_id, outcome] as const,
    ].slice(-OPERATION_RESULTS_KEPT),
  );
}
