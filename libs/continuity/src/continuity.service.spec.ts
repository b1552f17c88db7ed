import { copyFileSync, cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseEnvNamespace } from '@agent/config';
import type { DomainAgentNode, RouteDecision, StoredEvent, TurnState } from '@agent/contracts';
import { EventBusService, MetricsService, TurnContextStore } from '@agent/observability';
import { FakeChatRequest, FakeLlmServer, FakeReply } from '@agent/testing/fake-llm';
import { activeTransactionOf, decisionOf, turnContextOf, turnStateOf } from '@agent/testing/states';
import { createTestLlm } from '@agent/testing/test-llm';
import {
  approximateTokens,
  CONTINUITY_SYSTEM_PROMPT,
  cutToTokens,
  HISTORY_MESSAGE_MAX_TOKENS,
} from './continuity.prompt';
import { ContinuityOutcome, ContinuityService } from './continuity.service';

const REPO = resolve(__dirname, '..', '..', '..');

/** The reference suite's catalogue, plus a disabled intent whose agent owns nothing else. */
const ROUTING_YAML = `
router:
  fallback_agent: billing_agent
intents:
  - name: product_services_information
    description: plans, services, benefits and plan change
    agent: product_agent
    domain: telecom
    mcp_tools: [consultar_plano, listar_servicos]
  - name: billing_invoice_explanation
    description: invoices, payments, charges and contestation
    label: invoices and charges
    agent: billing_agent
    domain: telecom
    mcp_tools: [consultar_fatura]
  - name: retail_order_tracking
    description: order status and delivery
    agent: orders_agent
    domain: retail
    enabled: false
    mcp_tools: [consultar_pedido]
`;

/** The reference suite's base state: product_agent active after "qual é o meu plano?". */
function baseState(message = 'o que está incluso?', overrides: Partial<TurnState> = {}): TurnState {
  return turnStateOf({
    tenant_id: 'acme',
    session_id: 's1',
    active_agent: 'product_agent',
    intent: 'product_services_information',
    domain: 'telecom',
    route_decision: decisionOf({
      route: 'product_agent',
      agent: 'product_agent',
      intent: 'product_services_information',
      domain: 'telecom',
      mcp_tools: ['consultar_plano'],
    }),
    history: [
      { role: 'user', content: 'qual é o meu plano?' },
      { role: 'assistant', content: 'Seu plano atual é Controle 50GB.' },
    ],
    user_text: message,
    sanitized_input: message,
    ...overrides,
  });
}

function withoutActiveAgent(message: string): TurnState {
  const state = baseState(message);
  delete state.active_agent;
  return state;
}

interface Harness {
  service: ContinuityService;
  metrics: MetricsService;
  events: EventBusService;
}

