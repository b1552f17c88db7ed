import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { FakeLlmServer } from '../support/fake-llm';
import { DurableReader, NATS_URL } from '../support/nats';
import { scriptStages } from '../support/scripted-stages';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';
import { eventually } from '../support/wait-for';
import { WebhookReceiver } from '../support/webhook-receiver';

/**
 * A customer who asks for a person reaches one: with HUMAN_HANDOFF_MODE=hold the request leaves the process to a
 * tenant's webhook and a NATS consumer right after the turn's answer, the desk lists it, claims it and gives it
 * back, and the next message runs the agent again.
 */
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const PENDING_MESSAGE = 'A person will answer you shortly.';

describe('a handoff reaches a person outside the process', () => {
  const tenant = uniqueId('h');
  const id = uniqueId('n').replace(/-/g, '_');
  const stream = `T_${id}`;
  const prefix = `test.${id}`;
  let fake: FakeLlmServer;
  let receiver: WebhookReceiver;
  let reader: DurableReader;
  let app: TestApp;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    receiver = await WebhookReceiver.start();
    const file = receiver.webhooksFile('/desk', {
      id: `${tenant}-desk`,
      tenant_id: tenant,
      secret_env: 'TEST_DESK_WEBHOOK_SECRET',
      events: ['session.*'],
    });
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        ENABLE_ROUTE_STICKINESS: 'true',
        HUMAN_HANDOFF_MODE: 'hold',
        HUMAN_HANDOFF_PENDING_MESSAGE: PENDING_MESSAGE,
        EVENTS_WEBHOOKS_PATH: file,
        TEST_DESK_WEBHOOK_SECRET: SECRET,
        EVENTS_NATS_URL: NATS_URL,
        EVENTS_NATS_STREAM: stream,
        EVENTS_NATS_SUBJECT_PREFIX: prefix,
        // Far slower than the bound below: only the wake-up on this process's commit meets it.
        EVENTS_RELAY_POLL_MS: '5000',
      },
    });
    reader = await DurableReader.open(
      NATS_URL,
      stream,
      'desk',
      `${prefix}.${tenant}.session.human_handoff.requested`,
    );
  }, 240000);

  afterAll(async () => {
    await reader?.close(true);
    await app?.close();
    await receiver?.stop();
    await fake?.stop();
  });

  async function say(sessionId: string, text: string) {
    const response = await app.post<{ answer: string; blocked: boolean; human_handoff_requested: boolean }>(
      '/v1/channels/whatsapp/messages',
      { tenant_id: tenant, agent_id: 'telecom_contas', session_id: sessionId, user_id: 'u-1', text },
    );
    expect(response.status).toBe(200);
    return response.body;
  }

  const received = (sessionId: string, type: string) =>
    receiver.delivered((r) => r.document.type === type && r.document.data.session_id === sessionId)[0];

  it('is delivered to the webhook and NATS, listed, claimed, resumed, and the bot answers again', async () => {
    scriptStages(fake, { 'I want to talk to a person': { decision: 'HUMAN_HANDOFF', confidence: 0.99 } });
    const session = uniqueId('s');
    await say(session, 'What is my plan?');
    // The measure below is of the handoff's commit alone, not of the first turn's forty-odd events before it.
    await eventually('the first turn delivered everywhere', async () => {
      const ready = await app.get<{
        details: { events: { destinations: { lag_events: number; last_delivery_at: string | null }[] } };
      }>('/health/ready');
      const { destinations } = ready.body.details.events;
      return destinations.every((d) => d.last_delivery_at !== null && d.lag_events === 0) ? true : undefined;
    });
    const handoff = await say(session, 'I want to talk to a person');
    const answeredAt = Date.now();
    expect(handoff.human_handoff_requested).toBe(true);

    const hook = await eventually('the webhook of the request', () =>
      received(session, 'session.human_handoff.requested'),
    );
    const [message] = await reader.readUntil((all) => all.length > 0, 30000);
    const latency = { webhook_ms: hook.at - answeredAt, nats_ms: message.storedAt - answeredAt };
    process.stdout.write(`handoff delivery after the answer: ${JSON.stringify(latency)}\n`);
    expect(latency.webhook_ms).toBeLessThan(1000);
    expect(latency.nats_ms).toBeLessThan(1000);
    expect(new Webhook(SECRET).verify(hook.body, hook.headers)).toMatchObject({ id: hook.document.id });
    for (const data of [hook.document.data, message.data]) {
      expect(data).toMatchObject({
        tenant_id: tenant,
        session_id: session,
        source: 'continuity',
        channel: 'whatsapp',
        user_id: 'u-1',
        user_text: 'I want to talk to a person',
        last_messages: expect.arrayContaining([expect.objectContaining({ content: 'What is my plan?' })]),
      });
    }
    expect(message.id).toBe(hook.document.id);

    // Held: the bot stays silent until the desk gives the conversation back.
    expect((await say(session, 'hello?')).answer).toBe(PENDING_MESSAGE);
    const listed = await app.get<{ items: { session_id: string }[] }>(
      `/v1/admin/handoffs?tenant_id=${tenant}`,
    );
    expect(listed.body.items.map((item) => item.session_id)).toContain(session);
    const claim = await app.post(`/v1/admin/sessions/${session}/claim?tenant_id=${tenant}`, {});
    expect(claim.status).toBe(200);
    const resume = await app.post(`/v1/admin/sessions/${session}/resume?tenant_id=${tenant}`, {});
    expect(resume.status).toBe(200);
    const claimed = await eventually('the claim', () => received(session, 'session.handoff.claimed'));
    // Authentication is off here: every caller acts as `admin`.
    expect(claimed.document.data).toMatchObject({ claimed_by: 'admin' });
    await eventually('the resume', () => received(session, 'session.resumed'));

    const back = await say(session, 'What is my plan?');
    expect(back.blocked).toBe(false);
    expect(back.answer).not.toBe(PENDING_MESSAGE);
  });
});
