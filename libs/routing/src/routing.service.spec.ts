import { EventEmitter2 } from '@nestjs/event-emitter';
import { join } from 'node:path';
import {
  ConfigFilesService,
  loadYamlFile,
  PerAgent,
  RoutingEnv,
  RoutingFile,
  routingFileSchema,
  toolsFileSchema,
} from '@agent/config';
import { isFixedRoute, RouteDecision, TurnState } from '@agent/contracts';
import { EventBusService } from '@agent/observability';
import { FakeLlmServer, FakeReply } from '@agent/testing/fake-llm';
import { activeTransactionOf, decisionOf, turnStateOf } from '@agent/testing/states';
import { createTestLlm } from '@agent/testing/test-llm';
import { RoutingService } from './routing.service';

const configDir = join(__dirname, '..', '..', '..', 'config');
const shipped = loadYamlFile(join(configDir, 'routing.yaml'), routingFileSchema);
const tools = loadYamlFile(join(configDir, 'tools.yaml'), toolsFileSchema);

interface Setup {
  routing?: (file: RoutingFile) => RoutingFile;
  env?: Partial<RoutingEnv>;
}

let fake: FakeLlmServer;
beforeAll(async () => {
  fake = await FakeLlmServer.start();
});
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

/** How the router model answers from now on (the routing service only calls the router profile). */
const routerReplies = (reply: FakeReply) => fake.setFallback(reply);
const TIMEOUT: FakeReply = { delayMs: 1500 };
/** What the router model was sent in its first call. */
const sentPayload = () => JSON.parse(fake.requests[0].messages[1].content ?? '') as Record<string, unknown>;

function setup(options: Setup = {}) {
  const routing = options.routing ? options.routing(structuredClone(shipped)) : shipped;
  const files = { routings: new PerAgent(routing, new Map()), tools } as unknown as ConfigFilesService;
  const events = new EventBusService(new EventEmitter2());
  const emit = jest.spyOn(events, 'emit');
  const env: RoutingEnv = { ROUTING_MODE: undefined, ENABLE_LLM_ROUTER: true, ...options.env };
  const service = new RoutingService(files, events, createTestLlm(fake).llm, env);
  const llmAnswers = (json: unknown) => routerReplies({ json });
  return { service, emit, llmAnswers };
}

const turn = (text: string, extra: Partial<TurnState> = {}): TurnState =>
  turnStateOf({ user_text: text, sanitized_input: text, ...extra });

function expectComplete(decision: RouteDecision): void {
  const agents = new Set(shipped.intents.map((intent) => intent.agent));
  expect(isFixedRoute(decision.route) || agents.has(decision.route)).toBe(true);
  expect(decision.route_bypassed).toBe(false);
  expect(Array.isArray(decision.mcp_tools)).toBe(true);
  expect(typeof decision.reason).toBe('string');
  expect(decision.metadata).toEqual(expect.any(Object));
}

/** The shipped catalogue with exchanges and returns configured as a transfer (`handoff: true`). */
const withHandoff = (file: RoutingFile): RoutingFile => ({
  ...file,
  intents: file.intents.map((intent) =>
    intent.name === 'retail_support_exchange_return' ? { ...intent, handoff: true } : intent,
  ),
});

