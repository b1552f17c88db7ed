import {
  FakeChatRequest,
  FakeLlmServer,
  FakeReply,
  GUARDRAILS_ALLOW,
  guardrailVerdict,
  hasToolMessage,
} from '../support/fake-llm';
import { freePort } from '../support/reference-mcp';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';

/**
 * A model, guardrail-model or MCP outage is reported as one, never as a verdict on the message: the turn names
 * what it could not use and why (`unavailable`), a block without a guardrail verdict carries
 * GUARDRAIL_MODEL_UNAVAILABLE (not PINJ), the console's timeline and the events say the same, and readiness
 * says degraded with the cause. Each failure is provoked for real: the scripted model answering 401 or a body
 * that is no completion, a closed model port, a closed MCP port.
 */

interface Unavailable {
  code: string;
  name: string;
  cause: string;
  status: number | null;
}

interface TurnBody {
  answer: string;
  route: string;
  blocked: boolean;
  route_decision: { metadata: { codes?: string[] } };
  unavailable: Unavailable[];
}

interface Readiness {
  status: string;
  degraded: string[];
  info: Record<string, { degraded?: boolean; cause?: string }>;
}

const UNVERIFIED = 'Não consegui processar sua mensagem agora. Por favor, tente novamente em instantes.';
const CHANNEL_KEY = 'outage-channel-key';
const ADMIN_KEY = 'outage-admin-key';
const BAD_KEY = '{"error":{"message":"Incorrect API key provided","code":"invalid_api_key"}}';

const message = (text: string, sessionId = uniqueId('outage')) => ({
  tenant_id: 'acme',
  agent_id: 'telecom_contas',
  session_id: sessionId,
  metadata: { msisdn: '5511999990001' },
  text,
});

const channel = { authorization: `Bearer ${CHANNEL_KEY}` };

async function readiness(app: TestApp): Promise<Readiness> {
  const ready = await app.get<Readiness>('/health/ready');
  expect(ready.status).toBe(200);
  expect(ready.body.status).toBe('ok');
  return ready.body;
}

/** The public probe: `degraded` names the dependencies, the indicator says the cause and nothing more. */
async function publicReadiness(app: TestApp): Promise<Readiness> {
  const ready = await readiness(app);
  expect(JSON.stringify(ready)).not.toMatch(/127\.0\.0\.1|401|last_failure|"model"/);
  return ready;
}

