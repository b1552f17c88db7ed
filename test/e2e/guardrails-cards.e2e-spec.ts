import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Pool } from 'pg';
import {
  freePort,
  spawnAppProcess,
  stopAppProcess,
  waitUntilReady,
  AppProcess,
} from '../support/app-process';
import { asciiDigitsOf, CARD_FORMATS } from '../support/card-formats';
import { FakeLlmServer, guardrailVerdict, lastUserMessage } from '../support/fake-llm';
import { DurableReader, expectedEventIds, NATS_URL } from '../support/nats';
import { uniqueId } from '../support/test-app';
import { eventually } from '../support/wait-for';
import { WebhookReceiver } from '../support/webhook-receiver';

/**
 * Every card format of docs/guardrails.md sent to a production-mode service (keys, debug logging, real Postgres,
 * signed webhooks, the NATS relay) with a guardrail model that allows everything: no card number reaches a model
 * request, a log line, an event (stored, posted to the webhook, published on NATS), an admin view or any row of
 * the database, in any script or grouping. Each conversation also sends a second turn, so the first one's
 * message reaches a prompt through the history, and one conversation asks for a person, so the handoff event
 * and the handoff desk carry the message too.
 */
const databaseUrl = process.env.DATABASE_URL;
const describeWithPostgres = databaseUrl
  ? describe
  : (name: string, body: () => void) => describe.skip(`${name} (needs DATABASE_URL; CI sets it)`, body);

const MAIN = join('apps', 'agent-runtime', 'src', 'main.ts');
const CHANNEL_KEY = `cards-channel-${randomBytes(8).toString('hex')}`;
const ADMIN_KEY = `cards-admin-${randomBytes(8).toString('hex')}`;
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const HANDOFF_TEXT = 'quero falar com um atendente';

/** Where a card of `pans` shows in a value (strings at any depth, in any digit script or grouping). */
function leaks(value: unknown, pans: readonly string[], where: string): string[] {
  if (typeof value === 'string') {
    const digits = asciiDigitsOf(value);
    return pans.filter((pan) => digits.includes(pan)).map((pan) => `${where}: ${pan}`);
  }
  if (Array.isArray(value)) return value.flatMap((item, i) => leaks(item, pans, `${where}[${i}]`));
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, item]) => leaks(item, pans, `${where}.${key}`));
  }
  return [];
}

