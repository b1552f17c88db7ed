import { FakeLlmServer, GUARDRAILS_ALLOW, lastUserMessage } from '../support/fake-llm';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';

/** ROUTE_STICKINESS_STRATEGY=speculative: the router's LLM stage starts together with the classifier. */
describe('speculative stickiness strategy', () => {
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        ENABLE_ROUTE_STICKINESS: 'true',
        ROUTE_STICKINESS_STRATEGY: 'speculative',
        RAG_INGEST_ON_START: 'false',
      },
    });
  }, 240000);

  afterAll(async () => {
    await app.close();
    await fake.stop();
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
    const send = (text: string) =>
      app.post<Record<string, unknown>>('/v1/channels/web/messages', {
        tenant_id: 'acme',
        agent_id: 'telecom_contas',
        session_id: sessionId,
        text,
      });

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
    const send = (text: string) =>
      app.post<Record<string, unknown>>('/v1/channels/web/messages', {
        tenant_id: 'acme',
        agent_id: 'telecom_contas',
        session_id: sessionId,
        text,
      });
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
