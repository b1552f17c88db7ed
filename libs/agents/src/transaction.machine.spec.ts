import type { ToolConfig } from '@agent/config';
import type {
  ActiveTransaction,
  McpToolResult,
  PendingToolCall,
  ToolArguments,
  TurnState,
} from '@agent/contracts';
import { activeTransactionOf, pendingToolCallOf, toolResultOf, turnStateOf } from '@agent/testing/states';
import { createTestLlm } from '@agent/testing/test-llm';
import type { CollectionReading } from './parameter-extractor';
import { TOOL_RESULT_WITHHELD } from './screened-content';
import { TRANSACTION_SETTINGS_FILE } from './transaction.engine';
import { TransactionEvent } from './transaction.events';
import { begin, idempotencyKey } from './transaction.flow';
import {
  confirmationLost,
  interrupted,
  onConfirmation,
  onParameters,
  sessionTookOver,
  TRANSITIONS,
} from './transaction.machine';
import { ToolRequest, TransactionRules, TransactionStep, TransactionTurn } from './transaction.step';
import { transactionSettingsSchema, TransactionTexts } from './transaction-settings';
import type { ConfirmationResult } from './transaction.types';
import { TransactionWording } from './transaction.wording';

/** The shipped catalogue: cancelar_pedido (pre-validated, confirmed) and the support agent's exchange and return. */
const { files } = createTestLlm(null);
const tools = files.tools.tools;
const wording = new TransactionWording(
  new TransactionTexts(files.load(TRANSACTION_SETTINGS_FILE, transactionSettingsSchema), 'pt'),
  (name) => tools[name] ?? null,
);
const NOW = '2026-04-01T12:00:00.000Z';

/** The values `args` gives for the tool's fields: what the MCP preparation keeps of valid arguments. */
function prepared(toolName: string, args: ToolArguments): ToolArguments {
  return Object.fromEntries(
    Object.entries(args).filter(
      ([field, value]) => field in tools[toolName].args_schema.properties && value !== null && value !== '',
    ),
  );
}

function rulesOf(overrides: Partial<TransactionRules> = {}): TransactionRules {
  let ids = 0;
  return {
    maxAttempts: 3,
    wording,
    tool: (name) => tools[name],
    stateDomain: (node) => files.agents.graph_agents[node].state_domain,
    confirmationRequired: (name) => tools[name].require_confirmation,
    prepare: (name, args) => ({
      ok: true,
      call: { tool_name: name, server: tools[name].server, arguments: prepared(name, args) },
    }),
    refuse: (name, error) =>
      toolResultOf({ tool_name: name, server: null, ok: false, error: error.message, latency_ms: 0 }),
    patternValues: () => ({}),
    newId: () => `id-${++ids}`,
    now: () => NOW,
    ...overrides,
  };
}

function turnOf(state: Partial<TurnState> = {}, rules: TransactionRules = rulesOf()): TransactionTurn {
  return { state: stateOf(state), rules };
}

/** The state of the turn the machine runs in: turn 4 of session s1 of tenant acme, cancelling an order. */
function stateOf(state: Partial<TurnState> = {}): TurnState {
  return turnStateOf({
    tenant_id: 'acme',
    session_id: 's1',
    turn: 4,
    agent_id: 'retail_orders',
    intent: 'retail_order_cancel',
    ...state,
  });
}

/** The world a test plays: the answer of each tool call and of the model that composes the final answer. */
interface World {
  call?: (request: ToolRequest) => McpToolResult;
  composed?: string | null;
}

/** Runs a step to its end as the engine does, recording the events and the calls it asked for. */
function drive(first: TransactionStep, world: World = {}) {
  const events: TransactionEvent[] = [];
  const requests: ToolRequest[] = [];
  let step = first;
  for (;;) {
    events.push(...step.events);
    if (step.kind === 'done') {
      return { patch: step.patch, requests, names: events.map((e) => e.name), events };
    }
    if (step.kind === 'call') {
      requests.push(step.request);
      if (!world.call) throw new Error(`unexpected call: ${JSON.stringify(step.request)}`);
      step = step.then(world.call(step.request));
    } else {
      step = step.then(world.composed ?? null);
    }
  }
}

const eligible = (message = 'O pedido ainda não foi despachado.') =>
  toolResultOf({
    tool_name: 'validar_cancelamento_pedido',
    server: 'retail',
    result: { eligible: true, message },
  });