describe('RoutingService (router mode)', () => {
  it('routes by keyword first, without calling the LLM, and publishes the whole decision', async () => {
    const { service, emit } = setup();
    const decision = await service.route(turn('Quero cancelar o meu pedido 123'));
    expect(decision).toEqual({
      route: 'orders_agent',
      agent: 'orders_agent',
      intent: 'retail_order_cancel',
      domain: 'retail',
      mcp_tools: ['consultar_pedido', 'cancelar_pedido'],
      confidence: 0.82,
      method: 'keyword',
      reason: 'keyword "cancelar pedido" (ordered_tokens)',
      next_state: null,
      route_bypassed: false,
      metadata: { matched_keyword: 'cancelar pedido', keyword_match_strategy: 'ordered_tokens' },
    });
    expect(fake.requests).toEqual([]);
    expect(emit).toHaveBeenCalledWith('router.decision', {
      route: 'orders_agent',
      intent: 'retail_order_cancel',
      method: 'keyword',
      confidence: 0.82,
      reason: decision.reason,
      domain: 'retail',
      mcp_tools: ['consultar_pedido', 'cancelar_pedido'],
    });
  });

  it('asks the LLM when no keyword matches and accepts a known intent above the threshold', async () => {
    const { service, llmAnswers } = setup();
    llmAnswers({
      intent: 'product_services_information',
      confidence: 0.88,
      reason: 'quer saber da franquia',
    });
    const decision = await service.route(
      turn('quanto de dados eu ainda tenho?', {
        active_agent: 'billing_agent',
        intent: 'billing_invoice_explanation',
      }),
    );
    expectComplete(decision);
    expect(decision).toMatchObject({
      route: 'product_agent',
      intent: 'product_services_information',
      domain: 'telecom',
      mcp_tools: ['consultar_plano', 'listar_servicos'],
      method: 'llm',
      confidence: 0.88,
      reason: 'quer saber da franquia',
      metadata: { llm_profile: 'router' },
    });
    const payload = sentPayload();
    expect(payload.session_context).toEqual({
      active_agent: 'billing_agent',
      previous_intent: 'billing_invoice_explanation',
    });
  });

  it.each([
    ['an invalid answer', { content: 'sorry, I cannot' }, 'invalid_output'],
    ['an unknown intent', { content: '{"intent":"weather","confidence":0.99}' }, 'unknown_intent'],
    [
      'a low confidence',
      { content: '{"intent":"retail_order_tracking","confidence":0.2}' },
      'below_threshold',
    ],
  ])('falls back to the fallback agent on %s', async (_label, reply, reason) => {
    const { service } = setup();
    routerReplies(reply);
    const decision = await service.route(turn('bom dia'));
    expectComplete(decision);
    expect(decision).toMatchObject({
      route: 'billing_agent',
      agent: 'billing_agent',
      intent: 'fallback',
      domain: null,
      mcp_tools: [],
      method: 'fallback',
      confidence: 0.1,
      metadata: { llm_rejection: reason },
    });
  });

  it('falls back when the router LLM times out', async () => {
    const { service } = setup();
    routerReplies(TIMEOUT);
    expect(await service.route(turn('bom dia'))).toMatchObject({
      method: 'fallback',
      metadata: { llm_rejection: 'timeout', llm_rejection_detail: expect.stringContaining('timed out') },
    });
  });

  it('skips the LLM stage when ENABLE_LLM_ROUTER=false', async () => {
    const { service } = setup({ env: { ENABLE_LLM_ROUTER: false } });
    expect(await service.route(turn('bom dia'))).toMatchObject({
      method: 'fallback',
      metadata: { llm_rejection: 'disabled' },
    });
    expect(await service.route(turn('minha fatura'))).toMatchObject({ method: 'keyword' });
    expect(fake.requests).toEqual([]);
  });

  describe('strategy llm_first', () => {
    const llmFirst = (file: RoutingFile): RoutingFile => ({
      ...file,
      router: { ...file.router, strategy: 'llm_first' },
    });

    it('lets an accepted LLM answer win over a keyword', async () => {
      const { service, llmAnswers } = setup({ routing: llmFirst });
      llmAnswers({ intent: 'retail_support_exchange_return', confidence: 0.9 });
      expect(await service.route(turn('o pedido chegou com a tela riscada'))).toMatchObject({
        route: 'support_agent',
        method: 'llm',
      });
    });

    it('uses the keyword stage, then the fallback, when the LLM is not accepted', async () => {
      const { service, llmAnswers } = setup({ routing: llmFirst });
      llmAnswers({ intent: 'retail_support_exchange_return', confidence: 0.4 });
      expect(await service.route(turn('onde está meu pedido'))).toMatchObject({
        route: 'orders_agent',
        intent: 'retail_order_tracking',
        method: 'keyword',
        metadata: { llm_rejection: 'below_threshold', matched_keyword: 'pedido' },
      });
      expect(await service.route(turn('bom dia'))).toMatchObject({
        method: 'fallback',
        metadata: { llm_rejection: 'below_threshold' },
      });
    });
  });

  describe('state policy', () => {
    const collecting: Partial<TurnState> = {
      next_state: 'COLLECTING_BILLING_PARAMETERS',
      active_agent: 'billing_agent',
      intent: 'billing_invoice_explanation',
      missing_parameters: ['valor'],
      active_transaction: activeTransactionOf({
        tool_name: 'contestar_cobranca',
        agent: 'billing_agent',
        state_domain: 'BILLING',
        status: 'COLLECTING_PARAMETERS',
        intent: null,
        started_from_intent: null,
      }),
    };

    it('keeps a short parameter answer in the transaction when the LLM says it is the same intent', async () => {
      const { service, llmAnswers } = setup();
      llmAnswers({ intent: 'billing_invoice_explanation', confidence: 0.95 });
      const decision = await service.route(turn('R$ 71,99', collecting));
      expectComplete(decision);
      expect(decision).toEqual({
        route: 'billing_agent',
        agent: 'billing_agent',
        intent: 'state:COLLECTING_BILLING_PARAMETERS',
        domain: 'telecom',
        mcp_tools: ['consultar_fatura', 'consultar_pagamentos'],
        confidence: 1,
        method: 'state_policy',
        reason: 'Billing operation collecting missing parameters.',
        next_state: 'COLLECTING_BILLING_PARAMETERS',
        route_bypassed: false,
        metadata: {
          state_policy: 'COLLECTING_BILLING_PARAMETERS',
          transaction_intent: 'billing_invoice_explanation',
          interruption_check: 'same_intent',
          llm_intent: 'billing_invoice_explanation',
          llm_confidence: 0.95,
        },
      });
      const payload = sentPayload();
      expect(payload.transaction_context).toEqual({
        state: 'COLLECTING_BILLING_PARAMETERS',
        agent: 'billing_agent',
        intent: 'billing_invoice_explanation',
        missing_parameters: ['valor'],
      });
    });

    it('holds when the LLM names another intent with low confidence', async () => {
      const { service, llmAnswers } = setup();
      llmAnswers({ intent: 'product_services_information', confidence: 0.3 });
      const decision = await service.route(turn('TIM Music', collecting));
      expect(decision).toMatchObject({
        method: 'state_policy',
        intent: 'state:COLLECTING_BILLING_PARAMETERS',
        next_state: 'COLLECTING_BILLING_PARAMETERS',
        metadata: { interruption_check: 'below_threshold', llm_intent: 'product_services_information' },
      });
      expect(decision.metadata).not.toHaveProperty('transaction_interruption');
    });

    it('holds when the LLM fails, and holds without calling it when the LLM router is off', async () => {
      const failing = setup();
      routerReplies(TIMEOUT);
      expect(await failing.service.route(turn('quais são meus serviços?', collecting))).toMatchObject({
        method: 'state_policy',
        metadata: { interruption_check: 'timeout' },
      });
      const off = setup({ env: { ENABLE_LLM_ROUTER: false } });
      // A keyword of another intent does not interrupt either: parameter answers often contain catalogue words.
      expect(await off.service.route(turn('quero ver meu plano', collecting))).toMatchObject({
        method: 'state_policy',
        metadata: { interruption_check: 'llm_router_disabled' },
      });
      expect(fake.requests).toHaveLength(1);
    });

    it('lets a clearly different intent at or above the threshold interrupt the transaction', async () => {
      const { service, llmAnswers } = setup();
      llmAnswers({ intent: 'product_services_information', confidence: 0.96, reason: 'pergunta nova' });
      const decision = await service.route(turn('quais são meus serviços?', collecting));
      expectComplete(decision);
      expect(decision).toMatchObject({
        route: 'product_agent',
        intent: 'product_services_information',
        method: 'llm',
        confidence: 0.96,
        next_state: null,
        metadata: {
          transaction_interruption: 'intent_shift',
          interrupted_state: 'COLLECTING_BILLING_PARAMETERS',
          interrupted_agent: 'billing_agent',
          interrupted_intent: 'billing_invoice_explanation',
          interruption_source: 'llm',
        },
      });
    });

    it('remembers the transaction intent across held turns', async () => {
      const { service, llmAnswers } = setup();
      llmAnswers({ intent: 'billing_invoice_explanation', confidence: 0.9 });
      const first = await service.route(turn('R$ 71,99', collecting));
      const second = await service.route(
        turn('a de março', {
          next_state: first.next_state,
          intent: first.intent,
          active_agent: first.agent ?? undefined,
          route_decision: first,
        }),
      );
      expect(second).toMatchObject({
        method: 'state_policy',
        metadata: { transaction_intent: 'billing_invoice_explanation', interruption_check: 'same_intent' },
      });
    });

    it('compares agents when the transaction intent is unknown', async () => {
      const { service, llmAnswers } = setup();
      const unknownIntent: Partial<TurnState> = {
        next_state: 'WAITING_ORDER_CONFIRMATION',
        active_agent: 'orders_agent',
      };
      llmAnswers({ intent: 'retail_order_tracking', confidence: 0.9 });
      expect(await service.route(turn('sim', unknownIntent))).toMatchObject({
        method: 'state_policy',
        intent: 'state:WAITING_ORDER_CONFIRMATION',
        mcp_tools: [],
      });
      llmAnswers({ intent: 'billing_invoice_explanation', confidence: 0.9 });
      expect(await service.route(turn('e a minha fatura?', unknownIntent))).toMatchObject({
        method: 'llm',
        route: 'billing_agent',
        metadata: { transaction_interruption: 'intent_shift', interrupted_intent: null },
      });
    });
  });

  describe('handoff', () => {
    it('sends a handoff intent through the handoff node when another agent is active', async () => {
      const { service } = setup({ routing: withHandoff });
      const decision = await service.route(
        turn('quero devolver o produto', { active_agent: 'orders_agent' }),
      );
      expectComplete(decision);
      expect(decision).toMatchObject({
        route: 'handoff',
        agent: 'support_agent',
        intent: 'retail_support_exchange_return',
        method: 'keyword',
        metadata: { handoff_target: 'support_agent', handoff_from: 'orders_agent' },
      });
    });

    it('routes straight to the agent on a first turn, from the same agent, and for ordinary intents', async () => {
      const { service } = setup({ routing: withHandoff });
      expect(await service.route(turn('quero devolver o produto'))).toMatchObject({ route: 'support_agent' });
      expect(
        await service.route(turn('quero devolver o produto', { active_agent: 'support_agent' })),
      ).toMatchObject({ route: 'support_agent' });
      const ordinary = await service.route(turn('minha fatura', { active_agent: 'orders_agent' }));
      expect(ordinary).toMatchObject({ route: 'billing_agent' });
      expect(ordinary.metadata).not.toHaveProperty('handoff_target');
    });
  });
});

