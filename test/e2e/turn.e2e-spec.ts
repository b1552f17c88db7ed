import { FakeLlmServer, GUARDRAILS_ALLOW } from '../support/fake-llm';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';

describe('POST /v1/channels/:channel/messages', () => {
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    app = await startTestApp({ fakeLlm: fake });
  });

  afterAll(async () => {
    await app.close();
    await fake.stop();
  });

  beforeEach(() => fake.reset());

  it('runs a turn with the agent answering through the fake LLM and stores the events in order', async () => {
    fake.script({ model: 'agent', reply: { content: 'Sua fatura de março é R$ 99,90.' } });
    fake.script(GUARDRAILS_ALLOW);
    fake.setFallback({ json: { intent: 'unknown', confidence: 0, reason: 'test fallback' } });
    const sessionId = uniqueId();
    const res = await app.post('/v1/channels/web/messages', {
      tenant_id: 'acme',
      agent_id: 'telecom_contas',
      session_id: sessionId,
      text: 'Minha fatura veio alta',
      message_id: 'm-1',
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      session_id: sessionId,
      conversation_key: `acme:${sessionId}`,
      message_id: 'm-1',
      turn: 1,
      answer: 'Sua fatura de março é R$ 99,90.',
      route: 'billing_agent',
      active_agent: 'billing_agent',
      route_bypassed: false,
      session_ended: false,
      human_handoff_requested: false,
      blocked: false,
    });
    expect(typeof res.body.latency_ms).toBe('number');
    expect(res.body.route_decision).toMatchObject({ route: 'billing_agent', agent: 'billing_agent' });
    expect(res.headers.get('x-request-id')).toBeTruthy();

    const agentCalls = fake.requestsFor('agent');
    expect(agentCalls).toHaveLength(1);
    expect(agentCalls[0].messages[0].content).toContain('billing_agent');

    const rows: { name: string; turn: number; payload: Record<string, unknown> }[] =
      await app.dataSource.query(
        'SELECT name, turn, payload FROM session_events WHERE conversation_key = $1 ORDER BY id',
        [`acme:${sessionId}`],
      );
    const names = rows.map((r) => r.name);
    expect(names[0]).toBe('NOC.001');
    expect(names[1]).toBe('AGENT_STARTED');
    expect(names[names.length - 1]).toBe('AGENT_COMPLETED');
    expect(names).toContain('router.decision');
    for (const row of rows) {
      expect(row.turn).toBe(1);
      expect(row.payload).toMatchObject({
        tenant_id: 'acme',
        agent_id: 'telecom_contas',
        session_id: sessionId,
        turn: 1,
      });
      expect(typeof row.payload.at).toBe('string');
    }
  });

  it('numbers turns and keeps history across turns', async () => {
    fake.script({ model: 'agent', reply: (req) => ({ content: `eco ${req.messages.length}` }) });
    fake.script(GUARDRAILS_ALLOW);
    fake.setFallback({ json: { intent: 'unknown', confidence: 0 } });
    const sessionId = uniqueId();
    const send = (text: string) =>
      app.post('/v1/channels/web/messages', {
        tenant_id: 'acme',
        agent_id: 'telecom_contas',
        session_id: sessionId,
        text,
      });
    const first = await send('primeira mensagem sobre fatura');
    const second = await send('segunda mensagem sobre fatura');
    expect(first.body.turn).toBe(1);
    expect(second.body.turn).toBe(2);
    const agentCalls = fake.requestsFor('agent');
    const secondCall = agentCalls[agentCalls.length - 1];
    const contents = secondCall.messages.map((m) => m.content);
    expect(contents).toContain('primeira mensagem sobre fatura');
    expect(contents).toContain(first.body.answer);
    expect(contents.filter((c) => c === 'segunda mensagem sobre fatura')).toHaveLength(1);
  });

  it('rejects a bad body with 400 and field errors in the error envelope', async () => {
    const res = await app.post<{ error: { code: string; details: { field: string }[] }; request_id: string }>(
      '/v1/channels/web/messages',
      { tenant_id: 'acme:bad', agent_id: 'telecom_contas', text: '' },
    );
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    const fields = res.body.error.details.map((d) => d.field).sort();
    expect(fields).toEqual(expect.arrayContaining(['session_id', 'tenant_id', 'text']));
    expect(res.body.request_id).toBeTruthy();
    // The route declares no query parameter: any one is refused like an unknown body field.
    const query = await app.post<{ error: { code: string; details: { field: string }[] } }>(
      '/v1/channels/web/messages?debug=1',
      { tenant_id: 'acme', agent_id: 'telecom_contas', session_id: uniqueId(), text: 'oi' },
    );
    expect(query.status).toBe(400);
    expect(query.body.error).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ field: 'debug' }] });
  });

  it('rejects an unknown agent_id and a session bound to another agent', async () => {
    const sessionId = uniqueId();
    fake.script(GUARDRAILS_ALLOW);
    fake.setFallback({ content: 'ok' });
    const unknown = await app.post<{ error: { code: string } }>('/v1/channels/web/messages', {
      tenant_id: 'acme',
      agent_id: 'nobody',
      session_id: sessionId,
      text: 'oi',
    });
    expect(unknown.status).toBe(400);
    const first = await app.post('/v1/channels/web/messages', {
      tenant_id: 'acme',
      agent_id: 'telecom_contas',
      session_id: sessionId,
      text: 'oi',
    });
    expect(first.status).toBe(200);
    const other = await app.post<{ error: { code: string } }>('/v1/channels/web/messages', {
      tenant_id: 'acme',
      agent_id: 'retail_orders',
      session_id: sessionId,
      text: 'oi',
    });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('AGENT_MISMATCH');
  });

  it('answers with the fallback message when the agent LLM fails, and the turn succeeds', async () => {
    fake.script({ model: 'agent', reply: { status: 500 } });
    fake.script(GUARDRAILS_ALLOW);
    fake.setFallback({ json: { intent: 'unknown', confidence: 0 } });
    const res = await app.post('/v1/channels/web/messages', {
      tenant_id: 'acme',
      agent_id: 'telecom_contas',
      session_id: uniqueId(),
      text: 'fatura',
    });
    expect(res.status).toBe(200);
    expect(String(res.body.answer)).toMatch(/tente novamente/);
  });

  it('serves readiness with database, migrations, config and LLM configuration', async () => {
    const res = await app.get<{
      status: string;
      details: Record<string, { status: string; configured?: boolean }>;
    }>('/health/ready');
    expect(res.status).toBe(200);
    expect(res.body.details.database.status).toBe('up');
    expect(res.body.details.config.status).toBe('up');
    expect(res.body.details.llm.configured).toBe(true);
    const live = await app.get('/health/live');
    expect(live.status).toBe(200);
  });
});