const executedOk = toolResultOf({
  tool_name: 'cancelar_pedido',
  server: 'retail',
  result: { status: 'cancelled', protocol: 'CAN-100231' },
});
/** Pre-validation passes; the execution answers `execution`. */
const world = (
  execution: McpToolResult = executedOk,
  composed: string | null = 'Pedido cancelado.',
): World => ({
  call: (request) => (request.purpose === 'pre_validation' ? eligible() : execution),
  composed,
});

const collecting = activeTransactionOf({
  status: 'COLLECTING_PARAMETERS',
  arguments: {},
  missing_parameters: ['order_id'],
});
const waiting = activeTransactionOf({ arguments: { order_id: '100231' }, updated_turn: 3 });
const pending: PendingToolCall = pendingToolCallOf(waiting);

const reading = (overrides: Partial<CollectionReading>): CollectionReading => ({
  action: 'ANSWER',
  confidence: 0.9,
  operation: null,
  values: {},
  ...overrides,
});
const decision = (overrides: Partial<ConfirmationResult>): ConfirmationResult => ({
  decision: 'CONFIRM',
  confidence: 0.95,
  accepted: true,
  reason: '',
  values: {},
  operation: null,
  fallback_reason: null,
  ...overrides,
});

/** The patch every finished transaction has, with its status. */
const finished = (transaction: ActiveTransaction, status: string) => ({
  active_transaction: null,
  pending_tool_call: null,
  confirmation_required: false,
  transaction_status: status,
  next_state: null,
  last_transaction: expect.objectContaining({
    transaction_id: transaction.transaction_id,
    status,
    finished_turn: 4,
  }),
  operation_results: {
    [transaction.transaction_id]: expect.objectContaining({ tool_name: transaction.tool_name, status }),
  },
});

