import { Test, TestingModule } from '@nestjs/testing';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { join } from 'node:path';
import { AppConfigModule } from '@agent/config';
import type { DomainAgentNode, RouteDecision, TurnState } from '@agent/contracts';
import { LlmModule } from '@agent/llm';
import { ObservabilityModule } from '@agent/observability';
import { RoutingModule, RoutingService } from '@agent/routing';
import { FakeChatRequest, FakeLlmServer, FakeReply } from '../support/fake-llm';
import { activeTransactionOf, turnStateOf } from '../support/states';
import { REPO_ROOT, TEST_LLM_PROFILES } from '../support/test-app';
import { withEnv } from '../support/with-env';

/** The user message the router (or the supervisor planner) was asked about. */
function routedMessage(request: FakeChatRequest): string {
  const user = request.messages.filter((m) => m.role === 'user').pop();
  try {
    const payload = JSON.parse(user?.content ?? '') as { message?: unknown };
    return typeof payload.message === 'string' ? payload.message : '';
  } catch {
    return '';
  }
}

/** Compiles the router with its real dependencies and the shipped catalogue, env applied only while compiling. */
async function compileRouter(fake: FakeLlmServer, env: Record<string, string> = {}): Promise<TestingModule> {
  const applied: Record<string, string | undefined> = {
    LOG_LEVEL: 'silent',
    NODE_ENV: 'test',
    CONFIG_DIR: join(REPO_ROOT, 'config'),
    LLM_PROFILES_PATH: TEST_LLM_PROFILES,
    LLM_BASE_URL: fake.baseUrl,
    LLM_API_KEY: 'test-key',
    ROUTING_MODE: undefined,
    ENABLE_LLM_ROUTER: undefined,
    ...env,
  };
  return withEnv(applied, () =>
    Test.createTestingModule({
      imports: [AppConfigModule, ObservabilityModule, LlmModule, RoutingModule],
    }).compile(),
  );
}

interface Labelled {
  text: string;
  route: DomainAgentNode;
  intent: string;
  method: 'keyword' | 'llm' | 'fallback';
  /** What the fake router LLM answers for this message (messages the keyword stage settles never reach it). */
  llm?: FakeReply;
  /** Router model calls when it differs from the method's usual (none for keyword, one otherwise). */
  llmCalls?: number;
}

