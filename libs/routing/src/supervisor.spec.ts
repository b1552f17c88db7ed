import { EventEmitter2 } from '@nestjs/event-emitter';
import { join } from 'node:path';
import { loadYamlFile, routingFileSchema, toolsFileSchema } from '@agent/config';
import type { DomainAgentNode, PendingTopic, TurnState } from '@agent/contracts';
import { EventBusService } from '@agent/observability';
import { FakeLlmServer } from '@agent/testing/fake-llm';
import {
  activeTransactionOf,
  decisionOf,
  pendingToolCallOf,
  toolResultOf,
  turnStateOf,
} from '@agent/testing/states';
import { createTestLlm } from '@agent/testing/test-llm';
import { IntentCatalogue } from './intent-catalogue';
import { AgentRunner, TurnSupervisor } from './supervisor';

const configDir = join(__dirname, '..', '..', '..', 'config');
const routing = loadYamlFile(join(configDir, 'routing.yaml'), routingFileSchema);
const catalogue = new IntentCatalogue(routing, loadYamlFile(join(configDir, 'tools.yaml'), toolsFileSchema));

let fake: FakeLlmServer;
beforeAll(async () => {
  fake = await FakeLlmServer.start();
});
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

/** The planner's answer to the next plan call. */
const answer = (content: string) => fake.script({ model: 'router', times: 1, reply: { content } });
/** The next plan call fails: HTTP 503, or a timeout. */
const fail = (how: 'http' | 'timeout' = 'http') =>
  fake.script({ model: 'router', times: 1, reply: how === 'http' ? { status: 503 } : { delayMs: 1500 } });
/** What the planner was sent in its `index`-th call. */
const sentPayload = (index = 0) =>
  JSON.parse(fake.requests[index].messages[1].content ?? '') as Record<string, unknown>;

function setup(options: { llmEnabled?: boolean; maxIntents?: number } = {}) {
  const events = new EventBusService(new EventEmitter2());
  const emit = jest.spyOn(events, 'emit');
  const supervisor = new TurnSupervisor(createTestLlm(fake).llm, catalogue, events, {
    profile: 'router',
    threshold: 0.65,
    fallbackAgent: 'billing_agent',
    settings: { ...routing.supervisor, max_intents: options.maxIntents ?? routing.supervisor.max_intents },
    llmEnabled: options.llmEnabled ?? true,
  });
  const plan = (intents: { intent: string; confidence: number }[]) => answer(JSON.stringify({ intents }));
  const calls: { node: DomainAgentNode; state: TurnState }[] = [];
  const runAgent = jest.fn<ReturnType<AgentRunner>, Parameters<AgentRunner>>((node, state) => {
    calls.push({ node, state });
    return Promise.resolve({ answer: `${node} answers` });
  });
  return { supervisor, plan, runAgent, calls, emit };
}

const turn = (text: string, extra: Partial<TurnState> = {}): TurnState =>
  turnStateOf({ user_text: text, sanitized_input: text, turn: 3, ...extra });

const waitingTransaction = activeTransactionOf({ arguments: { order_id: '77' } });
const transactionFields: Partial<TurnState> = {
  active_transaction: waitingTransaction,
  pending_tool_call: pendingToolCallOf(waitingTransaction),
  selected_tool_call: { tool_name: 'cancelar_pedido', arguments: { order_id: '77' } },
  missing_parameters: ['reason'],
  confirmation_required: true,
  confirmation_received: false,
  transaction_status: 'AWAITING_CONFIRMATION',
};

