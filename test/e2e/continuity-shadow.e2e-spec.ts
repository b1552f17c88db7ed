import { FakeChatRequest, FakeLlmServer, GUARDRAILS_ALLOW, lastUserMessage } from '../support/fake-llm';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';
import { waitUntil } from '../support/wait-for';

/** Booting the app with a fresh embedded PGlite can take minutes on a busy machine. */
const APP_START_TIMEOUT_MS = 240_000;
const TENANT = 'acme';
const AGENT_ID = 'telecom_contas';

interface TurnBody {
  turn: number;
  route: string | null;
  route_bypassed: boolean;
  route_decision: Record<string, unknown> | null;
}

function jsonField(request: FakeChatRequest, field: string): string {
  try {
    const payload = JSON.parse(lastUserMessage(request)) as Record<string, unknown>;
    return typeof payload[field] === 'string' ? payload[field] : '';
  } catch {
    return '';
  }
}

/** The value of a counter series in the Prometheus text, 0 when absent. */
function counter(metrics: string, series: string): number {
  const line = metrics.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

describe('continuity shadow mode (ROUTE_STICKINESS_SHADOW_RATE=1)', () => {
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    app = await startTestApp({
      fakeLlm: fake,
      env: { ENABLE_ROUTE_STICKINESS: 'true', ROUTE_STICKINESS_SHADOW_RATE: '1' },
    });
  }, APP_START_TIMEOUT_MS);

  afterAll(async () => {
    await app?.close();
    await fake?.stop();
  });

  it('runs the router off the critical path on an accepted CONTINUE and records whether it agreed', async () => {
    const labels: Record<string, string> = {
      'Qual é o meu plano?': 'ROUTE',
      'o que está incluso?': 'CONTINUE',
    };
    fake.script({
      model: 'route_continuity',
      reply: (request) => ({
        json: { decision: labels[jsonField(request, 'current_message')] ?? 'ROUTE', confidence: 0.97 },
      }),
    });
    // The shadow router's LLM stage (the keyword stage may decide first): the follow-up is about the plan.
    fake.script({
      model: 'router',
      reply: (request) =>
        /plano|incluso/i.test(jsonField(request, 'message'))
          ? { json: { intent: 'product_services_information', confidence: 0.95, reason: 'plans' } }
          : { json: { intent: 'none', confidence: 0, reason: 'none' } },
    });
    fake.script({ model: 'agent', reply: { content: 'Seu plano é Controle 50GB.' } });
    fake.script(GUARDRAILS_ALLOW);
    fake.script({ model: 'judge', reply: { json: { score: 1, passed: true, reason: 'ok' } } });

    const sessionId = uniqueId('shadow');
    const sendOn = (session: string, text: string) =>
      app.post<TurnBody>('/v1/channels/web/messages', {
        tenant_id: TENANT,
        agent_id: AGENT_ID,
        session_id: session,
        text,
      });
    const send = (text: string) => sendOn(sessionId, text);
    const agreedNow = async () =>
      counter((await app.get<string>('/metrics')).body, 'agent_continuity_shadow_total{agreed="true"}');
    const before = await app.get<string>('/metrics');
    const agreedBefore = counter(before.body, 'agent_continuity_shadow_total{agreed="true"}');

    const first = await send('Qual é o meu plano?');
    expect(first.body.route).toBe('product_agent');
    const followUp = await send('o que está incluso?');
    expect(followUp.body).toMatchObject({
      route: 'product_agent',
      route_bypassed: true,
      route_decision: { method: 'continuity' },
    });

    // The shadow settles after (or while) the turn completes: wait for the counter.
    await waitUntil('the shadow comparison', async () => (await agreedNow()) > agreedBefore, 5000, 100);
    expect(await agreedNow()).toBe(agreedBefore + 1);

    // The shadow decision never reads as the turn's decision.
    const rows: { name: string }[] = await app.dataSource.query(
      'SELECT name FROM session_events WHERE conversation_key = $1 AND turn = $2 ORDER BY id',
      [`${TENANT}:${sessionId}`, followUp.body.turn],
    );
    expect(rows.map((r) => r.name)).not.toContain('router.decision');

    // A HUMAN_HANDOFF keeps no agent: nothing to compare, no shadow router run.
    labels['quero falar com uma pessoa'] = 'HUMAN_HANDOFF';
    const routerCalls = fake.requestsFor('router').length;
    const handoff = await send('quero falar com uma pessoa');
    expect(handoff.body.route).toBe('human_handoff');
    // A comparable follow-up on another conversation, whose shadow starts after the handoff turn's would have:
    // once it is recorded, a shadow of the handoff turn would have been too.
    const marker = uniqueId('shadow-marker');
    const agreedBeforeMarker = await agreedNow();
    expect((await sendOn(marker, 'Qual é o meu plano?')).body.route).toBe('product_agent');
    expect((await sendOn(marker, 'o que está incluso?')).body.route_bypassed).toBe(true);
    await waitUntil('the follow-up shadow', async () => (await agreedNow()) > agreedBeforeMarker, 5000, 100);
    const after = (await app.get<string>('/metrics')).body;
    expect(counter(after, 'agent_continuity_shadow_total{agreed="false"}')).toBe(
      counter(before.body, 'agent_continuity_shadow_total{agreed="false"}'),
    );
    expect(fake.requestsFor('router').slice(routerCalls).map(lastUserMessage)).not.toContain(
      'quero falar com uma pessoa',
    );
  });
});