describe('ContinuityService', () => {
  let fake: FakeLlmServer;
  let configDir: string;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    configDir = mkdtempSync(join(tmpdir(), 'continuity-spec-'));
    copyFileSync(join(REPO, 'config', 'agents.yaml'), join(configDir, 'agents.yaml'));
    copyFileSync(join(REPO, 'config', 'tools.yaml'), join(configDir, 'tools.yaml'));
    cpSync(join(REPO, 'config', 'prompts'), join(configDir, 'prompts'), { recursive: true });
    writeFileSync(join(configDir, 'routing.yaml'), ROUTING_YAML);
  });

  afterAll(async () => {
    await fake.stop();
    rmSync(configDir, { recursive: true, force: true });
  });

  beforeEach(() => fake.reset());

  /** `llmBaseUrl: null` leaves the LLM endpoint unconfigured. */
  /** `endpoint: null` leaves the LLM endpoint unconfigured. */
  function harness(env: Record<string, string> = {}, endpoint: FakeLlmServer | null = fake): Harness {
    const { llm, files, events, metrics } = createTestLlm(endpoint, { CONFIG_DIR: configDir });
    const continuityEnv = parseEnvNamespace('continuity', { ENABLE_ROUTE_STICKINESS: 'true', ...env });
    const service = new ContinuityService(continuityEnv, files, llm, events);
    return { service, metrics, events };
  }

  /**
   * Runs evaluate inside a turn context so the emitted events can be inspected like a turn's commit; with `bus`,
   * the events are then published as a commit publishes them.
   */
  async function evaluate(
    service: ContinuityService,
    state: TurnState,
    bus?: EventBusService,
  ): Promise<{ outcome: ContinuityOutcome | null; events: StoredEvent[] }> {
    const context = turnContextOf({
      tenant_id: 'acme',
      agent_id: 'telecom_contas',
      session_id: 's1',
      turn: 2,
    });
    const outcome = await TurnContextStore.run(context, () => service.evaluate(state));
    bus?.publishCommitted(context);
    return { outcome, events: context.events };
  }

  function classifierReplies(reply: FakeReply, times?: number): void {
    fake.script({ model: 'route_continuity', reply, times });
  }

  function classifierRequests(): FakeChatRequest[] {
    return fake.requestsFor('route_continuity');
  }

  function sentPayload(index = 0): Record<string, unknown> {
    const request = classifierRequests()[index];
    const user = request.messages.find((m) => m.role === 'user');
    return JSON.parse(String(user?.content)) as Record<string, unknown>;
  }

  function continuityEvents(events: StoredEvent[]): Record<string, unknown>[] {
    return events.filter((e) => e.name === 'router.continuity').map((e) => e.payload);
  }

  describe('the reference suite', () => {
    it('CONTINUE bypasses the router without any rule, keeping the previous intent, domain and tools', async () => {
      const { service } = harness();
      classifierReplies({ json: { decision: 'CONTINUE', confidence: 0.97, reason: 'same subject' } });
      const { outcome, events } = await evaluate(service, baseState());

      expect(outcome?.decision).toEqual<RouteDecision>({
        route: 'product_agent',
        agent: 'product_agent',
        intent: 'product_services_information',
        domain: 'telecom',
        mcp_tools: ['consultar_plano'],
        confidence: 0.97,
        method: 'continuity',
        reason: 'same subject',
        next_state: null,
        route_bypassed: true,
        metadata: {
          route_bypassed: true,
          continuity_decision: 'CONTINUE',
          continuity_profile: 'route_continuity',
        },
      });
      expect(outcome?.signal).toMatchObject({
        decision: 'CONTINUE',
        confidence: 0.97,
        accepted: true,
        reason: 'same subject',
        fallback_reason: null,
        profile_name: 'route_continuity',
      });
      expect(typeof outcome?.signal.latency_ms).toBe('number');

      expect(classifierRequests()).toHaveLength(1);
      expect(classifierRequests()[0].model).toBe('route_continuity');
      const payload = sentPayload();
      expect(payload.current_message).toBe('o que está incluso?');
      expect(Object.keys(payload.other_agents as object)).not.toContain('product_agent');

      const [event] = continuityEvents(events);
      expect(event).toMatchObject({
        decision: 'CONTINUE',
        confidence: 0.97,
        active_agent: 'product_agent',
        route_bypassed: true,
        profile_name: 'route_continuity',
        accepted: true,
        fallback_reason: null,
        session_id: 's1',
        conversation_key: 'acme:s1',
        turn: 2,
      });
      expect(typeof event.latency_ms).toBe('number');
    });

    it('ROUTE falls back to the Enterprise Router', async () => {
      const { service } = harness();
      classifierReplies({ json: { decision: 'ROUTE', confidence: 0.98, reason: 'new subject' } });
      const { outcome, events } = await evaluate(service, baseState('agora quero contestar uma cobrança'));
      expect(outcome?.decision).toBeNull();
      expect(outcome?.signal).toMatchObject({ decision: 'ROUTE', accepted: true, fallback_reason: null });
      expect(continuityEvents(events)[0]).toMatchObject({ decision: 'ROUTE', route_bypassed: false });
    });

    it('ROUTE without a target leaves the intent to the router', async () => {
      const { service } = harness();
      classifierReplies({ json: { decision: 'ROUTE', confidence: 0.98, reason: 'new subject' } });
      const { outcome } = await evaluate(service, baseState('agora quero contestar uma cobrança'));
      expect(outcome?.route).toBeNull();
    });
  });

  describe('a ROUTE that names its target', () => {
    function routeTo(target: string, confidence = 0.96): void {
      classifierReplies({ json: { decision: 'ROUTE', confidence, reason: 'a charge', target } }, 1);
    }

    it('names the one enabled intent whose capability it copies, label or description, case aside', async () => {
      const { service } = harness();
      routeTo(' Invoices And Charges ');
      const byLabel = await evaluate(service, baseState('agora quero contestar uma cobrança'));
      expect(byLabel.outcome?.decision).toBeNull();
      expect(byLabel.outcome?.route).toEqual({
        intent: 'billing_invoice_explanation',
        confidence: 0.96,
        reason: 'a charge',
      });
      routeTo('plans, services, benefits and plan change');
      const byDescription = await evaluate(service, withoutActiveAgent('quero mudar de plano'));
      expect(byDescription.outcome?.route?.intent).toBe('product_services_information');
    });

    it('names a pending topic the user accepts by its label', async () => {
      const { service } = harness();
      routeTo('segunda via da fatura');
      const pending = {
        operation_id: 'op-2',
        plan_id: 'rt-1',
        intent: 'billing_invoice_explanation',
        agent: 'billing_agent',
        domain: 'telecom',
        tools: ['consultar_fatura'],
        label: 'segunda via da fatura',
        source_text: 'meu plano e a segunda via',
        disposition: 'defer' as const,
        status: 'offered' as const,
        reason: 'multi_intent',
        created_turn: 1,
      };
      const { outcome } = await evaluate(
        service,
        baseState('sim, pode seguir', { pending_topics: [pending] }),
      );
      expect(outcome?.route?.intent).toBe('billing_invoice_explanation');
    });

    it('names nothing for an unknown or disabled capability, below the threshold or on another label', async () => {
      const { service } = harness();
      routeTo('order status and delivery');
      expect((await evaluate(service, baseState('onde está meu pedido?'))).outcome?.route).toBeNull();
      routeTo('something the catalogue does not offer');
      expect((await evaluate(service, baseState('quero um seguro'))).outcome?.route).toBeNull();
      routeTo('invoices and charges', 0.5);
      const unsure = await evaluate(service, baseState('e a cobrança?'));
      expect(unsure.outcome?.signal.fallback_reason).toBe('below_threshold');
      expect(unsure.outcome?.route).toBeNull();
      classifierReplies(
        {
          json: { decision: 'CONTINUE', confidence: 0.97, reason: 'same', target: 'invoices and charges' },
        },
        1,
      );
      const kept = await evaluate(service, baseState());
      expect(kept.outcome?.decision?.route).toBe('product_agent');
      expect(kept.outcome?.route).toBeNull();
    });

    it('names nothing when two enabled intents share the capability it copies', async () => {
      writeFileSync(
        join(configDir, 'routing.yaml'),
        `${ROUTING_YAML}  - name: billing_second_copy
    description: second copy of a bill
    label: invoices and charges
    agent: billing_agent
    domain: telecom
    mcp_tools: [consultar_fatura]
`,
      );
      try {
        const { service } = harness();
        routeTo('invoices and charges');
        expect((await evaluate(service, baseState('e a cobrança?'))).outcome?.route).toBeNull();
      } finally {
        writeFileSync(join(configDir, 'routing.yaml'), ROUTING_YAML);
      }
    });
  });

  describe('fallbacks of the reference suite', () => {
    it('a low-confidence CONTINUE falls back safely', async () => {
      const { service } = harness();
      classifierReplies({ json: { decision: 'CONTINUE', confidence: 0.7, reason: 'maybe' } });
      const { outcome, events } = await evaluate(service, baseState());
      expect(outcome?.decision).toBeNull();
      expect(outcome?.signal).toMatchObject({
        decision: 'CONTINUE',
        confidence: 0.7,
        accepted: false,
        fallback_reason: 'below_threshold',
      });
      expect(continuityEvents(events)[0]).toMatchObject({ accepted: false, route_bypassed: false });
    });

    it('an invalid output falls back safely and is reported as an error evaluation', async () => {
      const { service } = harness();
      classifierReplies({ content: 'not-json' });
      const { outcome, events } = await evaluate(service, baseState());
      expect(outcome?.decision).toBeNull();
      expect(outcome?.signal).toMatchObject({
        decision: 'ROUTE',
        confidence: 0,
        accepted: false,
        reason: 'continuity_error:invalid_output',
        fallback_reason: 'invalid_output',
      });
      expect(continuityEvents(events)[0]).toMatchObject({
        decision: 'ROUTE',
        confidence: 0,
        reason: 'continuity_error:invalid_output',
        fallback_reason: 'invalid_output',
        route_bypassed: false,
      });
    });

    it('without an active agent the classifier still runs once for global session actions', async () => {
      const { service } = harness();
      classifierReplies({ json: { decision: 'ROUTE', confidence: 1, reason: 'first turn' } });
      const { outcome } = await evaluate(service, withoutActiveAgent('qual é o meu plano?'));
      expect(outcome?.decision).toBeNull();
      expect(classifierRequests()).toHaveLength(1);
      expect(sentPayload().active_agent).toBe('');
      expect(sentPayload().active_agent_capabilities).toEqual([]);
    });

    it('HUMAN_HANDOFF is returned as the global human_handoff route', async () => {
      const { service } = harness();
      classifierReplies({
        json: { decision: 'HUMAN_HANDOFF', confidence: 0.99, reason: 'asks for a person' },
      });
      const { outcome, events } = await evaluate(service, baseState('quero falar com um atendente'));
      expect(outcome?.decision).toEqual<RouteDecision>({
        route: 'human_handoff',
        agent: 'human_handoff',
        intent: 'human_handoff',
        domain: null,
        mcp_tools: [],
        confidence: 0.99,
        method: 'continuity',
        reason: 'asks for a person',
        next_state: null,
        route_bypassed: true,
        handoff: true,
        metadata: {
          session_control: 'HUMAN_HANDOFF',
          route_bypassed: true,
          continuity_decision: 'HUMAN_HANDOFF',
          continuity_profile: 'route_continuity',
        },
      });
      expect(continuityEvents(events)[0]).toMatchObject({ decision: 'HUMAN_HANDOFF', route_bypassed: true });
    });

    it('END_SESSION is returned as the global end_session route, without the handoff flag', async () => {
      const { service } = harness();
      classifierReplies({ json: { decision: 'END_SESSION', confidence: 0.98 } });
      const { outcome } = await evaluate(service, baseState('obrigado, era só isso'));
      const decision = outcome?.decision;
      expect(decision).toMatchObject({
        route: 'end_session',
        agent: 'end_session',
        intent: 'end_session',
        method: 'continuity',
        route_bypassed: true,
        reason: 'the user asked to end the conversation',
        metadata: {
          session_control: 'END_SESSION',
          route_bypassed: true,
          continuity_decision: 'END_SESSION',
          continuity_profile: 'route_continuity',
        },
      });
      expect(decision).not.toHaveProperty('handoff');
    });

    it.each([
      ['HUMAN_HANDOFF', 'quero uma pessoa', 'human_handoff'],
      ['END_SESSION', 'obrigado, pode encerrar', 'end_session'],
    ])('%s works on a first turn without an active agent', async (label, message, route) => {
      const { service } = harness();
      classifierReplies({ json: { decision: label, confidence: 0.97 } });
      const state = turnStateOf({
        tenant_id: 'acme',
        session_id: 's1',
        user_text: message,
        sanitized_input: message,
      });
      const { outcome } = await evaluate(service, state);
      expect(outcome?.decision?.route).toBe(route);
      expect(outcome?.decision?.metadata.session_control).toBe(label);
      expect(classifierRequests()).toHaveLength(1);
      expect(sentPayload().recent_history).toEqual([]);
    });

    it('CONTINUE without an active agent falls back to the router (no_active_agent)', async () => {
      const { service } = harness();
      classifierReplies({ json: { decision: 'CONTINUE', confidence: 0.99 } });
      const { outcome, events } = await evaluate(service, withoutActiveAgent('o que está incluso?'));
      expect(outcome?.decision).toBeNull();
      expect(outcome?.signal).toMatchObject({
        decision: 'CONTINUE',
        accepted: false,
        fallback_reason: 'no_active_agent',
      });
      expect(classifierRequests()).toHaveLength(1);
      expect(continuityEvents(events)[0]).toMatchObject({ active_agent: '', route_bypassed: false });
    });

    it.each([
      ['CONTINUE', 'product_agent'],
      ['ROUTE', null],
      ['HUMAN_HANDOFF', 'human_handoff'],
      ['END_SESSION', 'end_session'],
    ])('only the model decides: the same words labelled %s go to %s', async (label, route) => {
      const { service } = harness();
      classifierReplies({ json: { decision: label, confidence: 0.95 } });
      const { outcome } = await evaluate(service, baseState('quero falar com uma pessoa e encerrar o plano'));
      expect(outcome?.decision?.route ?? null).toBe(route);
    });

    it('sends exactly the documented payload, the active agent absent from other_agents', async () => {
      const { service } = harness();
      classifierReplies({ json: { decision: 'ROUTE', confidence: 0.95 } });
      await evaluate(service, baseState());
      const request = classifierRequests()[0];
      expect(request.messages.map((m) => m.role)).toEqual(['system', 'user']);
      expect(request.messages[0].content).toBe(CONTINUITY_SYSTEM_PROMPT);
      const payload = sentPayload();
      expect(Object.keys(payload)).toEqual([
        'active_agent',
        'active_agent_capabilities',
        'other_agents',
        'previous_intent',
        'previous_domain',
        'recent_history',
        'current_message',
      ]);
      expect(payload).toEqual({
        active_agent: 'product_agent',
        active_agent_capabilities: ['plans, services, benefits and plan change'],
        // orders_agent owns only a disabled intent, so it is not offered; an intent's label, where it has one,
        // stands for its description.
        other_agents: { billing_agent: ['invoices and charges'] },
        previous_intent: 'product_services_information',
        previous_domain: 'telecom',
        recent_history: [
          { role: 'user', content: 'qual é o meu plano?' },
          { role: 'assistant', content: 'Seu plano atual é Controle 50GB.' },
        ],
        current_message: 'o que está incluso?',
      });
    });
  });

  describe('after an operation of the active agent ended', () => {
    /** product_agent's plan change ended on turn 2 (the turns are numbered from the context: 3 here). */
    const ended = (overrides: Partial<TurnState> = {}): TurnState =>
      baseState('e agora?', {
        turn: 3,
        last_transaction: {
          ...activeTransactionOf({
            tool_name: 'alterar_plano',
            agent: 'product_agent',
            intent: 'product_services_information',
          }),
          status: 'COMPLETED',
          finished_turn: 2,
        },
        ...overrides,
      });

    it('tells the classifier, once and after the specification’s keys, that it ended', async () => {
      const { service } = harness();
      classifierReplies({ json: { decision: 'ROUTE', confidence: 0.95 } });
      await evaluate(service, ended());
      expect(Object.keys(sentPayload()).at(-1)).toBe('finished_operation');
      expect(sentPayload().finished_operation).toEqual({ operation: 'alterar_plano', status: 'COMPLETED' });

      await evaluate(service, ended({ turn: 4 }));
      await evaluate(service, ended({ active_agent: 'billing_agent' }));
      await evaluate(service, ended({ active_transaction: activeTransactionOf({ agent: 'product_agent' }) }));
      for (const index of [1, 2, 3]) expect(sentPayload(index)).not.toHaveProperty('finished_operation');
    });

    it('a CONTINUE goes on with the operation’s intent, not the state that held it', async () => {
      const { service } = harness();
      classifierReplies({ json: { decision: 'CONTINUE', confidence: 0.95 } });
      const held = decisionOf({
        route: 'product_agent',
        agent: 'product_agent',
        intent: 'state:WAITING_PRODUCT_CONFIRMATION',
        domain: 'telecom',
        method: 'state_policy',
        next_state: 'WAITING_PRODUCT_CONFIRMATION',
        metadata: { transaction_intent: 'product_services_information' },
      });
      const after = await evaluate(
        service,
        ended({ route_decision: held, intent: held.intent, next_state: null }),
      );
      expect(after.outcome?.decision).toMatchObject({
        intent: 'product_services_information',
        next_state: null,
      });
      // While the operation waits, a CONTINUE holds its state as the router would.
      const waiting = await evaluate(
        service,
        ended({
          route_decision: held,
          next_state: 'WAITING_PRODUCT_CONFIRMATION',
          active_transaction: activeTransactionOf({ agent: 'product_agent' }),
        }),
      );
      expect(waiting.outcome?.decision).toMatchObject({
        intent: 'state:WAITING_PRODUCT_CONFIRMATION',
        next_state: 'WAITING_PRODUCT_CONFIRMATION',
      });
    });
  });

  describe('failures take the Enterprise Router', () => {
    it('a timeout is recorded as timeout', async () => {
      const { service } = harness();
      // The test profile's timeout is 1 s.
      classifierReplies({ json: { decision: 'CONTINUE', confidence: 0.99 }, delayMs: 1500 });
      const { outcome, events } = await evaluate(service, baseState());
      expect(outcome?.decision).toBeNull();
      expect(outcome?.signal).toMatchObject({
        decision: 'ROUTE',
        confidence: 0,
        accepted: false,
        reason: 'continuity_error:timeout',
        fallback_reason: 'timeout',
      });
      expect(outcome?.signal.latency_ms).toBeGreaterThanOrEqual(900);
      expect(continuityEvents(events)[0]).toMatchObject({
        decision: 'ROUTE',
        confidence: 0,
        reason: 'continuity_error:timeout',
        fallback_reason: 'timeout',
      });
    });

    it('an HTTP 500 is recorded as error', async () => {
      const { service } = harness();
      classifierReplies({ status: 500 });
      const { outcome, events } = await evaluate(service, baseState());
      expect(outcome?.decision).toBeNull();
      expect(outcome?.signal).toMatchObject({
        decision: 'ROUTE',
        confidence: 0,
        reason: 'continuity_error:http_error',
        fallback_reason: 'error',
      });
      expect(continuityEvents(events)).toHaveLength(1);
    });

    it('a malformed completion body is recorded as invalid_output', async () => {
      const { service } = harness();
      classifierReplies({ rawBody: '{"choices": []}' });
      const { outcome } = await evaluate(service, baseState());
      expect(outcome?.decision).toBeNull();
      expect(outcome?.signal.fallback_reason).toBe('invalid_output');
    });

    it('no LLM endpoint configured: the feature is off, with no request, event or decision', async () => {
      const { service } = harness({}, null);
      const { outcome, events } = await evaluate(service, baseState());
      expect(service.enabled).toBe(false);
      expect(outcome).toBeNull();
      expect(events).toHaveLength(0);
      expect(fake.requests).toHaveLength(0);
    });

    it.each<[string, unknown]>([
      ['an unknown label', { decision: 'MAYBE', confidence: 0.99 }],
      ['a label with another spelling', { decision: 'CONTINUAR', confidence: 0.99 }],
      ['a missing label', { confidence: 0.99 }],
      ['a confidence above 1', { decision: 'CONTINUE', confidence: 1.5 }],
      ['a negative confidence', { decision: 'CONTINUE', confidence: -0.1 }],
      ['a confidence given as a string', { decision: 'CONTINUE', confidence: '0.99' }],
      ['a missing confidence', { decision: 'HUMAN_HANDOFF' }],
      ['a null confidence', { decision: 'END_SESSION', confidence: null }],
      ['a reason that is not text', { decision: 'CONTINUE', confidence: 0.99, reason: 42 }],
    ])('%s is invalid output, never accepted', async (_label, answer) => {
      const { service } = harness();
      classifierReplies({ json: answer });
      const { outcome } = await evaluate(service, baseState());
      expect(outcome?.decision).toBeNull();
      expect(outcome?.signal).toMatchObject({
        decision: 'ROUTE',
        confidence: 0,
        accepted: false,
        fallback_reason: 'invalid_output',
      });
    });
  });

  describe('parsing and thresholds', () => {
    it.each([
      ['a code fence', '```json\n{"decision": "CONTINUE", "confidence": 0.95, "reason": "same"}\n```'],
      ['prose around the object', 'Here you go: {"decision": "CONTINUE", "confidence": 0.95} done.'],
      ['a lower-case label', '{"decision": " continue ", "confidence": 0.95}'],
    ])('accepts %s', async (_label, content) => {
      const { service } = harness();
      classifierReplies({ content });
      const { outcome } = await evaluate(service, baseState());
      expect(outcome?.decision?.route).toBe('product_agent');
      expect(outcome?.signal.decision).toBe('CONTINUE');
    });

    it('accepts a confidence exactly equal to the threshold and rejects one just below', async () => {
      const { service } = harness({ ROUTE_STICKINESS_CONFIDENCE_THRESHOLD: '0.9' });
      classifierReplies({ json: { decision: 'CONTINUE', confidence: 0.9 } }, 1);
      classifierReplies({ json: { decision: 'CONTINUE', confidence: 0.8999 } }, 1);
      const equal = await evaluate(service, baseState());
      expect(equal.outcome?.signal).toMatchObject({ accepted: true, fallback_reason: null });
      expect(equal.outcome?.decision?.route).toBe('product_agent');
      const below = await evaluate(service, baseState());
      expect(below.outcome?.signal).toMatchObject({ accepted: false, fallback_reason: 'below_threshold' });
      expect(below.outcome?.decision).toBeNull();
    });

    it.each(['HUMAN_HANDOFF', 'END_SESSION'])('a low-confidence %s is not accepted', async (label) => {
      const { service } = harness();
      classifierReplies({ json: { decision: label, confidence: 0.5 } });
      const { outcome } = await evaluate(service, baseState());
      expect(outcome?.decision).toBeNull();
      expect(outcome?.signal).toMatchObject({ decision: label, fallback_reason: 'below_threshold' });
    });

    it('caps the output at min(profile max_tokens, ROUTE_STICKINESS_MAX_TOKENS) and asks for JSON', async () => {
      classifierReplies({ json: { decision: 'ROUTE', confidence: 0.95 } });
      await evaluate(harness({ ROUTE_STICKINESS_MAX_TOKENS: '40' }).service, baseState());
      await evaluate(harness({ ROUTE_STICKINESS_MAX_TOKENS: '500' }).service, baseState());
      const [small, large] = classifierRequests();
      expect(small.body.max_tokens).toBe(40);
      // The test profile caps route_continuity at 80.
      expect(large.body.max_tokens).toBe(80);
      expect(small.body.response_format).toEqual({ type: 'json_object' });
      expect(small.body.temperature).toBe(0);
    });

    it('uses the profile named by ROUTE_STICKINESS_LLM_PROFILE', async () => {
      const { service } = harness({ ROUTE_STICKINESS_LLM_PROFILE: 'router' });
      fake.script({ model: 'router', reply: { json: { decision: 'CONTINUE', confidence: 0.95 } } });
      const { outcome } = await evaluate(service, baseState());
      expect(fake.requestsFor('router')).toHaveLength(1);
      expect(classifierRequests()).toHaveLength(0);
      expect(outcome?.signal.profile_name).toBe('router');
      expect(outcome?.decision?.metadata.continuity_profile).toBe('router');
    });
  });

  describe('history', () => {
    const long = `Sua fatura de março ${'tem vários itens detalhados aqui. '.repeat(40)}Quer contestar algum?`;
    const history: TurnState['history'] = [
      { role: 'user', content: 'turn 1 question' },
      { role: 'assistant', content: 'turn 1 answer' },
      { role: 'user', content: 'turn 2 question' },
      { role: 'assistant', content: long },
      { role: 'user', content: '   ' },
      { role: 'user', content: 'turn 3 question' },
      { role: 'assistant', content: 'turn 3 answer' },
    ];

    it('sends the last N user+assistant turns, each message truncated, empty ones skipped', async () => {
      const { service } = harness({ ROUTE_STICKINESS_HISTORY_TURNS: '2' });
      classifierReplies({ json: { decision: 'ROUTE', confidence: 0.95 } });
      await evaluate(service, baseState('turn 4 question', { history }));
      expect(sentPayload().recent_history).toEqual([
        { role: 'user', content: 'turn 2 question' },
        { role: 'assistant', content: cutToTokens(long, HISTORY_MESSAGE_MAX_TOKENS) },
        { role: 'user', content: 'turn 3 question' },
        { role: 'assistant', content: 'turn 3 answer' },
      ]);
    });

    it('cuts a long message to its start and its end within the token budget', () => {
      const cut = cutToTokens(long, HISTORY_MESSAGE_MAX_TOKENS);
      expect(approximateTokens(long)).toBeGreaterThan(HISTORY_MESSAGE_MAX_TOKENS * 4);
      expect(approximateTokens(cut)).toBeLessThanOrEqual(HISTORY_MESSAGE_MAX_TOKENS);
      expect(cut).toMatch(/^Sua fatura de março tem .* … .* Quer contestar algum\?$/);
      expect(cutToTokens('curta e completa', HISTORY_MESSAGE_MAX_TOKENS)).toBe('curta e completa');
      // One unbroken run of letters is still cut, in runs of 16.
      expect(approximateTokens(cutToTokens('x'.repeat(2000), 20))).toBeLessThanOrEqual(20);
    });

    it('estimates tokens by words, numbers and symbols, not by characters', () => {
      expect(approximateTokens('o que está incluso?')).toBe(6);
      expect(approximateTokens('atendimento')).toBe(3);
      expect(approximateTokens('R$ 49,90')).toBe(5);
    });

    it('ROUTE_STICKINESS_HISTORY_TURNS=0 sends no history', async () => {
      const { service } = harness({ ROUTE_STICKINESS_HISTORY_TURNS: '0' });
      classifierReplies({ json: { decision: 'ROUTE', confidence: 0.95 } });
      await evaluate(service, baseState('turn 4 question', { history }));
      expect(sentPayload().recent_history).toEqual([]);
    });

    it('never duplicates the current message when the history already ends with it', async () => {
      const { service } = harness({ ROUTE_STICKINESS_HISTORY_TURNS: '1' });
      classifierReplies({ json: { decision: 'ROUTE', confidence: 0.95 } });
      const appended = [...history, { role: 'user' as const, content: 'turn 4 question' }];
      await evaluate(service, baseState('turn 4 question', { history: appended }));
      expect(sentPayload().recent_history).toEqual([
        { role: 'user', content: 'turn 3 question' },
        { role: 'assistant', content: 'turn 3 answer' },
      ]);
      expect(sentPayload().current_message).toBe('turn 4 question');
    });

    it('keeps a repeated message that the previous turn already answered', async () => {
      const { service } = harness({ ROUTE_STICKINESS_HISTORY_TURNS: '1' });
      classifierReplies({ json: { decision: 'ROUTE', confidence: 0.95 } });
      await evaluate(service, baseState('turn 3 question', { history }));
      expect(sentPayload().recent_history).toEqual([
        { role: 'user', content: 'turn 3 question' },
        { role: 'assistant', content: 'turn 3 answer' },
      ]);
    });

    it('classifies the sanitized input when there is one', async () => {
      const { service } = harness();
      classifierReplies({ json: { decision: 'ROUTE', confidence: 0.95 } });
      await evaluate(
        service,
        baseState('raw', { user_text: 'meu cpf é 123', sanitized_input: 'meu cpf é ***' }),
      );
      expect(sentPayload().current_message).toBe('meu cpf é ***');
    });
  });

  describe('the active agent and the facts it keeps', () => {
    it.each([
      ['a session node', 'human_handoff'],
      ['an agent whose only intent is disabled', 'orders_agent'],
      ['an unknown name', 'legacy_agent'],
    ])('%s is not a valid active agent: CONTINUE becomes no_active_agent', async (_label, agent) => {
      const { service } = harness();
      classifierReplies({ json: { decision: 'CONTINUE', confidence: 0.99 } });
      const { outcome } = await evaluate(service, baseState('e depois?', { active_agent: agent }));
      expect(outcome?.decision).toBeNull();
      expect(outcome?.signal.fallback_reason).toBe('no_active_agent');
      expect(sentPayload().active_agent).toBe('');
    });

    it('an accepted CONTINUE during a transaction keeps its next_state', async () => {
      const { service } = harness();
      classifierReplies({ json: { decision: 'CONTINUE', confidence: 0.99 } });
      const state = baseState('qual seria o valor final?', { next_state: 'WAITING_PRODUCT_CONFIRMATION' });
      const { outcome } = await evaluate(service, state);
      expect(outcome?.decision).toMatchObject({
        route: 'product_agent',
        next_state: 'WAITING_PRODUCT_CONFIRMATION',
      });
    });

    it('never carries a session-control state into a continued agent', async () => {
      const { service } = harness();
      classifierReplies({ json: { decision: 'CONTINUE', confidence: 0.99 } });
      const { outcome } = await evaluate(service, baseState('e o roaming?', { next_state: 'SESSION_ENDED' }));
      expect(outcome?.decision?.next_state).toBeNull();
    });

    it('when another decision replaced route_decision, the agent keeps its own intent and tools', async () => {
      const { service } = harness();
      classifierReplies({ json: { decision: 'CONTINUE', confidence: 0.99 } });
      const afterBlockedTurn = baseState('e o roaming?', {
        intent: 'input_guardrail_blocked',
        mcp_tools: [],
        route_decision: decisionOf({
          route: 'blocked',
          agent: null,
          intent: 'input_guardrail_blocked',
          method: 'guardrail',
        }),
      });
      const { outcome } = await evaluate(service, afterBlockedTurn);
      expect(outcome?.decision).toMatchObject({
        route: 'product_agent',
        intent: 'continuity',
        domain: 'telecom',
        mcp_tools: ['consultar_plano', 'listar_servicos'],
      });
    });
  });

  describe('feature switch, metrics and shadow mode', () => {
    it('disabled: no classifier request at all and no decision', async () => {
      const { service } = harness({ ENABLE_ROUTE_STICKINESS: 'false' });
      classifierReplies({ json: { decision: 'CONTINUE', confidence: 0.99 } });
      const { outcome, events } = await evaluate(service, baseState());
      expect(service.enabled).toBe(false);
      expect(outcome).toBeNull();
      expect(fake.requests).toHaveLength(0);
      expect(events).toHaveLength(0);
      expect(service.shouldShadow()).toBe(false);
    });

    it('an empty message is not classified', async () => {
      const { service } = harness();
      const { outcome } = await evaluate(service, baseState('   ', { sanitized_input: undefined }));
      expect(outcome).toBeNull();
      expect(fake.requests).toHaveLength(0);
    });

    it('counts every evaluation by decision, acceptance and fallback reason', async () => {
      const { service, metrics, events } = harness();
      classifierReplies({ json: { decision: 'CONTINUE', confidence: 0.99 } }, 1);
      classifierReplies({ json: { decision: 'CONTINUE', confidence: 0.1 } }, 1);
      classifierReplies({ status: 503 }, 1);
      await evaluate(service, baseState(), events);
      await evaluate(service, baseState(), events);
      await evaluate(service, baseState(), events);
      const values = (await metrics.continuityDecisions.get()).values.map((v) => ({
        labels: v.labels,
        value: v.value,
      }));
      expect(values).toEqual(
        expect.arrayContaining([
          { labels: { decision: 'CONTINUE', accepted: 'true', fallback_reason: 'none' }, value: 1 },
          {
            labels: { decision: 'CONTINUE', accepted: 'false', fallback_reason: 'below_threshold' },
            value: 1,
          },
          { labels: { decision: 'ROUTE', accepted: 'false', fallback_reason: 'error' }, value: 1 },
        ]),
      );
    });

    it('shadow sampling follows ROUTE_STICKINESS_SHADOW_RATE', () => {
      expect(harness().service.shouldShadow()).toBe(false);
      expect(harness({ ROUTE_STICKINESS_SHADOW_RATE: '1' }).service.shouldShadow()).toBe(true);
      const half = harness({ ROUTE_STICKINESS_SHADOW_RATE: '0.5' }).service;
      const random = jest.spyOn(Math, 'random');
      try {
        random.mockReturnValueOnce(0.49);
        expect(half.shouldShadow()).toBe(true);
        random.mockReturnValueOnce(0.5);
        expect(half.shouldShadow()).toBe(false);
      } finally {
        random.mockRestore();
      }
    });

    it('a failing shadow router run resolves to null and records nothing', async () => {
      const { service, metrics } = harness({ ROUTE_STICKINESS_SHADOW_RATE: '1' });
      await expect(
        service.runShadow(turnStateOf(), 'product_agent', () => Promise.reject(new Error('down'))),
      ).resolves.toBeNull();
      expect((await metrics.continuityShadow.get()).values).toEqual([]);
    });

    it.each(['human_handoff', 'end_session'])('never shadows a %s decision', async (node) => {
      const { service, metrics } = harness({ ROUTE_STICKINESS_SHADOW_RATE: '1' });
      const route = jest.fn(() => Promise.reject(new Error('must not run')));
      await expect(service.runShadow(turnStateOf(), node, route)).resolves.toBeNull();
      expect(route).not.toHaveBeenCalled();
      expect((await metrics.continuityShadow.get()).values).toEqual([]);
    });

    it('records the shadow router decision and whether it agreed', async () => {
      const { service, metrics, events: bus } = harness({ ROUTE_STICKINESS_SHADOW_RATE: '1' });
      const router = (agent: DomainAgentNode): RouteDecision =>
        decisionOf({ route: agent, agent, reason: '' });
      const context = turnContextOf({
        tenant_id: 'acme',
        agent_id: 'telecom_contas',
        session_id: 's1',
        turn: 1,
      });
      const { events } = context;
      await TurnContextStore.run(context, () => {
        expect(service.recordShadow('product_agent', router('billing_agent'))).toBe(false);
        expect(service.recordShadow('billing_agent', router('billing_agent'))).toBe(true);
        return Promise.resolve();
      });
      bus.publishCommitted(context);
      expect(events.map((e) => e.payload)).toEqual([
        expect.objectContaining({
          continuity_agent: 'product_agent',
          router_agent: 'billing_agent',
          router_intent: 'billing_invoice_explanation',
          router_method: 'keyword',
          agreed: false,
        }),
        expect.objectContaining({ continuity_agent: 'billing_agent', agreed: true }),
      ]);
      expect(events.every((e) => e.name === 'router.continuity.shadow')).toBe(true);
      const values = (await metrics.continuityShadow.get()).values;
      expect(values).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ labels: { agreed: 'false' }, value: 1 }),
          expect.objectContaining({ labels: { agreed: 'true' }, value: 1 }),
        ]),
      );
    });
  });
});