describe('TurnSupervisor', () => {
  it('runs every planned topic on an isolated copy and composes one answer', async () => {
    const { supervisor, plan, runAgent, calls, emit } = setup();
    plan([
      { intent: 'billing_invoice_explanation', confidence: 0.9 },
      { intent: 'product_services_information', confidence: 0.8 },
    ]);
    const state = turn('quero ver minha fatura e meu plano', {
      ...transactionFields,
      mcp_results: [toolResultOf({ tool_name: 'from_an_earlier_turn' })],
      pending_topics: [],
    });
    const patch = await supervisor.run(state, runAgent);

    expect(runAgent).toHaveBeenCalledTimes(2);
    expect(calls.map((c) => c.node)).toEqual(['billing_agent', 'product_agent']);
    for (const { state: isolated } of calls) {
      expect(isolated).toMatchObject({
        active_transaction: null,
        pending_tool_call: null,
        selected_tool_call: null,
        missing_parameters: [],
        confirmation_required: false,
        confirmation_received: false,
        next_state: null,
        transaction_status: null,
        mcp_results: [],
        sanitized_input: 'quero ver minha fatura e meu plano',
      });
    }
    expect(calls[0].state).toMatchObject({
      intent: 'billing_invoice_explanation',
      domain: 'telecom',
      mcp_tools: ['consultar_fatura', 'consultar_pagamentos'],
    });
    expect(calls[1].state.mcp_tools).toEqual(['consultar_plano', 'listar_servicos']);
    // The conversation's own state is untouched.
    expect(state.active_transaction).toEqual(waitingTransaction);

    expect(patch).toMatchObject({
      answer: 'billing_agent answers\n\nproduct_agent answers',
      intent: 'billing_invoice_explanation',
      active_agent: 'billing_agent',
      supervisor_plan: { source: 'llm', held_by_state_policy: false, llm_rejection: null },
      supervisor_results: [
        { intent: 'billing_invoice_explanation', agent: 'billing_agent', status: 'completed' },
        { intent: 'product_services_information', agent: 'product_agent', status: 'completed' },
      ],
      agent_responses: [
        { agent: 'billing_agent', intent: 'billing_invoice_explanation', answer: 'billing_agent answers' },
        { agent: 'product_agent', intent: 'product_services_information', answer: 'product_agent answers' },
      ],
      multi_intent_plan: { execution_mode: 'supervisor', status: 'completed' },
      pending_topics: [],
    });
    expect(patch).not.toHaveProperty('transaction_interruption');
    expect(emit).toHaveBeenCalledWith(
      'router.supervisor.plan',
      expect.objectContaining({
        source: 'llm',
        intents: ['billing_invoice_explanation', 'product_services_information'],
      }),
    );
  });

  it('drops unknown, low-confidence, duplicate and extra intents from the plan and records why', async () => {
    const { supervisor, plan, runAgent } = setup({ maxIntents: 2 });
    plan([
      { intent: 'weather', confidence: 0.99 },
      { intent: 'retail_order_tracking', confidence: 0.9 },
      { intent: 'retail_order_tracking', confidence: 0.9 },
      { intent: 'billing_invoice_explanation', confidence: 0.2 },
      { intent: 'product_services_information', confidence: 0.9 },
      { intent: 'retail_support_exchange_return', confidence: 0.9 },
    ]);
    const patch = await supervisor.run(turn('várias coisas'), runAgent);
    expect(runAgent.mock.calls.map(([node]) => node)).toEqual(['orders_agent', 'product_agent']);
    expect(patch.supervisor_plan?.rejected).toEqual([
      { intent: 'weather', confidence: 0.99, reason: 'unknown_intent' },
      { intent: 'retail_order_tracking', confidence: 0.9, reason: 'duplicate' },
      { intent: 'billing_invoice_explanation', confidence: 0.2, reason: 'below_threshold' },
      { intent: 'retail_support_exchange_return', confidence: 0.9, reason: 'over_limit' },
    ]);
  });

  it('falls back to the keyword stage when the plan is invalid, fails or accepts nothing', async () => {
    const invalid = setup();
    answer('{"intents": "billing"}');
    const patch = await invalid.supervisor.run(turn('onde está meu pedido?'), invalid.runAgent);
    expect(invalid.runAgent.mock.calls.map(([node]) => node)).toEqual(['orders_agent']);
    expect(patch).toMatchObject({
      intent: 'retail_order_tracking',
      supervisor_plan: { source: 'keyword', llm_rejection: { reason: 'invalid_output' } },
    });

    const timeout = setup();
    fail('timeout');
    expect(await timeout.supervisor.run(turn('minha fatura'), timeout.runAgent)).toMatchObject({
      intent: 'billing_invoice_explanation',
      supervisor_plan: { source: 'keyword', llm_rejection: { reason: 'timeout' } },
    });

    const empty = setup();
    empty.plan([{ intent: 'weather', confidence: 0.9 }]);
    expect(await empty.supervisor.run(turn('quero trocar o produto'), empty.runAgent)).toMatchObject({
      intent: 'retail_support_exchange_return',
      supervisor_plan: { source: 'keyword', llm_rejection: { reason: 'empty_plan' } },
    });

    const disabled = setup({ llmEnabled: false });
    expect(await disabled.supervisor.run(turn('meu plano'), disabled.runAgent)).toMatchObject({
      intent: 'product_services_information',
      supervisor_plan: { source: 'keyword', llm_rejection: { reason: 'disabled' } },
    });
    expect(fake.requests).toHaveLength(3);
  });

  it('falls back to the fallback agent when neither the plan nor a keyword decides', async () => {
    const { supervisor, runAgent } = setup();
    fail();
    const patch = await supervisor.run(turn('bom dia'), runAgent);
    expect(runAgent.mock.calls.map(([node]) => node)).toEqual(['billing_agent']);
    expect(patch).toMatchObject({
      intent: 'fallback',
      active_agent: 'billing_agent',
      mcp_tools: [],
      answer: 'billing_agent answers',
      supervisor_plan: { source: 'fallback' },
    });
  });

  it('runs the first transactional intent, defers the next one and says how it will be offered', async () => {
    const { supervisor, plan, runAgent } = setup();
    runAgent.mockImplementation((node) =>
      Promise.resolve(
        node === 'orders_agent'
          ? {
              answer: 'Confirma o cancelamento do pedido 77?',
              next_state: 'WAITING_ORDER_CONFIRMATION',
              active_transaction: waitingTransaction,
              confirmation_required: true,
            }
          : { answer: `${node} answers` },
      ),
    );
    plan([
      { intent: 'retail_order_cancel', confidence: 0.9 },
      { intent: 'billing_invoice_explanation', confidence: 0.9 },
      { intent: 'retail_support_exchange_return', confidence: 0.9 },
    ]);
    const text = 'cancela o pedido 77, mostra a fatura e quero trocar o fone';
    const patch = await supervisor.run(turn(text), runAgent);
    expect(runAgent.mock.calls.map(([node]) => node)).toEqual(['orders_agent', 'billing_agent']);
    expect(patch.answer).toBe(
      [
        'billing_agent answers',
        'Confirma o cancelamento do pedido 77?',
        'Também recebi seu pedido sobre troca ou devolução. Como é uma operação que precisa da sua confirmação, ' +
          'vou tratar dela depois desta: quando quiser seguir, é só me dizer.',
      ].join('\n\n'),
    );
    expect(patch).toMatchObject({
      intent: 'retail_order_cancel',
      active_agent: 'orders_agent',
      next_state: 'WAITING_ORDER_CONFIRMATION',
      active_transaction: waitingTransaction,
      confirmation_required: true,
      pending_topics: [
        {
          intent: 'retail_support_exchange_return',
          agent: 'support_agent',
          disposition: 'defer',
          status: 'deferred',
          reason: 'transactional_beyond_first',
          source_text: text,
          created_turn: 3,
        },
      ],
    });
    const operations = patch.multi_intent_plan?.operations ?? [];
    expect(operations.map((o) => [o.intent, o.disposition, o.status])).toEqual([
      ['retail_order_cancel', 'execute', 'completed'],
      ['billing_invoice_explanation', 'execute', 'completed'],
      ['retail_support_exchange_return', 'defer', 'deferred'],
    ]);
  });

  const deferred: PendingTopic = {
    operation_id: 'op-3',
    plan_id: 'sup-earlier',
    intent: 'retail_support_exchange_return',
    agent: 'support_agent',
    domain: 'retail',
    tools: ['consultar_pedido', 'solicitar_troca', 'solicitar_devolucao'],
    label: 'troca ou devolução',
    source_text: 'quero trocar o fone',
    disposition: 'defer',
    status: 'deferred',
    reason: 'transactional_beyond_first',
    created_turn: 1,
  };

  it('offers a deferred topic once on a later turn with no pending transaction', async () => {
    const { supervisor, plan, runAgent } = setup();
    plan([{ intent: 'billing_invoice_explanation', confidence: 0.9 }]);
    const patch = await supervisor.run(turn('e a fatura?', { pending_topics: [deferred] }), runAgent);
    expect(patch.answer).toBe(
      'billing_agent answers\n\nAinda está pendente: troca ou devolução. Quer que eu siga com isso agora?',
    );
    expect(patch.pending_topics).toEqual([{ ...deferred, status: 'offered' }]);
    const payload = sentPayload();
    expect(payload.pending_topics).toEqual([
      {
        intent: 'retail_support_exchange_return',
        label: 'troca ou devolução',
        source_text: 'quero trocar o fone',
      },
    ]);

    plan([{ intent: 'billing_invoice_explanation', confidence: 0.9 }]);
    const again = await supervisor.run(
      turn('e o vencimento?', { pending_topics: patch.pending_topics }),
      runAgent,
    );
    expect(again.answer).toBe('billing_agent answers');
  });

  it('does not offer a deferred topic while a transaction waits for the user', async () => {
    const { supervisor, plan, runAgent } = setup();
    runAgent.mockResolvedValueOnce({ answer: 'Confirma?', next_state: 'WAITING_ORDER_CONFIRMATION' });
    plan([{ intent: 'retail_order_cancel', confidence: 0.9 }]);
    const patch = await supervisor.run(turn('cancela o pedido 9', { pending_topics: [deferred] }), runAgent);
    expect(patch.answer).toBe('Confirma?');
    expect(patch.pending_topics).toEqual([deferred]);
  });

  it('takes up a pending topic when the plan names it, with the original request', async () => {
    const { supervisor, plan, runAgent, calls } = setup();
    plan([{ intent: 'retail_support_exchange_return', confidence: 0.9 }]);
    const patch = await supervisor.run(
      turn('sim, pode seguir', { pending_topics: [{ ...deferred, status: 'offered' }] }),
      runAgent,
    );
    expect(calls[0].node).toBe('support_agent');
    expect(calls[0].state.sanitized_input).toBe('quero trocar o fone\nsim, pode seguir');
    expect(patch.pending_topics).toEqual([]);
    expect(patch.supervisor_plan?.intents[0]).toMatchObject({ resumed: true });
  });

  it('ignores stored pending topics that name a retired intent', async () => {
    const { supervisor, plan, runAgent } = setup();
    plan([{ intent: 'billing_invoice_explanation', confidence: 0.9 }]);
    const patch = await supervisor.run(
      turn('fatura', { pending_topics: [{ ...deferred, intent: 'retired_intent' }] }),
      runAgent,
    );
    expect(patch.pending_topics).toEqual([]);
    expect(patch.answer).toBe('billing_agent answers');
  });

  describe('with a pending transaction (state policy)', () => {
    const waiting = (text: string): TurnState =>
      turn(text, {
        ...transactionFields,
        next_state: 'WAITING_ORDER_CONFIRMATION',
        intent: 'supervisor',
        active_agent: 'supervisor_agent',
        route_decision: decisionOf({
          route: 'supervisor_agent',
          agent: 'supervisor_agent',
          intent: 'supervisor',
          method: 'supervisor',
          metadata: { previous_agent: 'orders_agent', previous_intent: 'retail_order_cancel' },
        }),
      });

    it('keeps the transaction with its agent on the real state and defers other planned topics', async () => {
      const { supervisor, plan, runAgent } = setup();
      runAgent.mockResolvedValueOnce({ answer: 'Pedido 77 cancelado.', next_state: null });
      plan([
        { intent: 'retail_order_cancel', confidence: 0.9 },
        { intent: 'billing_invoice_explanation', confidence: 0.9 },
      ]);
      const patch = await supervisor.run(waiting('sim, e depois a fatura'), runAgent);
      expect(runAgent).toHaveBeenCalledTimes(1);
      const [node, state] = runAgent.mock.calls[0];
      expect(node).toBe('orders_agent');
      expect(state).toMatchObject({
        active_transaction: waitingTransaction,
        confirmation_required: true,
        intent: 'state:WAITING_ORDER_CONFIRMATION',
        mcp_tools: ['consultar_pedido', 'cancelar_pedido'],
      });
      expect(patch).toMatchObject({
        answer: 'Pedido 77 cancelado.',
        intent: 'state:WAITING_ORDER_CONFIRMATION',
        active_agent: 'orders_agent',
        next_state: null,
        supervisor_plan: { held_by_state_policy: true, state_policy: 'WAITING_ORDER_CONFIRMATION' },
        pending_topics: [{ intent: 'billing_invoice_explanation', reason: 'transaction_pending' }],
      });
      const payload = sentPayload();
      expect(payload.transaction_context).toMatchObject({
        state: 'WAITING_ORDER_CONFIRMATION',
        intent: 'retail_order_cancel',
      });
      expect(payload.session_context).toEqual({
        active_agent: 'orders_agent',
        previous_intent: 'retail_order_cancel',
      });
    });

    it('holds when the plan fails, keeping the pending state if the agent leaves it', async () => {
      const { supervisor, runAgent } = setup();
      fail();
      const patch = await supervisor.run(waiting('pedido'), runAgent);
      expect(runAgent.mock.calls.map(([node]) => node)).toEqual(['orders_agent']);
      expect(patch).toMatchObject({
        next_state: 'WAITING_ORDER_CONFIRMATION',
        supervisor_plan: { source: 'keyword', held_by_state_policy: true },
      });
    });

    it('interrupts the transaction when the plan names only other intents', async () => {
      const { supervisor, plan, runAgent, calls } = setup();
      plan([{ intent: 'product_services_information', confidence: 0.96 }]);
      const patch = await supervisor.run(waiting('quais são meus serviços?'), runAgent);
      expect(calls[0].node).toBe('product_agent');
      expect(calls[0].state.active_transaction).toBeNull();
      expect(patch).toMatchObject({
        transaction_interruption: 'intent_shift',
        next_state: null,
        intent: 'product_services_information',
        supervisor_plan: { held_by_state_policy: false },
      });
    });
  });

  it('reports a failing topic and still answers with the others; rethrows when every topic fails', async () => {
    const { supervisor, plan, runAgent } = setup();
    runAgent.mockRejectedValueOnce(new Error('agent crashed'));
    plan([
      { intent: 'billing_invoice_explanation', confidence: 0.9 },
      { intent: 'product_services_information', confidence: 0.9 },
    ]);
    const patch = await supervisor.run(turn('fatura e plano'), runAgent);
    expect(patch.answer).toBe('product_agent answers');
    expect(patch.supervisor_results).toEqual([
      expect.objectContaining({ status: 'failed', error: 'agent crashed', answer: null }),
      expect.objectContaining({ status: 'completed' }),
    ]);
    expect(patch.multi_intent_plan).toMatchObject({ status: 'partial' });

    runAgent.mockRejectedValueOnce(new Error('down'));
    plan([{ intent: 'billing_invoice_explanation', confidence: 0.9 }]);
    await expect(supervisor.run(turn('fatura'), runAgent)).rejects.toThrow('down');
  });
});