describe("RoutingService (router mode, a continuity classifier's ROUTE target)", () => {
  const classified = (intent: string) => ({ intent, confidence: 0.96, reason: 'quer ver a fatura' });

  it('takes the named intent where the model would decide, without calling it, and publishes it', async () => {
    const { service, emit } = setup();
    const decision = await service.route(
      turn('quanto eu pago este mês?', { active_agent: 'product_agent' }),
      classified('billing_invoice_explanation'),
    );
    expect(decision).toEqual({
      route: 'billing_agent',
      agent: 'billing_agent',
      intent: 'billing_invoice_explanation',
      domain: 'telecom',
      mcp_tools: ['consultar_fatura', 'consultar_pagamentos'],
      confidence: 0.96,
      method: 'continuity',
      reason: 'quer ver a fatura',
      next_state: null,
      route_bypassed: true,
      metadata: { route_bypassed: true, continuity_decision: 'ROUTE' },
    });
    expect(fake.requests).toEqual([]);
    expect(emit).toHaveBeenCalledWith('router.decision', expect.objectContaining({ method: 'continuity' }));
  });

  it('goes through the handoff node for a handoff intent, as the model stage would', async () => {
    const { service } = setup({ routing: withHandoff });
    const decision = await service.route(
      turn('o produto não funciona', { active_agent: 'orders_agent' }),
      classified('retail_support_exchange_return'),
    );
    expect(decision).toMatchObject({
      route: 'handoff',
      method: 'continuity',
      metadata: { handoff_target: 'support_agent', handoff_from: 'orders_agent' },
    });
  });

  it('leaves a keyword that settles the turn to the keyword stage', async () => {
    const { service } = setup();
    const decision = await service.route(
      turn('Quero cancelar o meu pedido 123'),
      classified('retail_order_tracking'),
    );
    expect(decision).toMatchObject({
      intent: 'retail_order_cancel',
      method: 'keyword',
      route_bypassed: false,
    });
  });

  it('asks the model as before for an intent the catalogue does not enable, or with the model stage off', async () => {
    const { service, llmAnswers } = setup();
    llmAnswers({ intent: 'product_services_information', confidence: 0.9 });
    const unknown = await service.route(turn('quanto de dados eu tenho?'), classified('no_such_intent'));
    expect(unknown).toMatchObject({ intent: 'product_services_information', method: 'llm' });
    expect(fake.requests).toHaveLength(1);
    const off = setup({ env: { ENABLE_LLM_ROUTER: false } });
    const fallback = await off.service.route(
      turn('quanto de dados eu tenho?'),
      classified('product_services_information'),
    );
    expect(fallback).toMatchObject({ method: 'fallback', route_bypassed: false });
  });

  it('stands in for the model under llm_first too, but never for the check of a pending state', async () => {
    const llmFirst = setup({
      routing: (file) => ({ ...file, router: { ...file.router, strategy: 'llm_first' } }),
    });
    const decision = await llmFirst.service.route(
      turn('minha fatura'),
      classified('product_services_information'),
    );
    expect(decision).toMatchObject({ intent: 'product_services_information', method: 'continuity' });
    expect(fake.requests).toEqual([]);
    const { service, llmAnswers } = setup();
    llmAnswers({ intent: 'billing_invoice_explanation', confidence: 0.95 });
    const held = await service.route(
      turn('R$ 71,99', {
        next_state: 'COLLECTING_BILLING_PARAMETERS',
        active_agent: 'billing_agent',
        intent: 'billing_invoice_explanation',
      }),
      classified('product_services_information'),
    );
    expect(held).toMatchObject({ method: 'state_policy', metadata: { interruption_check: 'same_intent' } });
    expect(fake.requests).toHaveLength(1);
  });
});

