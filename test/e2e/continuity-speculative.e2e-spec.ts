import { FakeChatRequest, FakeLlmServer, GUARDRAILS_ALLOW, lastUserMessage } from '../support/fake-llm';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';

async function startWithStrategy(strategy: string): Promise<{ fake: FakeLlmServer; app: TestApp }> {
  const fake = await FakeLlmServer.start();
  const app = await startTestApp({
    fakeLlm: fake,
    env: {
      ENABLE_ROUTE_STICKINESS: 'true',
      ROUTE_STICKINESS_STRATEGY: strategy,
      RAG_INGEST_ON_START: 'false',
    },
  });
  return { fake, app };
}

/** ROUTE_STICKINESS_STRATEGY=speculative: the router's LLM stage starts together with the classifier. */
describe('speculative stickiness strategy', () => {
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    ({ fake, app } = await startWithStrategy('speculative'));
  }, 240000);

  afterAll(async () => {
    await app.close();
    await fake.stop();
  });

  /** Sends one turn of the conversation `sessionId`. */
  const sender = (sessionId: string) => (text: string) =>
    app.post<Record<string, unknown>>('/v1/channels/web/messages', {
      tenant_id: 'acme',
      agent_id: 'telecom_contas',
      session_id: sessionId,
      text,
    });

  const currentMessage = (body: string) => {
    try {
      const message = (JSON.parse(body) as { current_message?: unknown }).current_message;
      return typeof message === 'string' ? message : '';
    } catch {
      return '';
    }
  };

  it('starts the router with the classifier, uses it on ROUTE and keeps only the cost of a discarded run', async () => {
    fake.script({
      model: 'route_continuity',
      reply: (req) =>
        currentMessage(lastUserMessage(req)).startsWith('e mais')
          ? { json: { decision: 'CONTINUE', confidence: 0.97, reason: 'follow-up' }, delayMs: 400 }
          : { json: { decision: 'ROUTE', confidence: 0.95, reason: 'new subject' }, delayMs: 400 },
    });
    fake.script({
      model: 'router',
      reply: {
        json: { intent: 'product_services_information', confidence: 0.9, reason: 'plan question' },
        delayMs: 100,
      },
    });
    fake.script({ model: 'agent', reply: { content: 'Seu pacote inclui 50GB.' } });
    fake.script(GUARDRAILS_ALLOW);
    fake.setFallback({ json: { verdict: 'allow', confidence: 0.99, reason: 'ok', score: 1, passed: true } });

    const sessionId = uniqueId('spec');
    const send = sender(sessionId);

    const first = await send('preciso de ajuda com uma coisa do meu celular');
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ route: 'product_agent', route_bypassed: false });
    expect((first.body.route_decision as { method: string }).method).toBe('llm');
    const [classifier] = fake.requestsFor('route_continuity');
    const [router] = fake.requestsFor('router');
    // Both started before the classifier (400 ms) could have answered: they ran together.
    expect(Math.abs(router.at - classifier.at)).toBeLessThan(300);

    const second = await send('e mais detalhes sobre isso?');
    expect(second.body).toMatchObject({ route: 'product_agent', route_bypassed: true });
    expect((second.body.route_decision as { method: string }).method).toBe('continuity');
    expect(fake.requestsFor('router')).toHaveLength(2);

    const events: { turn: number; name: string; payload: Record<string, unknown> }[] =
      await app.dataSource.query(
        'SELECT turn, name, payload FROM session_events WHERE conversation_key = $1 ORDER BY id',
        [`acme:${sessionId}`],
      );
    const ofTurn = (turn: number, name: string) => events.filter((e) => e.turn === turn && e.name === name);
    expect(ofTurn(1, 'router.decision')).toHaveLength(1);
    // Turn 2: the discarded router run left no decision on record, only the cost of its LLM call.
    expect(ofTurn(2, 'router.decision')).toHaveLength(0);
    const routerCalls = ofTurn(2, 'llm.call').filter((e) => e.payload.profile === 'router');
    expect(routerCalls).toHaveLength(1);
    expect(routerCalls[0].payload.speculative).toBe('discarded');
  });

  it("discards the speculation when a ROUTE names its intent, and takes the classifier's route", async () => {
    fake.reset();
    fake.script({
      model: 'route_continuity',
      reply: {
        json: { decision: 'ROUTE', confidence: 0.95, reason: 'plan question', target: 'planos e serviços' },
        delayMs: 50,
      },
    });
    fake.script({
      model: 'router',
      reply: { json: { intent: 'billing_invoice_explanation', confidence: 0.9 }, delayMs: 300 },
    });
    fake.script({ model: 'agent', reply: { content: 'Seu pacote inclui 50GB.', delayMs: 600 } });
    fake.script(GUARDRAILS_ALLOW);
    const sessionId = uniqueId('spec-named');
    const res = await sender(sessionId)('preciso de ajuda com uma coisa do meu celular');
    expect(res.body).toMatchObject({
      route: 'product_agent',
      route_bypassed: true,
      route_decision: { method: 'continuity', intent: 'product_services_information' },
    });
    const events: { name: string; payload: Record<string, unknown> }[] = await app.dataSource.query(
      'SELECT name, payload FROM session_events WHERE conversation_key = $1 AND turn = 1 ORDER BY id',
      [`acme:${sessionId}`],
    );
    expect(events.filter((e) => e.name === 'router.decision').map((e) => e.payload.method)).toEqual([
      'continuity',
    ]);
    const routerCalls = events.filter((e) => e.name === 'llm.call' && e.payload.profile === 'router');
    expect(routerCalls.map((e) => e.payload.speculative)).toEqual(['discarded']);
  });

  it('keeps the cost of a discarded router that answers after the classifier decided', async () => {
    fake.reset();
    fake.script({
      model: 'route_continuity',
      reply: (req) =>
        currentMessage(lastUserMessage(req)).startsWith('e mais')
          ? { json: { decision: 'CONTINUE', confidence: 0.97, reason: 'follow-up' }, delayMs: 50 }
          : { json: { decision: 'ROUTE', confidence: 0.95, reason: 'new subject' }, delayMs: 50 },
    });
    fake.script({
      model: 'router',
      reply: { json: { intent: 'product_services_information', confidence: 0.9 }, delayMs: 500 },
    });
    // The agent answers after the slow router, so the turn is still open when the router's call ends.
    fake.script({ model: 'agent', reply: { content: 'Seu pacote inclui 50GB.', delayMs: 900 } });
    fake.script(GUARDRAILS_ALLOW);
    const sessionId = uniqueId('spec-late');
    const send = sender(sessionId);
    await send('preciso de ajuda com uma coisa do meu celular');
    expect((await send('e mais detalhes sobre isso?')).body).toMatchObject({ route_bypassed: true });
    const calls: { payload: Record<string, unknown> }[] = await app.dataSource.query(
      "SELECT payload FROM session_events WHERE conversation_key = $1 AND turn = 2 AND name = 'llm.call'",
      [`acme:${sessionId}`],
    );
    expect(calls.filter((c) => c.payload.profile === 'router').map((c) => c.payload.speculative)).toEqual([
      'discarded',
    ]);
  });
});