const CATALOGUE_CASES: Labelled[] = [
  // Portuguese, keyword stage
  {
    text: 'Minha fatura veio muito alta este mês',
    route: 'billing_agent',
    intent: 'billing_invoice_explanation',
    method: 'keyword',
  },
  {
    text: 'Preciso da segunda via do boleto',
    route: 'billing_agent',
    intent: 'billing_invoice_explanation',
    method: 'keyword',
  },
  {
    text: 'Quero contestar uma cobrança indevida',
    route: 'billing_agent',
    intent: 'billing_invoice_explanation',
    method: 'keyword',
  },
  {
    text: 'Qual é o meu plano atual?',
    route: 'product_agent',
    intent: 'product_services_information',
    method: 'keyword',
  },
  {
    text: 'O roaming internacional está ativo?',
    route: 'product_agent',
    intent: 'product_services_information',
    method: 'keyword',
  },
  {
    text: 'Quero cancelar o meu pedido 4521',
    route: 'orders_agent',
    intent: 'retail_order_cancel',
    method: 'keyword',
  },
  {
    text: 'Onde está minha encomenda?',
    route: 'orders_agent',
    intent: 'retail_order_tracking',
    method: 'keyword',
  },
  {
    text: 'A entrega está atrasada',
    route: 'orders_agent',
    intent: 'retail_order_tracking',
    method: 'keyword',
  },
  {
    text: 'Quero solicitar a troca do produto',
    route: 'support_agent',
    intent: 'retail_support_exchange_return',
    method: 'keyword',
  },
  {
    text: 'O produto chegou com defeito',
    route: 'support_agent',
    intent: 'retail_support_exchange_return',
    method: 'keyword',
  },
  {
    // Keywords of two agents ("devolver", "pedido"): the model is asked whether these are two requests; its
    // "none" leaves the keyword winner.
    text: 'Quero devolver o pedido 778',
    route: 'support_agent',
    intent: 'retail_support_exchange_return',
    method: 'keyword',
    llmCalls: 1,
  },
  // English, keyword stage
  {
    text: 'Why is my invoice so high?',
    route: 'billing_agent',
    intent: 'billing_invoice_explanation',
    method: 'keyword',
  },
  {
    text: 'I need a copy of my bill',
    route: 'billing_agent',
    intent: 'billing_invoice_explanation',
    method: 'keyword',
  },
  {
    text: 'Which plan do I have?',
    route: 'product_agent',
    intent: 'product_services_information',
    method: 'keyword',
  },
  {
    text: 'Please cancel my order 991',
    route: 'orders_agent',
    intent: 'retail_order_cancel',
    method: 'keyword',
  },
  { text: 'Where is my order?', route: 'orders_agent', intent: 'retail_order_tracking', method: 'keyword' },
  { text: 'The delivery is late', route: 'orders_agent', intent: 'retail_order_tracking', method: 'keyword' },
  {
    text: 'I want a refund for this item',
    route: 'support_agent',
    intent: 'retail_support_exchange_return',
    method: 'keyword',
  },
  // Spanish, keyword stage
  {
    text: 'Mi factura llegó con un cobro extra',
    route: 'billing_agent',
    intent: 'billing_invoice_explanation',
    method: 'keyword',
  },
  {
    text: '¿Qué servicios tengo activos?',
    route: 'product_agent',
    intent: 'product_services_information',
    method: 'keyword',
  },
  {
    text: 'Quiero cancelar mi pedido',
    route: 'orders_agent',
    intent: 'retail_order_cancel',
    method: 'keyword',
  },
  {
    text: '¿Dónde está mi pedido?',
    route: 'orders_agent',
    intent: 'retail_order_tracking',
    method: 'keyword',
  },
  {
    text: 'El envío no ha llegado',
    route: 'orders_agent',
    intent: 'retail_order_tracking',
    method: 'keyword',
  },
  {
    text: 'Quiero la devolución del producto',
    route: 'support_agent',
    intent: 'retail_support_exchange_return',
    method: 'keyword',
  },
  {
    text: '¿El producto tiene garantía?',
    route: 'support_agent',
    intent: 'retail_support_exchange_return',
    method: 'keyword',
  },
  // No keyword: the LLM stage decides
  {
    text: 'Quanto de dados eu ainda tenho este mês?',
    route: 'product_agent',
    intent: 'product_services_information',
    method: 'llm',
    llm: { json: { intent: 'product_services_information', confidence: 0.9, reason: 'franquia de dados' } },
  },
  {
    text: 'Meu fone chegou com a tela rachada',
    route: 'support_agent',
    intent: 'retail_support_exchange_return',
    method: 'llm',
    llm: {
      json: { intent: 'retail_support_exchange_return', confidence: 0.92, reason: 'produto danificado' },
    },
  },
  {
    text: 'How much do I owe this month?',
    route: 'billing_agent',
    intent: 'billing_invoice_explanation',
    method: 'llm',
    llm: { json: { intent: 'billing_invoice_explanation', confidence: 0.88, reason: 'amount due' } },
  },
  {
    text: "My headphones arrived cracked, I'd like a new pair",
    route: 'support_agent',
    intent: 'retail_support_exchange_return',
    method: 'llm',
    llm: {
      content:
        '```json\n{"intent":"retail_support_exchange_return","confidence":0.9,"reason":"damaged"}\n```',
    },
  },
  {
    text: '¿Cuánto debo pagar este mes?',
    route: 'billing_agent',
    intent: 'billing_invoice_explanation',
    method: 'llm',
    llm: { json: { intent: 'billing_invoice_explanation', confidence: 0.87, reason: 'importe' } },
  },
  {
    text: '¿Cuándo llega lo que compré?',
    route: 'orders_agent',
    intent: 'retail_order_tracking',
    method: 'llm',
    llm: { json: { intent: 'retail_order_tracking', confidence: 0.85, reason: 'entrega' } },
  },
  // Neither stage decides: the fallback agent
  {
    text: 'Bom dia, tudo bem?',
    route: 'billing_agent',
    intent: 'fallback',
    method: 'fallback',
    llm: { json: { intent: 'none', confidence: 0, reason: 'saudação' } },
  },
  {
    text: 'Tell me a joke',
    route: 'billing_agent',
    intent: 'fallback',
    method: 'fallback',
    llm: { json: { intent: 'product_services_information', confidence: 0.3 } },
  },
  {
    text: 'hola',
    route: 'billing_agent',
    intent: 'fallback',
    method: 'fallback',
    llm: { content: 'Hola! ¿En qué puedo ayudarte?' },
  },
  {
    text: 'asdf qwerty',
    route: 'billing_agent',
    intent: 'fallback',
    method: 'fallback',
    llm: { status: 500 },
  },
];

