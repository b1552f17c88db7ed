import { CheckpointService, ConversationIdentity } from '@agent/checkpoint';
import { conversationKeyOf, type AgentState } from '@agent/contracts';
import {
  FakeChatRequest,
  FakeLlmServer,
  FakeReply,
  GUARDRAILS_ALLOW,
  lastUserMessage,
} from '../support/fake-llm';
import { activeTransactionOf, pendingToolCallOf } from '../support/states';
import { HttpResult, startTestApp, TestApp, uniqueId } from '../support/test-app';

/** Booting the app with a fresh embedded PGlite can take minutes on a busy machine. */
const APP_START_TIMEOUT_MS = 240_000;
const TENANT = 'acme';
const AGENT_ID = 'telecom_contas';
const HANDOFF_MESSAGE = 'Vou encaminhar seu atendimento para uma pessoa.';
const END_MESSAGE = 'Atendimento encerrado. Obrigado pelo contato.';
const ALREADY_ENDED_MESSAGE = 'Este atendimento já foi encerrado. Inicie uma nova sessão para continuar.';

interface TurnBody {
  turn: number;
  answer: string;
  route: string | null;
  intent: string | null;
  active_agent: string | null;
  route_bypassed: boolean;
  route_decision: Record<string, unknown> | null;
  continuity_signal: Record<string, unknown> | null;
  session_control: string | null;
  session_ended: boolean;
  human_handoff_requested: boolean;
  next_state: string | null;
  blocked: boolean;
}

interface EventRow {
  name: string;
  turn: number;
  payload: Record<string, unknown>;
}

/** One HTTP turn with what it asked the fake LLM (by model) and the events stored for it. */
interface PlayedTurn {
  res: HttpResult<TurnBody>;
  body: TurnBody;
  requests: FakeChatRequest[];
  models: string[];
  events: EventRow[];
  names: string[];
}

/** Classifier label for a message, as the scripted small model answers it. */
type Labels = Record<string, { decision: string; confidence: number } | FakeReply>;

function isReply(value: Labels[string]): value is FakeReply {
  return !('decision' in value);
}

/** The classifier's user message is the JSON payload; its current_message selects the scripted answer. */
function currentMessage(request: FakeChatRequest): string {
  try {
    const payload = JSON.parse(lastUserMessage(request)) as { current_message?: unknown };
    return typeof payload.current_message === 'string' ? payload.current_message : '';
  } catch {
    return '';
  }
}

/** The router stage sends a JSON payload whose `message` is the user's text (the catalogue travels with it). */
function routerMessage(request: FakeChatRequest): string {
  try {
    const payload = JSON.parse(lastUserMessage(request)) as { message?: unknown };
    return typeof payload.message === 'string' ? payload.message : lastUserMessage(request);
  } catch {
    return lastUserMessage(request);
  }
}

function classifierPayload(request: FakeChatRequest): Record<string, unknown> {
  return JSON.parse(lastUserMessage(request)) as Record<string, unknown>;
}

/**
 * Scripts the continuity classifier per message and gives every other stage an innocuous valid answer, so the
 * assertions only depend on continuity and on which stages were reached.
 */
function scriptStages(fake: FakeLlmServer, labels: Labels): void {
  fake.script({
    model: 'route_continuity',
    reply: (request) => {
      const label = labels[currentMessage(request)];
      if (!label) return { json: { decision: 'ROUTE', confidence: 0.99, reason: 'unscripted message' } };
      return isReply(label) ? label : { json: { ...label, reason: `scripted ${label.decision}` } };
    },
  });
  // The Enterprise Router's LLM stage, if it is reached: the example's subjects, whichever stage decides.
  fake.script({
    model: 'router',
    reply: (request) => {
      const text = routerMessage(request).toLowerCase();
      if (text.includes('cobrança') || text.includes('contestar')) {
        return { json: { intent: 'billing_invoice_explanation', confidence: 0.97, reason: 'charges' } };
      }
      if (text.includes('plano') || text.includes('incluso')) {
        return { json: { intent: 'product_services_information', confidence: 0.97, reason: 'plans' } };
      }
      return { json: { intent: 'unknown', confidence: 0, reason: 'no subject' } };
    },
  });
  fake.script({
    model: 'agent',
    reply: (request) => {
      const text = lastUserMessage(request).toLowerCase();
      if (text.includes('plano')) return { content: 'Seu plano é Controle 50GB.' };
      if (text.includes('incluso')) return { content: 'Inclui 50GB de internet e ligações ilimitadas.' };
      if (text.includes('cobrança')) {
        return { content: 'Vamos analisar a cobrança. Qual é o valor contestado?' };
      }
      return { content: 'Certo, como posso ajudar?' };
    },
  });
  fake.script(GUARDRAILS_ALLOW);
  fake.script({ model: 'judge', reply: { json: { score: 1, passed: true, reason: 'ok' } } });
  fake.script({ model: 'confirmation', reply: { json: { decision: 'OTHER', confidence: 0.9 } } });
  fake.script({ model: 'memory_extraction', reply: { json: { facts: [] } } });
}