/**
 * ROUTE_STICKINESS_STRATEGY=adaptive (the default): the state policy and the keyword stage run first; the router's
 * model starts with the classifier only when neither settles the turn, and a settled turn never calls it.
 */
describe('adaptive stickiness strategy', () => {
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    ({ fake, app } = await startWithStrategy('adaptive'));
  }, 240000);

  afterAll(async () => {
    await app.close();
    await fake.stop();
  });

  it('speculates only on turns the keyword stage does not settle', async () => {
    const labels: Record<string, string> = {
      'preciso de ajuda com uma coisa do meu celular': 'ROUTE',
      'e mais detalhes sobre isso?': 'CONTINUE',
      'agora sobre a fatura de março': 'ROUTE',
      'e o vencimento da fatura?': 'CONTINUE',
    };
    fake.script({
      model: 'route_continuity',
      reply: (req) => {
        const payload = JSON.parse(lastUserMessage(req)) as { current_message: string };
        const decision = labels[payload.current_message] ?? 'ROUTE';
        return { json: { decision, confidence: 0.97, reason: 'scripted' }, delayMs: 400 };
      },
    });
    fake.script({
      model: 'router',
      reply: { json: { intent: 'product_services_information', confidence: 0.9 }, delayMs: 100 },
    });
    fake.script({ model: 'agent', reply: { content: 'Certo.' } });
    fake.script(GUARDRAILS_ALLOW);
    const sessionId = uniqueId('adaptive');
    const send = async (text: string) => {
      const before = fake.requests.length;
      const response = await app.post<{
        route: string;
        route_bypassed: boolean;
        route_decision: { method: string };
      }>('/v1/channels/web/messages', {
        tenant_id: 'acme',
        agent_id: 'telecom_contas',
        session_id: sessionId,
        text,
      });
      return { body: response.body, requests: fake.requests.slice(before) };
    };
    const ofModel = (requests: FakeChatRequest[], model: string) => requests.filter((r) => r.model === model);

    // No keyword: the router's model starts with the classifier and decides the ROUTE turn.
    const unsettled = await send('preciso de ajuda com uma coisa do meu celular');
    expect(unsettled.body).toMatchObject({ route: 'product_agent', route_bypassed: false });
    const [classifier] = ofModel(unsettled.requests, 'route_continuity');
    const [router] = ofModel(unsettled.requests, 'router');
    expect(Math.abs(router.at - classifier.at)).toBeLessThan(300);

    // No keyword, CONTINUE: the speculation was started and discarded.
    const discarded = await send('e mais detalhes sobre isso?');
    expect(discarded.body).toMatchObject({ route_bypassed: true });
    expect(ofModel(discarded.requests, 'router')).toHaveLength(1);

    // "fatura" settles the route without a model: ROUTE takes the keyword decision, the router's model never runs.
    const keyword = await send('agora sobre a fatura de março');
    expect(keyword.body).toMatchObject({ route: 'billing_agent', route_bypassed: false });
    expect(keyword.body.route_decision.method).toBe('keyword');
    expect(ofModel(keyword.requests, 'router')).toHaveLength(0);

    // Settled and CONTINUE: the classifier alone.
    const kept = await send('e o vencimento da fatura?');
    expect(kept.body).toMatchObject({ route: 'billing_agent', route_bypassed: true });
    expect(ofModel(kept.requests, 'router')).toHaveLength(0);
    expect(ofModel(kept.requests, 'route_continuity')).toHaveLength(1);
  });
});