describeWithPostgres('card numbers in every format (e2e, production mode)', () => {
  const tenant = uniqueId('cards').replace(/-/g, '_');
  const natsId = uniqueId('n').replace(/-/g, '_');
  const pans = [...new Set(CARD_FORMATS.map((f) => f.pan))];
  let fake: FakeLlmServer;
  let receiver: WebhookReceiver;
  let app: AppProcess;
  let baseUrl: string;
  let reader: DurableReader;
  let pool: Pool;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    fake.script({ model: 'guardrail', reply: (request) => guardrailVerdict(request) });
    fake.script({
      model: 'route_continuity',
      reply: (request) => ({
        json: {
          decision: lastUserMessage(request).includes(HANDOFF_TEXT) ? 'HUMAN_HANDOFF' : 'ROUTE',
          confidence: 0.97,
          reason: 'scripted',
        },
      }),
    });
    fake.script({ model: 'agent', reply: (request) => ({ content: `Recebi: ${lastUserMessage(request)}` }) });
    fake.setFallback({ json: { intent: 'unknown', confidence: 0, reason: 'fallback', facts: [] } });
    receiver = await WebhookReceiver.start();
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    app = spawnAppProcess(MAIN, [], {
      NODE_ENV: 'production',
      PORT: String(port),
      LOG_LEVEL: 'debug',
      DATABASE_URL: databaseUrl ?? '',
      LLM_BASE_URL: fake.baseUrl,
      LLM_API_KEY: 'test-key-cards',
      CHANNEL_API_KEYS: `${tenant}:${CHANNEL_KEY}`,
      ADMIN_API_KEYS: ADMIN_KEY,
      ENABLE_ROUTE_STICKINESS: 'true',
      ENABLE_LONG_TERM_MEMORY: 'true',
      HUMAN_HANDOFF_MODE: 'hold',
      EVENTS_WEBHOOKS_PATH: receiver.webhooksFile('/events', {
        id: `${tenant}-all`,
        tenant_id: tenant,
        secret_env: 'CARDS_WEBHOOK_SECRET',
      }),
      CARDS_WEBHOOK_SECRET: SECRET,
      EVENTS_RELAY_POLL_MS: '50',
      EVENTS_NATS_URL: NATS_URL,
      EVENTS_NATS_STREAM: `T_${natsId}`,
      EVENTS_NATS_SUBJECT_PREFIX: `test.${natsId}`,
    });
    await waitUntilReady(app, port);
    reader = await DurableReader.open(NATS_URL, `T_${natsId}`, 'cards', `test.${natsId}.${tenant}.>`);
    pool = new Pool({ connectionString: databaseUrl, max: 2 });
  }, 240000);

  afterAll(async () => {
    if (app) await stopAppProcess(app);
    await reader?.close(true);
    await pool?.end();
    await receiver?.stop();
    await fake?.stop();
  });

  const post = (path: string, body: unknown) =>
    fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${CHANNEL_KEY}` },
      body: JSON.stringify(body),
    });
  const adminGet = async (path: string): Promise<unknown> =>
    (await fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })).json();

  it('masks every format before anything sees it: models, logs, events, webhooks, NATS, admin views, tables', async () => {
    const sessions = CARD_FORMATS.map((format, index) => ({ format, session: `s${index}` }));
    for (const { format, session } of sessions) {
      for (const [turn, text] of [
        [1, `Cobraram duas vezes no cartão ${format.text}, pode verificar?`],
        [2, 'E agora, já verificou?'],
      ] as const) {
        const response = await post('/v1/channels/web/messages', {
          tenant_id: tenant,
          agent_id: 'telecom_contas',
          session_id: session,
          message_id: `m${turn}`,
          user_id: `u-${session}`,
          text,
        });
        expect(response.status).toBe(200);
        const body = (await response.json()) as { answer: string };
        expect(leaks(body, pans, `${format.name} answer`)).toEqual([]);
        if (turn === 1) expect(body.answer).toContain(format.masked);
      }
    }
    const handoff = await post('/v1/channels/web/messages', {
      tenant_id: tenant,
      agent_id: 'telecom_contas',
      session_id: 'handoff',
      text: `${HANDOFF_TEXT}, o cartão ${CARD_FORMATS[0].text} foi clonado`,
    });
    expect(await handoff.json()).toMatchObject({ human_handoff_requested: true });

    // Every model request: the agents (turn and history), the classifier, the guardrail model, memory extraction.
    expect(fake.requests.length).toBeGreaterThan(CARD_FORMATS.length * 4);
    expect(fake.requests.flatMap((r, i) => leaks(r.body, pans, `model request ${i} (${r.model})`))).toEqual(
      [],
    );
    expect(JSON.stringify(fake.requestsFor('agent').map((r) => r.body))).toContain('411111******1111');

    // Every row of every table the tenant's turns wrote.
    const { rows: tables } = await pool.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
    );
    const stored: string[] = [];
    for (const { table_name: table } of tables) {
      const { rows } = await pool.query<{ row: unknown }>(
        `SELECT to_jsonb(t) AS row FROM "${table}" t WHERE to_jsonb(t)::text LIKE $1`,
        [`%${tenant}%`],
      );
      stored.push(...rows.flatMap((r, i) => leaks(r.row, pans, `${table}[${i}]`)));
      if (table === 'checkpoints') expect(rows.length).toBeGreaterThan(CARD_FORMATS.length);
    }
    expect(stored).toEqual([]);

    // Events as webhooks and NATS consumers receive them, once the relay delivered them all.
    const expected = await expectedEventIds(
      async (sql, params) =>
        (await pool.query<{ conversation_key: string; version: number; n: number }>(sql, params)).rows,
      tenant,
    );
    const published = await reader.readUntil((all) => all.length >= expected.length, 60000);
    expect(published.flatMap((m, i) => leaks(m.data, pans, `NATS ${i} ${m.type}`))).toEqual([]);
    expect(published.map((m) => m.type)).toContain('session.human_handoff.requested');
    const posted = await eventually('every event posted to the webhook', () =>
      receiver.received.length >= expected.length ? receiver.received : undefined,
    );
    expect(posted.flatMap((r, i) => leaks(r.body, pans, `webhook ${i} ${r.document.type}`))).toEqual([]);

    // What operators read: the session view, its timeline and events, the handoff desk.
    const views: unknown[] = [await adminGet(`/v1/admin/handoffs?tenant_id=${tenant}`)];
    for (const { session } of sessions) {
      for (const suffix of ['', '/timeline', '/events', '/checkpoints']) {
        views.push(await adminGet(`/v1/admin/sessions/${session}${suffix}?tenant_id=${tenant}`));
      }
    }
    expect(views.flatMap((view, i) => leaks(view, pans, `admin view ${i}`))).toEqual([]);
    expect(JSON.stringify(views[0])).toContain('411111******1111');

    // Every line the process logged at debug level.
    expect(leaks(app.output().split('\n'), pans, 'log')).toEqual([]);
  }, 240000);
});