function conversation(app: TestApp, fake: FakeLlmServer, sessionId = uniqueId('cont')) {
  const conversationKey = conversationKeyOf(TENANT, sessionId);
  return {
    sessionId,
    conversationKey,
    async send(text: string): Promise<PlayedTurn> {
      const before = fake.requests.length;
      const res = await app.post<TurnBody>('/v1/channels/web/messages', {
        tenant_id: TENANT,
        agent_id: AGENT_ID,
        session_id: sessionId,
        text,
      });
      expect(res.status).toBe(200);
      const requests = fake.requests.slice(before);
      const rows: EventRow[] = await app.dataSource.query(
        'SELECT name, turn, payload FROM session_events WHERE conversation_key = $1 AND turn = $2 ORDER BY id',
        [conversationKey, res.body.turn],
      );
      return {
        res,
        body: res.body,
        requests,
        models: requests.map((r) => r.model),
        events: rows,
        names: rows.map((r) => r.name),
      };
    },
  };
}

/** The router's LLM stage is requested exactly when it decided (keyword_first: a keyword match needs no LLM). */
function expectRouterStage(turn: PlayedTurn): void {
  const method = turn.body.route_decision?.method;
  if (method === 'llm') expect(turn.models).toContain('router');
  if (method === 'keyword' || method === 'state_policy') expect(turn.models).not.toContain('router');
}

function eventOf(turn: PlayedTurn, name: string): Record<string, unknown> {
  const event = turn.events.find((e) => e.name === name);
  expect(event).toBeDefined();
  return event?.payload ?? {};
}