describe('transaction state machine', () => {
  it('has a transition for every reply the models can give, in each waiting status', () => {
    expect(Object.keys(TRANSITIONS.COLLECTING_PARAMETERS).sort()).toEqual([
      'ABANDON',
      'ANSWER',
      'OTHER',
      'REPLACE',
    ]);
    expect(Object.keys(TRANSITIONS.AWAITING_CONFIRMATION).sort()).toEqual([
      'CONFIRM',
      'CORRECT',
      'OTHER',
      'REJECT',
      'REPLACE',
    ]);
  });

  describe('begin: the agent’s model called a transactional tool', () => {
    it('asks for what is missing, with the payload base on every event', () => {
      const { patch, events } = drive(begin(turnOf(), 'orders_agent', 'cancelar_pedido', {}, []));
      expect(patch).toMatchObject({
        transaction_status: 'COLLECTING_PARAMETERS',
        next_state: 'COLLECTING_ORDER_PARAMETERS',
        missing_parameters: ['order_id'],
        answer: 'Para seguir com o cancelamento do pedido, preciso de: o número do pedido.',
        active_transaction: {
          transaction_id: 'id-1',
          status: 'COLLECTING_PARAMETERS',
          agent: 'orders_agent',
          state_domain: 'ORDER',
          intent: 'retail_order_cancel',
          started_turn: 4,
        },
        mcp_results: [
          expect.objectContaining({ collecting_parameters: true, missing_parameters: ['order_id'] }),
        ],
      });
      expect(events).toEqual([
        {
          name: 'IC.TRANSACTION_PARAMETERS_REQUIRED',
          transaction: { transaction_id: 'id-1', tool_name: 'cancelar_pedido', agent: 'orders_agent' },
          details: { missing_parameters: ['order_id'] },
        },
      ]);
    });

    it('with every value (the text’s patterns count), pre-validates and asks to confirm the exact call', () => {
      const rules = rulesOf({ patternValues: () => ({ order_id: '100231' }) });
      const { patch, names, requests } = drive(
        begin(turnOf({}, rules), 'orders_agent', 'cancelar_pedido', {}, []),
        world(),
      );
      expect(requests).toEqual([
        {
          purpose: 'pre_validation',
          tool_name: 'validar_cancelamento_pedido',
          arguments: { order_id: '100231' },
        },
      ]);
      expect(names).toEqual([
        'IC.TRANSACTION_PREVALIDATION_REQUESTED',
        'IC.TRANSACTION_PREVALIDATION_PASSED',
        'IC.TRANSACTION_CONFIRMATION_REQUIRED',
      ]);
      expect(patch).toMatchObject({
        transaction_status: 'AWAITING_CONFIRMATION',
        next_state: 'WAITING_ORDER_CONFIRMATION',
        confirmation_required: true,
        answer:
          'O pedido ainda não foi despachado. Confirma o cancelamento do pedido (pedido 100231)? Responda sim ou não.',
        pending_tool_call: {
          call_id: 'id-2',
          transaction_id: 'id-1',
          arguments: { order_id: '100231' },
          requested_turn: 4,
        },
        transaction_pre_validation: { tool_name: 'validar_cancelamento_pedido', ok: true, eligible: true },
        mcp_results: [expect.objectContaining({ tool_name: 'validar_cancelamento_pedido' })],
      });
    });

    it('ends OUT_OF_SCOPE when the pre-validation finds the operation ineligible', () => {
      const ineligible = toolResultOf({
        tool_name: 'validar_cancelamento_pedido',
        result: { eligible: false, reason: 'shipped', message: 'O pedido já foi despachado.' },
      });
      const { patch, names, events } = drive(
        begin(turnOf(), 'orders_agent', 'cancelar_pedido', { order_id: '100232' }, []),
        { call: () => ineligible },
      );
      expect(names).toEqual([
        'IC.TRANSACTION_PREVALIDATION_REQUESTED',
        'IC.TRANSACTION_PREVALIDATION_REJECTED',
      ]);
      expect(events[1].details).toEqual({ validator: 'validar_cancelamento_pedido', reason: 'shipped' });
      expect(patch).toMatchObject({
        ...finished({ ...collecting, transaction_id: 'id-1' }, 'OUT_OF_SCOPE'),
        answer: 'Não é possível seguir com o cancelamento do pedido: O pedido já foi despachado.',
        transaction_pre_validation: { eligible: false, reason: 'shipped' },
      });
    });

    it('ends FAILED when the pre-validation fails and the tool does not fail open', () => {
      const down = toolResultOf({ ok: false, error: 'MCP Tool Router unavailable', result: null });
      const { patch, names, events } = drive(
        begin(turnOf(), 'orders_agent', 'cancelar_pedido', { order_id: '100231' }, []),
        { call: () => down },
      );
      expect(names).toEqual(['IC.TRANSACTION_PREVALIDATION_REQUESTED', 'IC.TRANSACTION_FAILED']);
      expect(events[1].details).toEqual({ stage: 'pre_validation', error: 'MCP Tool Router unavailable' });
      expect(patch).toMatchObject(finished({ ...collecting, transaction_id: 'id-1' }, 'FAILED'));
    });

    it('goes on to the confirmation when a pre-validation that fails open fails', () => {
      const failOpen: ToolConfig = {
        ...tools.cancelar_pedido,
        pre_validation: { tool: 'validar_cancelamento_pedido', fail_open: true },
      };
      const rules = rulesOf({ tool: (name) => (name === 'cancelar_pedido' ? failOpen : tools[name]) });
      const { patch, names } = drive(
        begin(turnOf({}, rules), 'orders_agent', 'cancelar_pedido', { order_id: '100231' }, []),
        { call: () => toolResultOf({ ok: false, error: 'timeout' }) },
      );
      expect(names).toEqual([
        'IC.TRANSACTION_PREVALIDATION_REQUESTED',
        'IC.TRANSACTION_CONFIRMATION_REQUIRED',
      ]);
      expect(patch).toMatchObject({
        transaction_status: 'AWAITING_CONFIRMATION',
        answer: 'Confirma o cancelamento do pedido (pedido 100231)? Responda sim ou não.',
      });
    });

    it('runs the call at once, with its idempotency key, when no confirmation is required', () => {
      const rules = rulesOf({ confirmationRequired: () => false });
      const { patch, names, requests } = drive(
        begin(turnOf({}, rules), 'orders_agent', 'cancelar_pedido', { order_id: '100231' }, []),
        world(),
      );
      const call = {
        call_id: 'id-2',
        transaction_id: 'id-1',
        tool_name: 'cancelar_pedido',
        server: 'retail',
      };
      expect(requests[1]).toEqual({
        purpose: 'execution',
        pending: { ...call, arguments: { order_id: '100231' }, requested_turn: 4 },
        idempotency_key: idempotencyKey('acme:s1', { ...call, arguments: {}, requested_turn: 4 }),
      });
      expect(names).toEqual([
        'IC.TRANSACTION_PREVALIDATION_REQUESTED',
        'IC.TRANSACTION_PREVALIDATION_PASSED',
        'IC.TRANSACTION_EXECUTED',
      ]);
      expect(patch).toMatchObject({ transaction_status: 'COMPLETED', answer: 'Pedido cancelado.' });
      expect(patch.mcp_results).toHaveLength(2);
    });

    it('ends FAILED without any call when the tool cannot be prepared (tools off)', () => {
      const rules = rulesOf({
        prepare: (name) => ({
          ok: false,
          tool_name: name,
          server: 'retail',
          error: { code: 'mcp_disabled', message: 'MCP tools disabled' },
          arguments: {},
        }),
      });
      const earlier = toolResultOf();
      const { patch, events, requests } = drive(
        begin(turnOf({}, rules), 'orders_agent', 'cancelar_pedido', { order_id: '100231' }, [earlier]),
      );
      expect(requests).toEqual([]);
      expect(events.map((e) => [e.name, e.details])).toEqual([
        ['IC.TRANSACTION_FAILED', { stage: 'preparation', error: 'MCP tools disabled' }],
      ]);
      expect(patch).toMatchObject({
        ...finished({ ...collecting, transaction_id: 'id-1' }, 'FAILED'),
        answer: 'Não consegui concluir o cancelamento do pedido: MCP tools disabled',
        mcp_results: [earlier, expect.objectContaining({ ok: false, error: 'MCP tools disabled' })],
      });
    });

    it('a replacement takes the values of the fields both operations have, unless given anew', () => {
      const exchange = activeTransactionOf({
        tool_name: 'solicitar_troca',
        agent: 'support_agent',
        state_domain: 'SUPPORT',
        intent: 'retail_support_exchange_return',
        arguments: { order_id: '100233', reason: 'defeito', desired_item: 'azul' },
      });
      const { patch, events } = drive(
        begin(turnOf(), 'support_agent', 'solicitar_devolucao', { reason: 'não serviu' }, [], exchange),
      );
      expect(events[0]).toMatchObject({
        name: 'IC.TRANSACTION_REPLACED',
        details: {
          replaced_transaction_id: 'txn-1',
          replaced_tool_name: 'solicitar_troca',
          carried_over: ['order_id'],
        },
      });
      expect(patch.active_transaction).toMatchObject({
        tool_name: 'solicitar_devolucao',
        arguments: { order_id: '100233', reason: 'não serviu' },
        replaces: 'txn-1',
        carried_over: ['order_id'],
        intent: 'retail_support_exchange_return',
        status: 'AWAITING_CONFIRMATION',
      });
    });
  });

  describe('COLLECTING_PARAMETERS × the reply', () => {
    it.each(['ANSWER', 'OTHER'] as const)(
      '%s with the missing value goes on to the pre-validation',
      (action) => {
        const { patch, names } = drive(
          onParameters(turnOf(), collecting, reading({ action, values: { order_id: '100231' } })),
          world(),
        );
        expect(names[0]).toBe('IC.TRANSACTION_REPLY_CLASSIFIED');
        expect(patch).toMatchObject({
          transaction_status: 'AWAITING_CONFIRMATION',
          active_transaction: { transaction_id: 'txn-1', arguments: { order_id: '100231' }, attempts: 0 },
        });
      },
    );

    it('a reply without the value asks again, and gives up after max_attempts', () => {
      const step = onParameters(turnOf(), collecting, reading({ action: 'OTHER' }));
      const { patch, events } = drive(step);
      expect(events[0].details).toEqual({
        stage: 'collecting_parameters',
        action: 'OTHER',
        confidence: 0.9,
        operation: null,
      });
      expect(patch).toMatchObject({
        transaction_status: 'COLLECTING_PARAMETERS',
        answer:
          'Ainda preciso de o número do pedido para seguir com o cancelamento do pedido. Pode me informar?',
        active_transaction: { attempts: 1 },
      });
      const last = drive(onParameters(turnOf(), { ...collecting, attempts: 2 }, reading({})));
      expect(last.names).toEqual(['IC.TRANSACTION_REPLY_CLASSIFIED', 'IC.TRANSACTION_CANCELLED']);
      expect(last.events[1].details).toEqual({ source: 'max_attempts' });
      expect(last.patch).toMatchObject({
        ...finished(collecting, 'CANCELLED'),
        tool_policy_result: { action: 'cancelled_after_unclear_answers' },
      });
    });

    it('ABANDON ends the operation on this turn: nothing ran', () => {
      const { patch, names, events } = drive(
        onParameters(turnOf(), collecting, reading({ action: 'ABANDON' })),
      );
      expect(names).toEqual(['IC.TRANSACTION_REPLY_CLASSIFIED', 'IC.TRANSACTION_CANCELLED']);
      expect(events[1].details).toEqual({ source: 'customer', stage: 'collecting_parameters' });
      expect(patch).toMatchObject({
        ...finished(collecting, 'CANCELLED'),
        last_transaction: expect.objectContaining({ interruption: 'explicit_abandonment' }),
        answer: 'Tudo bem, o cancelamento do pedido não foi realizado. Posso ajudar em algo mais?',
      });
    });

    it('REPLACE ends this operation unrun and starts the named one', () => {
      const exchange = { ...collecting, tool_name: 'solicitar_troca', agent: 'support_agent' as const };
      const { patch, names } = drive(
        onParameters(
          turnOf(),
          { ...exchange, arguments: { order_id: '100233' }, missing_parameters: ['reason'] },
          reading({ action: 'REPLACE', operation: 'solicitar_devolucao', values: { reason: 'não serviu' } }),
        ),
      );
      expect(names).toEqual([
        'IC.TRANSACTION_REPLY_CLASSIFIED',
        'IC.TRANSACTION_INTERRUPTED',
        'IC.TRANSACTION_REPLACED',
        'IC.TRANSACTION_CONFIRMATION_REQUIRED',
      ]);
      expect(patch).toMatchObject({
        last_transaction: { transaction_id: 'txn-1', status: 'CANCELLED', interruption: 'replaced' },
        operation_results: { 'txn-1': expect.objectContaining({ status: 'CANCELLED' }) },
        active_transaction: {
          tool_name: 'solicitar_devolucao',
          agent: 'support_agent',
          replaces: 'txn-1',
          arguments: { order_id: '100233', reason: 'não serviu' },
        },
      });
    });

    it('REPLACE without an operation reads as an answer', () => {
      const { patch, names } = drive(onParameters(turnOf(), collecting, reading({ action: 'REPLACE' })));
      expect(names).toEqual(['IC.TRANSACTION_REPLY_CLASSIFIED', 'IC.TRANSACTION_PARAMETERS_REQUIRED']);
      expect(patch.active_transaction).toMatchObject({ transaction_id: 'txn-1', attempts: 1 });
    });
  });

  describe('AWAITING_CONFIRMATION × the reply', () => {
    it('CONFIRM runs the pending call once and the agent’s model explains the result', () => {
      const { patch, names, events, requests } = drive(
        onConfirmation(turnOf(), waiting, pending, decision({})),
        world(),
      );
      expect(requests).toEqual([
        { purpose: 'execution', pending, idempotency_key: idempotencyKey('acme:s1', pending) },
      ]);
      expect(names).toEqual(['IC.TRANSACTION_CONFIRMATION_CLASSIFIED', 'IC.TRANSACTION_EXECUTED']);
      expect(events[0].details).toEqual({
        decision: 'CONFIRM',
        confidence: 0.95,
        accepted: true,
        fallback_reason: null,
      });
      expect(events[1].details).toEqual({
        stage: 'execution',
        ok: true,
        error: null,
        idempotent_replay: false,
      });
      const evidence = {
        transaction_id: 'txn-1',
        call_id: 'call-1',
        status: 'COMPLETED',
        ok: true,
        idempotency_key: idempotencyKey('acme:s1', pending),
        requested_turn: 3,
        executed_turn: 4,
        executed_at: NOW,
      };
      expect(patch).toMatchObject({
        ...finished(waiting, 'COMPLETED'),
        answer: 'Pedido cancelado.',
        confirmation_received: true,
        last_transaction_evidence: evidence,
        relevant_transaction_evidence: [expect.objectContaining(evidence)],
        mcp_results: [executedOk],
      });
      expect(patch.transaction_evidence).toHaveLength(1);
    });

    it('a failed call ends FAILED; the template answers when the model cannot', () => {
      const down = toolResultOf({
        tool_name: 'cancelar_pedido',
        ok: false,
        error: 'MCP Tool Router unavailable',
      });
      const { patch, names, events } = drive(
        onConfirmation(turnOf(), waiting, pending, decision({})),
        world(down, null),
      );
      expect(names).toEqual(['IC.TRANSACTION_CONFIRMATION_CLASSIFIED', 'IC.TRANSACTION_FAILED']);
      expect(events[1].details).toMatchObject({ stage: 'execution', ok: false });
      expect(patch).toMatchObject({
        ...finished(waiting, 'FAILED'),
        answer:
          'Não consegui concluir o cancelamento do pedido: o sistema responsável está indisponível no momento. Nada foi alterado; tente novamente em instantes.',
      });
    });

    it('a call that ran but whose result the tool rails withheld is COMPLETED and reported as executed', () => {
      const withheld = toolResultOf({
        ok: false,
        error: TOOL_RESULT_WITHHELD,
        result: { withheld_by: ['PINJ'], executed: true },
      });
      const { patch, events } = drive(
        onConfirmation(turnOf(), waiting, pending, decision({})),
        world(withheld),
      );
      expect(events[1]).toMatchObject({ name: 'IC.TRANSACTION_EXECUTED', details: { ok: false } });
      expect(patch).toMatchObject(finished(waiting, 'COMPLETED'));
    });

    it('REJECT cancels: nothing runs', () => {
      const { patch, names, events, requests } = drive(
        onConfirmation(turnOf(), waiting, pending, decision({ decision: 'REJECT' })),
      );
      expect(requests).toEqual([]);
      expect(names).toEqual(['IC.TRANSACTION_CONFIRMATION_CLASSIFIED', 'IC.TRANSACTION_CANCELLED']);
      expect(events[1].details).toEqual({ source: 'customer' });
      expect(patch).toMatchObject({
        ...finished(waiting, 'CANCELLED'),
        confirmation_received: false,
        tool_policy_result: { action: 'cancelled_by_user' },
      });
    });

    it('CORRECT keeps the transaction with the new value, validated and asked again', () => {
      const { patch, names, events, requests } = drive(
        onConfirmation(
          turnOf(),
          waiting,
          pending,
          decision({ decision: 'CORRECT', values: { order_id: '100239' } }),
        ),
        world(),
      );
      expect(names).toEqual([
        'IC.TRANSACTION_CONFIRMATION_CLASSIFIED',
        'IC.TRANSACTION_CORRECTED',
        'IC.TRANSACTION_PREVALIDATION_REQUESTED',
        'IC.TRANSACTION_PREVALIDATION_PASSED',
        'IC.TRANSACTION_CONFIRMATION_REQUIRED',
      ]);
      expect(events[1].details).toEqual({ fields: ['order_id'] });
      expect(requests[0]).toMatchObject({ arguments: { order_id: '100239' } });
      expect(patch).toMatchObject({
        active_transaction: { transaction_id: 'txn-1', arguments: { order_id: '100239' } },
        pending_tool_call: { call_id: 'id-1', arguments: { order_id: '100239' }, requested_turn: 4 },
      });
    });

    it('REPLACE ends this operation unrun and starts the named one', () => {
      const { patch, names } = drive(
        onConfirmation(
          turnOf(),
          waiting,
          pending,
          decision({ decision: 'REPLACE', operation: 'solicitar_devolucao', values: { reason: 'quebrou' } }),
        ),
      );
      expect(names).toEqual([
        'IC.TRANSACTION_CONFIRMATION_CLASSIFIED',
        'IC.TRANSACTION_INTERRUPTED',
        'IC.TRANSACTION_REPLACED',
        'IC.TRANSACTION_CONFIRMATION_REQUIRED',
      ]);
      expect(patch).toMatchObject({
        last_transaction: { transaction_id: 'txn-1', status: 'CANCELLED', interruption: 'replaced' },
        active_transaction: {
          tool_name: 'solicitar_devolucao',
          arguments: { order_id: '100231', reason: 'quebrou' },
        },
      });
    });

    it.each([
      ['OTHER', null],
      ['REPLACE', null],
    ] as const)('%s (operation %s) asks again, and gives up after max_attempts', (label, operation) => {
      const unclear = decision({
        decision: label,
        operation,
        accepted: false,
        fallback_reason: 'below_threshold',
      });
      const { patch, names } = drive(onConfirmation(turnOf(), waiting, pending, unclear));
      expect(names).toEqual(['IC.TRANSACTION_CONFIRMATION_CLASSIFIED']);
      expect(patch).toEqual({
        answer:
          'Só para confirmar: deseja seguir com o cancelamento do pedido (pedido 100231)? Responda sim ou não.',
        active_transaction: { ...waiting, attempts: 1, updated_turn: 4 },
        pending_tool_call: pending,
        transaction_status: 'AWAITING_CONFIRMATION',
        confirmation_required: true,
        confirmation_received: false,
        next_state: 'WAITING_ORDER_CONFIRMATION',
        mcp_results: [],
        tool_policy_result: { action: 'confirmation_unclear', tool_name: 'cancelar_pedido', decision: label },
      });
      const last = drive(onConfirmation(turnOf(), { ...waiting, attempts: 2 }, pending, unclear));
      expect(last.names).toEqual(['IC.TRANSACTION_CONFIRMATION_CLASSIFIED', 'IC.TRANSACTION_CANCELLED']);
      expect(last.patch).toMatchObject(finished(waiting, 'CANCELLED'));
    });

    it('without its pending call (a checkpoint that lost it) validates and asks again', () => {
      const { patch, names } = drive(confirmationLost(turnOf(), waiting), world());
      expect(names[0]).toBe('IC.TRANSACTION_PREVALIDATION_REQUESTED');
      expect(patch).toMatchObject({
        transaction_status: 'AWAITING_CONFIRMATION',
        pending_tool_call: { transaction_id: 'txn-1', requested_turn: 4 },
      });
    });
  });

  describe('the conversation goes elsewhere', () => {
    it.each(['intent_shift', 'routed_to_another_agent'] as const)(
      '%s ends the operation unrun, whatever its status',
      (reason) => {
        for (const transaction of [collecting, waiting]) {
          const { patch, events } = interrupted(stateOf({ operation_results: {} }), transaction, reason);
          expect(events.map((e) => [e.name, e.details])).toEqual([
            ['IC.TRANSACTION_INTERRUPTED', { reason }],
          ]);
          expect(patch).toMatchObject({
            ...finished(transaction, 'CANCELLED'),
            last_transaction: expect.objectContaining({ interruption: reason }),
            tool_policy_result: { action: 'interrupted', tool_name: 'cancelar_pedido', reason },
          });
        }
      },
    );

    it.each(['human_handoff', 'end_session'] as const)(
      'a %s ends the waiting operation the same way, and says why in transaction_interruption',
      (reason) => {
        const { patch, events } = sessionTookOver(
          stateOf({ active_transaction: waiting, pending_tool_call: pending }),
          reason,
        );
        expect(events.map((e) => [e.name, e.details])).toEqual([['IC.TRANSACTION_INTERRUPTED', { reason }]]);
        expect(patch).toMatchObject({
          ...finished(waiting, 'CANCELLED'),
          last_transaction: expect.objectContaining({ interruption: reason }),
          transaction_interruption: reason,
        });
      },
    );

    it('a session control with nothing pending changes nothing; a pending state without its operation is cleared', () => {
      expect(sessionTookOver(stateOf(), 'human_handoff')).toEqual({ kind: 'done', events: [], patch: {} });
      const orphan = stateOf({ next_state: 'COLLECTING_BILLING_PARAMETERS', missing_parameters: ['valor'] });
      const { patch, events } = sessionTookOver(orphan, 'end_session');
      expect(events).toEqual([]);
      expect(patch).toMatchObject({
        missing_parameters: [],
        pending_tool_call: null,
        transaction_status: 'CANCELLED',
        transaction_interruption: 'end_session',
      });
      expect(patch).not.toHaveProperty('last_transaction');
    });

    it('keeps the newest finished operations only', () => {
      const earlier = Object.fromEntries(
        Array.from({ length: 20 }, (_, i) => [
          `old-${i}`,
          {
            tool_name: 'cancelar_pedido',
            agent: 'orders_agent' as const,
            intent: null,
            status: 'COMPLETED' as const,
            arguments: {},
            finished_turn: i,
          },
        ]),
      );
      const { patch } = interrupted(stateOf({ operation_results: earlier }), waiting, 'intent_shift');
      const kept = Object.keys(patch.operation_results ?? {});
      expect(kept).toHaveLength(20);
      expect(kept[0]).toBe('old-1');
      expect(kept[19]).toBe('txn-1');
    });
  });
});