describe('Enterprise Router over the shipped catalogue (fake LLM)', () => {
  let fake: FakeLlmServer;
  let moduleRef: TestingModule;
  let router: RoutingService;
  const published: Record<string, unknown>[] = [];
  const llmAnswers = new Map<string, FakeReply>();

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    moduleRef = await compileRouter(fake);
    router = moduleRef.get(RoutingService);
    moduleRef
      .get(EventEmitter2)
      .on('router.decision', (payload: Record<string, unknown>) => published.push(payload));
  });

  afterAll(async () => {
    await moduleRef.close();
    await fake.stop();
  });

  beforeEach(() => {
    fake.reset();
    llmAnswers.clear();
    published.length = 0;
    fake.script({
      model: 'router',
      reply: (request) =>
        llmAnswers.get(routedMessage(request)) ?? { json: { intent: 'none', confidence: 0 } },
    });
  });

  it(`routes ${CATALOGUE_CASES.length} labelled messages in Portuguese, English and Spanish`, async () => {
    expect(CATALOGUE_CASES.length).toBeGreaterThanOrEqual(30);
    for (const example of CATALOGUE_CASES) {
      if (example.llm) llmAnswers.set(example.text, example.llm);
    }
    const outcomes: string[] = [];
    const expected: string[] = [];
    for (const example of CATALOGUE_CASES) {
      const before = fake.requestsFor('router').length;
      const decision = await router.route(
        turnStateOf({ user_text: example.text, sanitized_input: example.text }),
      );
      const asked = fake.requestsFor('router').length - before;
      outcomes.push(
        `${example.text} → ${decision.route} ${decision.intent} ${decision.method} llm_calls=${asked}`,
      );
      expected.push(
        `${example.text} → ${example.route} ${example.intent} ${example.method} llm_calls=${example.llmCalls ?? (example.method === 'keyword' ? 0 : 1)}`,
      );
    }
    expect(outcomes).toEqual(expected);
    expect(published).toHaveLength(CATALOGUE_CASES.length);
  });

  it('publishes complete decisions with the intent domain and tools, and why the LLM was not accepted', async () => {
    llmAnswers.set('Bom dia', { json: { intent: 'weather', confidence: 0.99 } });
    const keyword = await router.route(turnStateOf({ user_text: 'quero cancelar meu pedido' }));
    expect(keyword).toMatchObject({
      route: 'orders_agent',
      agent: 'orders_agent',
      domain: 'retail',
      mcp_tools: ['consultar_pedido', 'cancelar_pedido'],
      next_state: null,
      route_bypassed: false,
      metadata: { matched_keyword: 'cancelar pedido', keyword_match_strategy: 'ordered_tokens' },
    });
    const fallback = await router.route(turnStateOf({ user_text: 'Bom dia' }));
    expect(fallback).toMatchObject({
      intent: 'fallback',
      domain: null,
      mcp_tools: [],
      metadata: { llm_rejection: 'unknown_intent', llm_intent: 'weather' },
    });
    expect(published[0]).toMatchObject({
      route: 'orders_agent',
      intent: 'retail_order_cancel',
      method: 'keyword',
      confidence: 0.82,
      domain: 'retail',
      mcp_tools: ['consultar_pedido', 'cancelar_pedido'],
    });
    expect(typeof published[0].reason).toBe('string');
  });

  it('sends the router prompt with the catalogue and the minimal session context', async () => {
    llmAnswers.set('e aí?', { json: { intent: 'none', confidence: 0 } });
    await router.route(
      turnStateOf({ user_text: 'e aí?', active_agent: 'orders_agent', intent: 'retail_order_tracking' }),
    );
    const [request] = fake.requestsFor('router');
    expect(request.body).toMatchObject({ temperature: 0, response_format: { type: 'json_object' } });
    const payload = JSON.parse(request.messages[1].content ?? '') as {
      session_context: unknown;
      allowed_intents: { name: string }[];
    };
    expect(payload.session_context).toEqual({
      active_agent: 'orders_agent',
      previous_intent: 'retail_order_tracking',
    });
    expect(payload.allowed_intents.map((i) => i.name)).toEqual([
      'billing_invoice_explanation',
      'product_services_information',
      'retail_order_cancel',
      'retail_order_tracking',
      'retail_support_exchange_return',
    ]);
  });

  it('falls back when the router LLM times out (profile timeout 1 s)', async () => {
    llmAnswers.set('ok então', { json: { intent: 'retail_order_tracking', confidence: 0.9 }, delayMs: 1500 });
    const decision = await router.route(turnStateOf({ user_text: 'ok então' }));
    expect(decision).toMatchObject({
      route: 'billing_agent',
      method: 'fallback',
      metadata: { llm_rejection: 'timeout' },
    });
  });

  describe('state policy', () => {
    const collecting = (missing: string[]): Partial<TurnState> => ({
      next_state: 'COLLECTING_BILLING_PARAMETERS',
      active_agent: 'billing_agent',
      intent: 'billing_invoice_explanation',
      domain: 'telecom',
      missing_parameters: missing,
      active_transaction: activeTransactionOf({
        tool_name: 'contestar_cobranca',
        agent: 'billing_agent',
        state_domain: 'BILLING',
        status: 'COLLECTING_PARAMETERS',
        intent: 'billing_invoice_explanation',
      }),
    });
    const expectHeld = (decision: RouteDecision) => {
      expect(decision).toMatchObject({
        route: 'billing_agent',
        agent: 'billing_agent',
        intent: 'state:COLLECTING_BILLING_PARAMETERS',
        method: 'state_policy',
        next_state: 'COLLECTING_BILLING_PARAMETERS',
        mcp_tools: ['consultar_fatura', 'consultar_pagamentos'],
      });
      expect(decision.metadata).not.toHaveProperty('transaction_interruption');
    };

    it('keeps a short parameter answer ("TIM Music", low confidence for another intent) in the transaction', async () => {
      llmAnswers.set('TIM Music', { json: { intent: 'product_services_information', confidence: 0.3 } });
      expectHeld(await router.route(turnStateOf({ user_text: 'TIM Music', ...collecting(['servico']) })));
    });

    it('keeps a currency value ("R$ 71,99", the same intent) as the pending parameter', async () => {
      llmAnswers.set('R$ 71,99', { json: { intent: 'billing_invoice_explanation', confidence: 0.95 } });
      expectHeld(await router.route(turnStateOf({ user_text: 'R$ 71,99', ...collecting(['valor']) })));
    });

    it('lets a clear new question with confidence 0.96 interrupt the transaction', async () => {
      llmAnswers.set('quais são meus serviços?', {
        json: { intent: 'product_services_information', confidence: 0.96, reason: 'nova pergunta' },
      });
      for (const missing of [['servico'], ['valor']]) {
        const decision = await router.route(
          turnStateOf({
            user_text: 'quais são meus serviços?',
            ...collecting(missing),
          }),
        );
        expect(decision).toMatchObject({
          route: 'product_agent',
          intent: 'product_services_information',
          method: 'llm',
          confidence: 0.96,
          next_state: null,
          metadata: {
            transaction_interruption: 'intent_shift',
            interrupted_state: 'COLLECTING_BILLING_PARAMETERS',
            interrupted_intent: 'billing_invoice_explanation',
          },
        });
      }
    });

    it('holds when the router LLM times out', async () => {
      llmAnswers.set('quais são meus serviços?', {
        json: { intent: 'product_services_information', confidence: 0.96 },
        delayMs: 1500,
      });
      const decision = await router.route(
        turnStateOf({
          user_text: 'quais são meus serviços?',
          ...collecting(['valor']),
        }),
      );
      expectHeld(decision);
      expect(decision.metadata).toMatchObject({ interruption_check: 'timeout' });
    });
  });
});