describe('semantic route stickiness and session control over HTTP (ENABLE_ROUTE_STICKINESS=true)', () => {
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    app = await startTestApp({ fakeLlm: fake, env: { ENABLE_ROUTE_STICKINESS: 'true' } });
  }, APP_START_TIMEOUT_MS);

  afterAll(async () => {
    await app?.close();
    await fake.stop();
  });

  beforeEach(() => fake.reset());

  it("plays the specification's example table in Portuguese", async () => {
    scriptStages(fake, {
      'Qual é o meu plano?': { decision: 'ROUTE', confidence: 0.98 },
      'o que está incluso?': { decision: 'CONTINUE', confidence: 0.97 },
      'agora quero contestar uma cobrança': { decision: 'ROUTE', confidence: 0.96 },
      'quero falar com uma pessoa': { decision: 'HUMAN_HANDOFF', confidence: 0.99 },
      'obrigado, pode encerrar': { decision: 'END_SESSION', confidence: 0.98 },
    });
    const chat = conversation(app, fake);

    // First turn: classified (global actions are possible), no active agent, so the router decides.
    const plan = await chat.send('Qual é o meu plano?');
    expect(plan.body).toMatchObject({
      turn: 1,
      route: 'product_agent',
      active_agent: 'product_agent',
      route_bypassed: false,
      continuity_signal: { decision: 'ROUTE', accepted: true, fallback_reason: null },
    });
    expect(plan.body.route_decision?.method).not.toBe('continuity');
    expect(plan.models.filter((m) => m === 'route_continuity')).toHaveLength(1);
    expect(plan.names).toContain('router.decision');
    expectRouterStage(plan);
    expect(eventOf(plan, 'router.continuity')).toMatchObject({
      decision: 'ROUTE',
      active_agent: '',
      route_bypassed: false,
      accepted: true,
      profile_name: 'route_continuity',
    });

    // "o que está incluso?" → CONTINUE: product_agent keeps the turn, the router is not called.
    const included = await chat.send('o que está incluso?');
    expect(included.body).toMatchObject({
      turn: 2,
      route: 'product_agent',
      active_agent: 'product_agent',
      route_bypassed: true,
      intent: plan.body.intent,
      route_decision: { method: 'continuity', route: 'product_agent', route_bypassed: true },
      continuity_signal: {
        decision: 'CONTINUE',
        confidence: 0.97,
        accepted: true,
        fallback_reason: null,
        profile_name: 'route_continuity',
      },
      answer: 'Inclui 50GB de internet e ligações ilimitadas.',
    });
    expect(included.models).not.toContain('router');
    expect(included.models).toContain('agent');
    expect(included.names).not.toContain('router.decision');
    expect(eventOf(included, 'router.continuity')).toMatchObject({
      decision: 'CONTINUE',
      confidence: 0.97,
      active_agent: 'product_agent',
      route_bypassed: true,
      accepted: true,
    });
    const payload = classifierPayload(included.requests.find((r) => r.model === 'route_continuity')!);
    expect(payload).toMatchObject({
      active_agent: 'product_agent',
      current_message: 'o que está incluso?',
      recent_history: [
        { role: 'user', content: 'Qual é o meu plano?' },
        { role: 'assistant', content: 'Seu plano é Controle 50GB.' },
      ],
    });
    expect(Object.keys(payload.other_agents as object)).not.toContain('product_agent');

    // The checkpoint carries the routing facts of the bypassed turn (active_agent, route_bypassed,
    // continuity_signal in the final state).
    const stored = await app.app.get(CheckpointService).loadLatest(chat.conversationKey);
    expect(stored?.state).toMatchObject({
      active_agent: 'product_agent',
      route_bypassed: true,
      continuity_signal: { decision: 'CONTINUE', accepted: true },
      route_decision: { method: 'continuity' },
    });

    // "agora quero contestar uma cobrança" → ROUTE: the Enterprise Router picks billing_agent.
    const charge = await chat.send('agora quero contestar uma cobrança');
    expect(charge.body).toMatchObject({
      turn: 3,
      route: 'billing_agent',
      active_agent: 'billing_agent',
      route_bypassed: false,
      continuity_signal: { decision: 'ROUTE', accepted: true },
    });
    expect(['keyword', 'llm', 'state_policy']).toContain(charge.body.route_decision?.method);
    expect(charge.names).toContain('router.decision');
    expectRouterStage(charge);
    expect(eventOf(charge, 'router.continuity')).toMatchObject({
      decision: 'ROUTE',
      active_agent: 'product_agent',
      route_bypassed: false,
    });

    // "quero falar com uma pessoa" → HUMAN_HANDOFF: the global node answers; no router, agent or tool.
    const person = await chat.send('quero falar com uma pessoa');
    expect(person.body).toMatchObject({
      turn: 4,
      answer: HANDOFF_MESSAGE,
      route: 'human_handoff',
      route_bypassed: true,
      session_control: 'HUMAN_HANDOFF',
      human_handoff_requested: true,
      session_ended: false,
      next_state: 'HUMAN_HANDOFF_REQUESTED',
      route_decision: {
        route: 'human_handoff',
        intent: 'human_handoff',
        method: 'continuity',
        handoff: true,
        metadata: { session_control: 'HUMAN_HANDOFF', route_bypassed: true },
      },
      continuity_signal: { decision: 'HUMAN_HANDOFF', accepted: true },
    });
    expect(person.models).not.toContain('router');
    expect(person.models).not.toContain('agent');
    expect(person.names).not.toContain('router.decision');
    expect(person.names).toContain('session.human_handoff.requested');
    expect(eventOf(person, 'router.continuity')).toMatchObject({
      decision: 'HUMAN_HANDOFF',
      active_agent: 'billing_agent',
      route_bypassed: true,
    });

    // "obrigado, pode encerrar" → END_SESSION (notify mode: the turn after a handoff runs normally).
    const end = await chat.send('obrigado, pode encerrar');
    expect(end.body).toMatchObject({
      turn: 5,
      answer: END_MESSAGE,
      route: 'end_session',
      route_bypassed: true,
      session_control: 'END_SESSION',
      session_ended: true,
      human_handoff_requested: false,
      next_state: 'SESSION_ENDED',
      route_decision: {
        route: 'end_session',
        intent: 'end_session',
        method: 'continuity',
        metadata: { session_control: 'END_SESSION', route_bypassed: true },
      },
      continuity_signal: { decision: 'END_SESSION', accepted: true },
    });
    expect(end.body.route_decision).not.toHaveProperty('handoff');
    expect(end.models).not.toContain('router');
    expect(end.models).not.toContain('agent');
    expect(end.names).not.toContain('router.decision');
    const endNames = end.names;
    expect(endNames).toContain('session.end.requested');
    // Emitted before persistence: before the turn's completion event.
    expect(endNames.indexOf('session.end.requested')).toBeLessThan(endNames.indexOf('AGENT_COMPLETED'));

    // Any later message: rejected before any classifier, router, agent or tool.
    const after = await chat.send('mais uma coisa sobre o plano');
    expect(after.body).toMatchObject({
      turn: 6,
      answer: ALREADY_ENDED_MESSAGE,
      blocked: true,
      session_control: 'END_SESSION',
      session_ended: true,
      next_state: 'SESSION_ENDED',
      route_bypassed: false,
      continuity_signal: null,
    });
    expect(after.requests).toHaveLength(0);
    expect(after.names).toContain('session.message.rejected_after_end');
    expect(after.names).not.toContain('router.continuity');
    expect(after.names).not.toContain('router.decision');
  });

  it('exposes the continuity counters on /metrics', async () => {
    scriptStages(fake, {
      'Qual é o meu plano?': { decision: 'ROUTE', confidence: 0.98 },
      'o que está incluso?': { decision: 'CONTINUE', confidence: 0.97 },
    });
    const chat = conversation(app, fake);
    await chat.send('Qual é o meu plano?');
    await chat.send('o que está incluso?');
    const metrics = await app.get<string>('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(
      /agent_continuity_decisions_total\{decision="CONTINUE",accepted="true",fallback_reason="none"\} [1-9]/,
    );
    expect(metrics.body).toMatch(/agent_router_llm_calls_avoided_total [1-9]/);
  });

  it('CONTINUE on a first turn has no active agent to keep: the router decides (no_active_agent)', async () => {
    scriptStages(fake, { 'Qual é o meu plano?': { decision: 'CONTINUE', confidence: 0.99 } });
    const first = await conversation(app, fake).send('Qual é o meu plano?');
    expect(first.body).toMatchObject({
      route: 'product_agent',
      route_bypassed: false,
      continuity_signal: { decision: 'CONTINUE', accepted: false, fallback_reason: 'no_active_agent' },
    });
    expect(first.models.filter((m) => m === 'route_continuity')).toHaveLength(1);
    expect(first.names).toContain('router.decision');
  });

  it("a ROUTE naming a capability routes there without the router's model; an unknown one leaves it to it", async () => {
    const route = (target: string): FakeReply => ({
      json: { decision: 'ROUTE', confidence: 0.96, reason: 'new subject', target },
    });
    scriptStages(fake, {
      'me explica aquilo que apareceu pra pagar': route('fatura e pagamentos'),
      'e o que vem incluso nele?': route('something no agent offers'),
    });
    const talk = conversation(app, fake);
    const carried = await talk.send('me explica aquilo que apareceu pra pagar');
    expect(carried.body).toMatchObject({
      route: 'billing_agent',
      intent: 'billing_invoice_explanation',
      active_agent: 'billing_agent',
      route_bypassed: true,
      route_decision: {
        method: 'continuity',
        mcp_tools: ['consultar_fatura', 'consultar_pagamentos'],
        metadata: { continuity_decision: 'ROUTE' },
      },
      continuity_signal: { decision: 'ROUTE', accepted: true },
    });
    expect(carried.models).not.toContain('router');
    expect(eventOf(carried, 'router.decision')).toMatchObject({ method: 'continuity' });
    const asked = await talk.send('e o que vem incluso nele?');
    expect(asked.body).toMatchObject({ route: 'product_agent', route_bypassed: false });
    expect(asked.body.route_decision?.method).toBe('llm');
    expect(asked.models).toContain('router');
  });

  it.each([
    ['HUMAN_HANDOFF', 'quero uma pessoa', 'human_handoff'],
    ['END_SESSION', 'pode encerrar', 'end_session'],
  ])('%s is recognised on the first turn', async (decision, text, route) => {
    scriptStages(fake, { [text]: { decision, confidence: 0.97 } });
    const first = await conversation(app, fake).send(text);
    expect(first.body).toMatchObject({ turn: 1, route, session_control: decision, route_bypassed: true });
    expect(first.models).not.toContain('router');
    expect(first.models).not.toContain('agent');
  });

  it('every classifier failure routes through the Enterprise Router and the turn succeeds', async () => {
    scriptStages(fake, {
      'Qual é o meu plano?': { decision: 'ROUTE', confidence: 0.98 },
      'e o roaming do plano?': { status: 500 },
      'e a franquia do plano?': { content: 'CONTINUE, I am sure' },
      'e o bônus do plano?': { decision: 'CONTINUE', confidence: 0.5 },
      'e o desconto do plano?': { json: { decision: 'MAYBE', confidence: 0.99 } },
      'e o preço do plano?': { json: { decision: 'CONTINUE', confidence: 0.99 }, delayMs: 1500 },
    });
    const chat = conversation(app, fake);
    await chat.send('Qual é o meu plano?');
    const cases: [string, string, string][] = [
      ['e o roaming do plano?', 'error', 'continuity_error:http_error'],
      ['e a franquia do plano?', 'invalid_output', 'continuity_error:invalid_output'],
      ['e o bônus do plano?', 'below_threshold', ''],
      ['e o desconto do plano?', 'invalid_output', 'continuity_error:invalid_output'],
      ['e o preço do plano?', 'timeout', 'continuity_error:timeout'],
    ];
    for (const [text, fallbackReason, errorReason] of cases) {
      const turn = await chat.send(text);
      expect(turn.body.route_bypassed).toBe(false);
      expect(turn.body.route).toBe('product_agent');
      expect(turn.body.continuity_signal).toMatchObject({ accepted: false, fallback_reason: fallbackReason });
      expect(turn.names).toContain('router.decision');
      const event = eventOf(turn, 'router.continuity');
      expect(event).toMatchObject({
        accepted: false,
        fallback_reason: fallbackReason,
        route_bypassed: false,
      });
      if (errorReason) expect(event).toMatchObject({ decision: 'ROUTE', confidence: 0, reason: errorReason });
    }
  });

  describe('global precedence over a pending confirmation', () => {
    /** A session whose checkpoint waits for the confirmation of an order cancellation (orders_agent). */
    async function pendingConfirmation(): Promise<ReturnType<typeof conversation>> {
      const chat = conversation(app, fake);
      await chat.send('oi');
      const checkpoints = app.app.get(CheckpointService);
      const identity: ConversationIdentity = {
        conversation_key: chat.conversationKey,
        tenant_id: TENANT,
        session_id: chat.sessionId,
        agent_id: AGENT_ID,
        channel: 'web',
      };
      const lease = await checkpoints.acquire(identity);
      try {
        const loaded = await checkpoints.loadLatest(chat.conversationKey);
        const tools = ['consultar_pedido', 'cancelar_pedido'];
        const transaction = activeTransactionOf();
        const state: AgentState = {
          ...(loaded?.state ?? {}),
          active_agent: 'orders_agent',
          route: 'orders_agent',
          intent: 'retail_order_cancel',
          domain: 'retail',
          mcp_tools: tools,
          next_state: 'WAITING_ORDER_CONFIRMATION',
          active_transaction: transaction,
          pending_tool_call: pendingToolCallOf(transaction),
          confirmation_required: true,
          route_decision: {
            route: 'orders_agent',
            agent: 'orders_agent',
            intent: 'retail_order_cancel',
            domain: 'retail',
            mcp_tools: tools,
            confidence: 0.95,
            method: 'keyword',
            reason: 'cancel order',
            next_state: 'WAITING_ORDER_CONFIRMATION',
            route_bypassed: false,
            metadata: {},
          },
        };
        await checkpoints.commit({
          identity,
          leaseToken: lease.token,
          parentVersion: loaded?.version ?? null,
          turn: lease.session.turn_count,
          state,
          status: 'active',
          events: [],
        });
      } finally {
        await lease.release();
      }
      return chat;
    }

    async function storedState(conversationKey: string): Promise<AgentState> {
      const loaded = await app.app.get(CheckpointService).loadLatest(conversationKey);
      return loaded?.state ?? {};
    }

    it('a person can be reached in the middle of a confirmation; the pending operation is dropped', async () => {
      scriptStages(fake, { 'quero falar com uma pessoa': { decision: 'HUMAN_HANDOFF', confidence: 0.99 } });
      const chat = await pendingConfirmation();
      const person = await chat.send('quero falar com uma pessoa');
      expect(person.body).toMatchObject({
        answer: HANDOFF_MESSAGE,
        route: 'human_handoff',
        session_control: 'HUMAN_HANDOFF',
        human_handoff_requested: true,
        next_state: 'HUMAN_HANDOFF_REQUESTED',
      });
      for (const model of ['router', 'agent', 'confirmation']) expect(person.models).not.toContain(model);
      expect(person.names).not.toContain('router.decision');
      expect(person.names).toContain('session.human_handoff.requested');
      expect(eventOf(person, 'router.continuity')).toMatchObject({ active_agent: 'orders_agent' });
      const state = await storedState(chat.conversationKey);
      expect(state.pending_tool_call ?? null).toBeNull();
      expect(state.active_transaction ?? null).toBeNull();
      expect(state.confirmation_required).toBe(false);
    });

    it('the session can be ended in the middle of a confirmation, and stays ended', async () => {
      scriptStages(fake, { 'obrigado, pode encerrar': { decision: 'END_SESSION', confidence: 0.98 } });
      const chat = await pendingConfirmation();
      const end = await chat.send('obrigado, pode encerrar');
      expect(end.body).toMatchObject({
        answer: END_MESSAGE,
        route: 'end_session',
        session_ended: true,
        next_state: 'SESSION_ENDED',
      });
      for (const model of ['router', 'agent', 'confirmation']) expect(end.models).not.toContain(model);
      expect(end.names).toContain('session.end.requested');

      const confirm = await chat.send('sim, pode cancelar');
      expect(confirm.body).toMatchObject({
        answer: ALREADY_ENDED_MESSAGE,
        blocked: true,
        session_ended: true,
      });
      expect(confirm.requests).toHaveLength(0);
      expect(confirm.names).toContain('session.message.rejected_after_end');
      expect(confirm.names).not.toContain('mcp.tool_call.completed');
    });

    it('an accepted CONTINUE keeps the transaction going with its agent, without the router', async () => {
      scriptStages(fake, { 'qual pedido mesmo?': { decision: 'CONTINUE', confidence: 0.95 } });
      const chat = await pendingConfirmation();
      const turn = await chat.send('qual pedido mesmo?');
      expect(turn.body).toMatchObject({
        route: 'orders_agent',
        route_bypassed: true,
        route_decision: {
          method: 'continuity',
          intent: 'retail_order_cancel',
          domain: 'retail',
          mcp_tools: ['consultar_pedido', 'cancelar_pedido'],
          next_state: 'WAITING_ORDER_CONFIRMATION',
        },
      });
      expect(turn.models).not.toContain('router');
      expect(turn.names).not.toContain('router.decision');
    });
  });
});