describe('outages are reported as outages', () => {
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    const closed = `http://127.0.0.1:${await freePort()}/mcp`;
    // Keys on: the public probe is what an anonymous caller sees.
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        MCP_SERVER_TELECOM_URL: closed,
        MCP_SERVER_RETAIL_URL: closed,
        CHANNEL_API_KEYS: `acme:${CHANNEL_KEY}`,
        ADMIN_API_KEYS: ADMIN_KEY,
      },
    });
  }, 120000);

  afterAll(async () => {
    await app?.close();
    await fake?.stop();
  });

  beforeEach(() => fake.reset());

  /** A question about the plan the guardrail model allows, served by product_agent whose model answers `agent`. */
  async function servedTurn(agent: FakeReply | ((request: FakeChatRequest) => FakeReply)): Promise<TurnBody> {
    fake.script(GUARDRAILS_ALLOW);
    fake.script({ model: 'agent', reply: agent });
    fake.setFallback({ json: { intent: 'unknown', confidence: 0 } });
    const turn = await app.post<TurnBody>(
      '/v1/channels/web/messages',
      message('Qual é o meu plano?'),
      channel,
    );
    expect(turn.status).toBe(200);
    expect(turn.body).toMatchObject({ route: 'product_agent', blocked: false });
    return turn.body;
  }

  it('a key the endpoint refuses (401): no guardrail verdict, reported as such, in the console and the events', async () => {
    fake.setFallback({ status: 401, rawBody: BAD_KEY });
    // Two earlier turns: the guardrail model counts as degraded after three failed calls in a row.
    for (let i = 0; i < 2; i++) {
      await app.post('/v1/channels/web/messages', message('Qual é o meu plano?'), channel);
    }
    const sessionId = uniqueId('outage-401');
    const turn = await app.post<TurnBody>(
      '/v1/channels/web/messages',
      message('Qual é o meu plano?', sessionId),
      channel,
    );
    expect(turn.status).toBe(200);
    // Still fail-closed: the message is not served without an injection verdict...
    expect(turn.body).toMatchObject({ route: 'blocked', blocked: true, answer: UNVERIFIED });
    // ...but it says why: the guardrail model is unavailable, not that the message is an attack.
    expect(turn.body.route_decision.metadata.codes).toEqual(['GUARDRAIL_MODEL_UNAVAILABLE']);
    expect(turn.body.unavailable).toContainEqual({
      code: 'GUARDRAIL_MODEL_UNAVAILABLE',
      name: 'guardrail',
      cause: 'http_error',
      status: 401,
    });
    expect(turn.body.unavailable.map((u) => u.code)).not.toContain('PINJ');

    const timeline = await app.get<{
      turns: { unavailable: Unavailable[]; guardrails: { stage: string; codes: string[] }[] }[];
    }>(`/v1/admin/sessions/${sessionId}/timeline?tenant_id=acme`, { authorization: `Bearer ${ADMIN_KEY}` });
    expect(timeline.status).toBe(200);
    expect(timeline.body.turns[0].unavailable).toEqual(turn.body.unavailable);
    expect(timeline.body.turns[0].guardrails.find((g) => g.stage === 'input')?.codes).toEqual([
      'GUARDRAIL_MODEL_UNAVAILABLE',
    ]);
    const events = await app.dataSource.query<{ name: string; payload: Record<string, unknown> }[]>(
      `SELECT name, payload FROM session_events WHERE conversation_key = $1 ORDER BY id`,
      [`acme:${sessionId}`],
    );
    expect(
      events.find((e) => e.name === 'llm.call' && e.payload.profile === 'guardrail')?.payload,
    ).toMatchObject({ outcome: 'http_error', cause: 'http_error', status: 401 });

    const ready = await publicReadiness(app);
    expect(ready.degraded).toEqual(expect.arrayContaining(['llm', 'guardrail_model']));
    expect(ready.info.llm).toMatchObject({ degraded: true, cause: 'http_error' });
    expect(ready.info.guardrail_model).toMatchObject({ degraded: true, cause: 'http_error' });
  });

  it("the agent's model answering a body that is no completion: the turn is served by its fallback and says so", async () => {
    const turn = await servedTurn({ rawBody: '{"result":"this is not a chat completion"}' });
    expect(turn.unavailable).toEqual([
      { code: 'MODEL_UNAVAILABLE', name: 'agent', cause: 'invalid_response', status: null },
    ]);
    const ready = await publicReadiness(app);
    expect(ready.info.llm).toMatchObject({ degraded: true, cause: 'invalid_response' });
    // The guardrail model answered this time: no longer degraded.
    expect(ready.info.guardrail_model).toEqual({ status: 'up', degraded: false });
  });

  it('an MCP server that is down: the tool call fails, the turn names the server, readiness says degraded', async () => {
    const turn = await servedTurn((request: FakeChatRequest): FakeReply =>
      hasToolMessage(request)
        ? { content: 'Não consegui consultar o seu plano agora.' }
        : { tool_calls: [{ name: 'consultar_plano', arguments: { msisdn: '5511999990001' } }] },
    );
    expect(turn.unavailable).toEqual([
      { code: 'MCP_UNAVAILABLE', name: 'telecom', cause: 'unavailable', status: null },
    ]);
    const ready = await publicReadiness(app);
    expect(ready.degraded).toContain('mcp');
    expect(ready.info.mcp).toMatchObject({ degraded: true, cause: 'unavailable' });
  });

  it('a guardrail model that answers no usable verdict blocks as unavailable, a judged block stays PINJ', async () => {
    fake.script({ model: 'guardrail', reply: { content: 'I cannot help with that.' } });
    fake.setFallback({ json: { intent: 'unknown', confidence: 0 } });
    const unverified = await app.post<TurnBody>(
      '/v1/channels/web/messages',
      message('Qual é o meu plano?'),
      channel,
    );
    expect(unverified.body.route_decision.metadata.codes).toEqual(['GUARDRAIL_MODEL_UNAVAILABLE']);
    expect(unverified.body.unavailable).toContainEqual({
      code: 'GUARDRAIL_MODEL_UNAVAILABLE',
      name: 'guardrail',
      cause: 'invalid_output',
      status: null,
    });

    fake.reset();
    fake.script({ model: 'guardrail', reply: (request) => guardrailVerdict(request, ['PINJ']) });
    fake.setFallback({ json: { intent: 'unknown', confidence: 0 } });
    const judged = await app.post<TurnBody>(
      '/v1/channels/web/messages',
      message('Qual é o meu plano?'),
      channel,
    );
    expect(judged.body).toMatchObject({ blocked: true, unavailable: [] });
    expect(judged.body.route_decision.metadata.codes).toEqual(['PINJ']);
  });
});

describe('a model endpoint nothing listens on', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({
      env: {
        LLM_BASE_URL: `http://127.0.0.1:${await freePort()}/v1`,
        CHANNEL_API_KEYS: `acme:${CHANNEL_KEY}`,
        ADMIN_API_KEYS: ADMIN_KEY,
      },
    });
  }, 120000);

  afterAll(async () => {
    await app?.close();
  });

  it('is reported as refused, in the turn and in readiness', async () => {
    const turn = await app.post<TurnBody>(
      '/v1/channels/web/messages',
      message('Qual é o meu plano?'),
      channel,
    );
    expect(turn.status).toBe(200);
    expect(turn.body).toMatchObject({ blocked: true, answer: UNVERIFIED });
    expect(turn.body.route_decision.metadata.codes).toEqual(['GUARDRAIL_MODEL_UNAVAILABLE']);
    expect(turn.body.unavailable).toContainEqual({
      code: 'GUARDRAIL_MODEL_UNAVAILABLE',
      name: 'guardrail',
      cause: 'refused',
      status: null,
    });
    // Two more turns: the guardrail model counts as degraded after three failed calls in a row.
    for (let i = 0; i < 2; i++) {
      await app.post('/v1/channels/web/messages', message('Qual é o meu plano?'), channel);
    }
    const ready = await publicReadiness(app);
    expect(ready.info.llm).toMatchObject({ degraded: true, cause: 'refused' });
    expect(ready.info.guardrail_model).toMatchObject({ degraded: true, cause: 'refused' });
  });
});