describe('RoutingService (router mode, several requests in one message)', () => {
  const twoRequests = 'Quero a segunda via da fatura e saber quanto de internet tem no meu plano';

  it('asks the model when keywords of several agents match, and keeps the other requests it names', async () => {
    const { service, llmAnswers } = setup();
    llmAnswers({
      intent: 'billing_invoice_explanation',
      confidence: 0.93,
      more_intents: [
        { intent: 'product_services_information', confidence: 0.9 },
        { intent: 'product_services_information', confidence: 0.9 },
        { intent: 'retail_order_cancel', confidence: 0.3 },
        { intent: 'no_such_intent', confidence: 0.99 },
      ],
    });
    const decision = await service.route(turn(twoRequests));
    expect(decision).toMatchObject({
      route: 'billing_agent',
      method: 'llm',
      metadata: { keyword_agents: 'several', more_intents: ['product_services_information'] },
    });
    // One agent's keywords alone still decide without the model.
    fake.reset();
    await service.route(turn('Quero a segunda via da fatura'));
    expect(fake.requests).toEqual([]);
  });

  it('falls back to the keyword winner when the model cannot decide a several-agent message', async () => {
    const { service } = setup();
    routerReplies({ status: 500 });
    const decision = await service.route(turn(twoRequests));
    expect(decision).toMatchObject({ route: 'billing_agent', method: 'keyword' });
    expect(decision.metadata.llm_rejection).toBe('http_error');
  });

  it('keeps the other requests pending, offers them, serves an accepted one and records what was handled', () => {
    const { service } = setup();
    const first: TurnState = {
      ...turn(twoRequests),
      turn: 1,
      intent: 'billing_invoice_explanation',
      route_decision: decisionOf({ metadata: { more_intents: ['product_services_information'] } }),
    };
    const served = service.followUp(first, { answer: 'Segue a segunda via.', next_state: null });
    expect(served.answer).toBe(
      'Segue a segunda via.\n\nAinda está pendente: planos e serviços. Quer que eu siga com isso agora?',
    );
    expect(served.pending_topics).toEqual([
      expect.objectContaining({
        intent: 'product_services_information',
        agent: 'product_agent',
        status: 'offered',
        reason: 'multi_intent',
        source_text: twoRequests,
        created_turn: 1,
      }),
    ]);
    expect(served.handled_topics).toEqual([
      expect.objectContaining({ intent: 'billing_invoice_explanation', first_turn: 1, last_turn: 1 }),
    ]);

    const accepted = service.followUp(
      {
        ...turn('sim'),
        ...served,
        turn: 2,
        intent: 'product_services_information',
        route_decision: decisionOf(),
      },
      { answer: 'Seu plano tem 30GB.', next_state: null },
    );
    expect(accepted.pending_topics).toEqual([]);
    expect(accepted.answer).toBeUndefined();
    expect(accepted.handled_topics?.map((t) => t.intent)).toEqual([
      'billing_invoice_explanation',
      'product_services_information',
    ]);
  });

  it('waits with the offer while a transaction asks the customer, and drops an offer not taken up', () => {
    const { service } = setup();
    const first: TurnState = {
      ...turn('Quero cancelar o pedido e ver minha fatura'),
      turn: 1,
      intent: 'retail_order_cancel',
      route_decision: decisionOf({ metadata: { more_intents: ['billing_invoice_explanation'] } }),
    };
    const asking = service.followUp(first, {
      answer: 'Confirma o cancelamento?',
      next_state: 'WAITING_ORDER_CONFIRMATION',
    });
    expect(asking.answer).toBeUndefined();
    expect(asking.pending_topics).toEqual([expect.objectContaining({ status: 'deferred' })]);

    const done = service.followUp(
      {
        ...turn('sim'),
        ...asking,
        turn: 2,
        intent: 'state:WAITING_ORDER_CONFIRMATION',
        route_decision: decisionOf(),
      },
      { answer: 'Cancelado.', next_state: null },
    );
    expect(done.answer).toContain('Ainda está pendente: fatura e pagamentos.');
    const movedOn = service.followUp(
      {
        ...turn('e o meu plano?'),
        ...done,
        turn: 3,
        intent: 'product_services_information',
        route_decision: decisionOf(),
      },
      { answer: 'Seu plano tem 30GB.', next_state: null },
    );
    expect(movedOn.pending_topics).toEqual([]);
  });

  it('shows the router model the pending topics', async () => {
    const { service, llmAnswers } = setup();
    llmAnswers({ intent: 'product_services_information', confidence: 0.9 });
    const offered = service.followUp(
      {
        ...turn(twoRequests),
        turn: 1,
        intent: 'billing_invoice_explanation',
        route_decision: decisionOf({ metadata: { more_intents: ['product_services_information'] } }),
      },
      { answer: 'ok', next_state: null },
    );
    await service.route({ ...turn('sim'), ...offered });
    expect(sentPayload().pending_topics).toEqual([
      { intent: 'product_services_information', label: 'planos e serviços' },
    ]);
  });
});