describe('semantic route stickiness switched off (ENABLE_ROUTE_STICKINESS=false)', () => {
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    app = await startTestApp({ fakeLlm: fake, env: { ENABLE_ROUTE_STICKINESS: 'false' } });
  }, APP_START_TIMEOUT_MS);

  afterAll(async () => {
    await app?.close();
    await fake.stop();
  });

  it('never calls the classifier and routes every turn through the Enterprise Router', async () => {
    scriptStages(fake, {
      'o que está incluso?': { decision: 'CONTINUE', confidence: 0.99 },
      'quero falar com uma pessoa': { decision: 'HUMAN_HANDOFF', confidence: 0.99 },
    });
    const chat = conversation(app, fake);
    for (const text of ['Qual é o meu plano?', 'o que está incluso?', 'quero falar com uma pessoa']) {
      const turn = await chat.send(text);
      expect(turn.body.route_bypassed).toBe(false);
      expect(turn.body.continuity_signal).toBeNull();
      expect(turn.body.session_control).toBeNull();
      expect(turn.body.route_decision?.method).not.toBe('continuity');
      expect(turn.names).toContain('router.decision');
      expect(turn.names).not.toContain('router.continuity');
    }
    expect(fake.requestsFor('route_continuity')).toHaveLength(0);
  });
});