describe('Enterprise Router with ENABLE_LLM_ROUTER=false and in supervisor mode', () => {
  let fake: FakeLlmServer;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
  });

  afterAll(async () => {
    await fake.stop();
  });

  beforeEach(() => fake.reset());

  it('routes by keyword and fallback only, never calling the LLM', async () => {
    const moduleRef = await compileRouter(fake, { ENABLE_LLM_ROUTER: 'false' });
    try {
      const router = moduleRef.get(RoutingService);
      expect(await router.route(turnStateOf({ user_text: 'Where is my order?' }))).toMatchObject({
        method: 'keyword',
      });
      expect(await router.route(turnStateOf({ user_text: 'Bom dia' }))).toMatchObject({
        method: 'fallback',
        metadata: { llm_rejection: 'disabled' },
      });
      expect(fake.requests).toHaveLength(0);
    } finally {
      await moduleRef.close();
    }
  });

  it('plans several intents, runs each agent isolated and defers a second transactional one (ROUTING_MODE)', async () => {
    const moduleRef = await compileRouter(fake, { ROUTING_MODE: 'supervisor' });
    try {
      const router = moduleRef.get(RoutingService);
      const text = 'quero cancelar o pedido 55, ver minha fatura e trocar o fone';
      expect(await router.route(turnStateOf({ user_text: text }))).toMatchObject({
        route: 'supervisor_agent',
        method: 'supervisor',
      });
      fake.script({
        model: 'router',
        when: (request) => routedMessage(request) === text,
        reply: {
          json: {
            intents: [
              { intent: 'retail_order_cancel', confidence: 0.93 },
              { intent: 'billing_invoice_explanation', confidence: 0.9 },
              { intent: 'retail_support_exchange_return', confidence: 0.88 },
            ],
          },
        },
      });
      const seen: { node: DomainAgentNode; state: TurnState }[] = [];
      const patch = await router.superviseTurn(
        turnStateOf({ user_text: text, sanitized_input: text, next_state: null, pending_topics: [] }),
        (node, state) => {
          seen.push({ node, state });
          return Promise.resolve({ answer: `resposta de ${node}` });
        },
      );
      expect(seen.map((s) => [s.node, s.state.intent])).toEqual([
        ['orders_agent', 'retail_order_cancel'],
        ['billing_agent', 'billing_invoice_explanation'],
      ]);
      expect(patch.answer).toMatch(/^resposta de billing_agent\n\nresposta de orders_agent\n\nTambém recebi/);
      expect(patch.pending_topics).toEqual([
        expect.objectContaining({ intent: 'retail_support_exchange_return', status: 'deferred' }),
      ]);
      expect(patch).toMatchObject({
        supervisor_plan: { source: 'llm' },
        multi_intent_plan: { execution_mode: 'supervisor' },
      });
      expect(patch.agent_responses).toHaveLength(2);
      expect(patch.supervisor_results).toHaveLength(2);
    } finally {
      await moduleRef.close();
    }
  });
});