describe('RoutingService (supervisor mode)', () => {
  it('hands every turn to supervisor_agent and carries the pending state and the previous turn', async () => {
    const { service, emit } = setup({
      routing: (file) => ({ ...file, router: { ...file.router, mode: 'supervisor' } }),
    });
    const decision = await service.route(
      turn('sim', {
        next_state: 'WAITING_ORDER_CONFIRMATION',
        active_agent: 'orders_agent',
        intent: 'retail_order_cancel',
      }),
    );
    expect(decision).toEqual({
      route: 'supervisor_agent',
      agent: 'supervisor_agent',
      intent: 'supervisor',
      domain: null,
      mcp_tools: [],
      confidence: 1,
      method: 'supervisor',
      reason: 'supervisor mode plans the intents of the turn',
      next_state: 'WAITING_ORDER_CONFIRMATION',
      route_bypassed: false,
      metadata: {
        previous_agent: 'orders_agent',
        previous_intent: 'retail_order_cancel',
        transaction_intent: 'retail_order_cancel',
      },
    });
    expect(fake.requests).toEqual([]);
    expect(emit).toHaveBeenCalledWith('router.decision', expect.objectContaining({ method: 'supervisor' }));
  });
});

describe('RoutingService.settlement (what route() would need, without running it)', () => {
  it('is deterministic for a keyword match, model without one, with no model call either way', () => {
    const { service } = setup();
    expect(service.settlement(turn('Quero cancelar o meu pedido 123'))).toBe('deterministic');
    expect(service.settlement(turn('preciso de ajuda com uma coisa'))).toBe('model');
    // Keywords of two agents: possibly two requests, which the model tells apart.
    expect(service.settlement(turn('Quero a segunda via da fatura e ver meu plano'))).toBe('model');
    expect(fake.requests).toHaveLength(0);
  });

  it('names a pending state policy, which only the model can interrupt', () => {
    const pending = turn('sim', { next_state: 'WAITING_ORDER_CONFIRMATION' });
    expect(setup().service.settlement(pending)).toBe('state_policy');
    expect(setup({ env: { ENABLE_LLM_ROUTER: false } }).service.settlement(pending)).toBe('deterministic');
  });

  it('follows the configuration: llm_first needs the model, supervisor mode and a disabled model do not', () => {
    const llmFirst = setup({
      routing: (file) => ({ ...file, router: { ...file.router, strategy: 'llm_first' } }),
    });
    expect(llmFirst.service.settlement(turn('Quero cancelar o meu pedido 123'))).toBe('model');
    const supervisor = setup({
      routing: (file) => ({ ...file, router: { ...file.router, mode: 'supervisor' } }),
    });
    expect(supervisor.service.settlement(turn('preciso de ajuda com uma coisa'))).toBe('deterministic');
    const off = setup({ env: { ENABLE_LLM_ROUTER: false } });
    expect(off.service.settlement(turn('preciso de ajuda com uma coisa'))).toBe('deterministic');
  });
});

describe('RoutingService.keywordRoute and keywordAgents (known before any model answers)', () => {
  it("gives the keyword stage's own decision when it settles the turn alone, without a model or an event", async () => {
    const { service } = setup();
    const message = 'Quero cancelar o meu pedido 123';
    const early = service.keywordRoute(turn(message));
    expect(early).toMatchObject({ route: 'orders_agent', method: 'keyword' });
    expect(await service.route(turn(message))).toEqual(early);
    expect([...service.keywordAgents(turn('Quero a segunda via da fatura e ver meu plano'))].sort()).toEqual([
      'billing_agent',
      'product_agent',
    ]);
    expect(service.keywordRoute(turn('Quero a segunda via da fatura e ver meu plano'))).toBeNull();
    expect(service.keywordRoute(turn('preciso de ajuda com uma coisa'))).toBeNull();
    expect(service.keywordRoute(turn('sim', { next_state: 'WAITING_ORDER_CONFIRMATION' }))).toBeNull();
    expect(fake.requests).toHaveLength(0);
  });
});
