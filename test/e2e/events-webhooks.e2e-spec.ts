import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { DeadLetterRetentionService } from '@agent/events';
import { startTestApp, TestApp, testDatabase, TestDatabase, uniqueId } from '../support/test-app';
import { eventually } from '../support/wait-for';
import { WebhookReceiver } from '../support/webhook-receiver';

/**
 * Signed webhooks per tenant against a real local HTTP receiver: the signature verifies with the Standard
 * Webhooks library, a 500 and a timeout are retried, an event that fails every attempt becomes a dead letter the
 * admin API lists and redelivers, and an endpoint never receives another tenant's events. Dead letters hold
 * payloads: they go with their session, their subject, and with age. A restart continues an event's retries.
 */
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const MAX_ATTEMPTS = 3;

interface DeadLetter {
  id: string;
  destination: string;
  tenant_id: string;
  event_id: string;
  event_name: string;
  attempts: number;
  last_error: string;
  redelivered_at: string | null;
  body: { id: string; type: string };
}

describe('signed webhooks', () => {
  const tenant = uniqueId('w');
  const other = uniqueId('o');
  const admin = { authorization: 'Bearer wh-admin-global' };
  const tenantAdmin = { authorization: 'Bearer wh-admin-tenant' };
  const otherAdmin = { authorization: 'Bearer wh-admin-other' };
  let receiver: WebhookReceiver;
  let app: TestApp;

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
    const file = receiver.webhooksFile('/crm', {
      id: `${tenant}-crm`,
      tenant_id: tenant,
      secret_env: 'TEST_WEBHOOK_SECRET',
      events: ['AGENT_COMPLETED', 'session.*'],
      max_attempts: MAX_ATTEMPTS,
      timeout_ms: 400,
    });
    app = await startTestApp({
      env: {
        EVENTS_WEBHOOKS_PATH: file,
        TEST_WEBHOOK_SECRET: SECRET,
        EVENTS_WEBHOOK_BACKOFF_BASE_MS: '20',
        EVENTS_WEBHOOK_BACKOFF_MAX_MS: '100',
        EVENTS_RELAY_POLL_MS: '50',
        CHANNEL_API_KEYS: `${tenant}:wh-channel-tenant,${other}:wh-channel-other`,
        ADMIN_API_KEYS: `wh-admin-global,${tenant}:wh-admin-tenant,${other}:wh-admin-other`,
      },
    });
  }, 240000);

  afterAll(async () => {
    await app?.close();
    await receiver?.stop();
  });

  beforeEach(() => {
    receiver.answer = () => 'ok';
  });

  async function say(tenantId: string, sessionId: string, text: string, userId?: string): Promise<void> {
    const key = tenantId === tenant ? 'wh-channel-tenant' : 'wh-channel-other';
    const response = await app.post(
      '/v1/channels/web/messages',
      { tenant_id: tenantId, agent_id: 'telecom_contas', session_id: sessionId, user_id: userId, text },
      { authorization: `Bearer ${key}` },
    );
    expect(response.status).toBe(200);
  }

  async function deadLetters(headers: Record<string, string>, query = ''): Promise<DeadLetter[]> {
    const response = await app.get<{ items: DeadLetter[] }>(`/v1/admin/events/dead-letters${query}`, headers);
    expect(response.status).toBe(200);
    return response.body.items;
  }

  /** The dead letter of the session's first event, once it is one. */
  function sessionDeadLetter(session: string): Promise<DeadLetter> {
    return eventually('the dead letter', async () =>
      (await deadLetters(tenantAdmin)).find((d) => d.event_id.startsWith(`${tenant}:${session}:`)),
    );
  }

  it("signs every delivery, filters by event name, and never sends another tenant's events", async () => {
    const session = uniqueId('s');
    // The other tenant's turn commits first: an endpoint that relayed it would receive it before ours.
    await say(other, uniqueId('s'), 'Qual é o meu plano?');
    await say(tenant, session, 'Qual é o meu plano?');
    await say(tenant, session, 'E a minha fatura?');
    const delivered = await eventually('two AGENT_COMPLETED of the session', () => {
      const found = receiver.delivered((r) => r.document.data.session_id === session);
      return found.length >= 2 ? found : undefined;
    });
    const verifier = new Webhook(SECRET);
    for (const request of delivered) {
      expect(request.path).toBe('/crm');
      expect(request.headers['webhook-id']).toBe(request.document.id);
      expect(request.headers['content-type']).toBe('application/json');
      expect(verifier.verify(request.body, request.headers)).toEqual(request.document);
      expect(() => verifier.verify(request.body.replace('}', ' }'), request.headers)).toThrow();
    }
    expect(delivered.map((r) => r.document.type)).toEqual(['AGENT_COMPLETED', 'AGENT_COMPLETED']);
    expect(delivered.map((r) => r.document.id)).toEqual([
      expect.stringMatching(new RegExp(`^${tenant}:${session}:1:\\d+$`)),
      expect.stringMatching(new RegExp(`^${tenant}:${session}:2:\\d+$`)),
    ]);
    expect(receiver.received.filter((r) => r.document.data.tenant_id !== tenant)).toEqual([]);
  });

  it('retries a 500 and a timeout with the same webhook-id, then keeps the order', async () => {
    const session = uniqueId('s');
    // The session's first event: a 500 to its first attempt, no answer to its second, a 200 to its third.
    const firstCommit = `${tenant}:${session}:1:`;
    receiver.answer = (request, earlier) =>
      !request.document.id.startsWith(firstCommit) || earlier >= 2 ? 'ok' : earlier === 0 ? 'fail' : 'hang';
    await say(tenant, session, 'Qual é o meu plano?');
    await say(tenant, session, 'E a minha fatura?');
    const [first, second] = await eventually('both events of the session', () => {
      const found = receiver.delivered((r) => r.document.data.session_id === session);
      return found.length >= 2 ? found : undefined;
    });
    const attempts = receiver.attempts(first.document.id);
    expect(attempts.map((a) => a.answer)).toEqual(['fail', 'hang', 'ok']);
    expect(new Set(attempts.map((a) => a.headers['webhook-id']))).toEqual(new Set([first.document.id]));
    // The second event left only after the first was delivered.
    expect(receiver.received.indexOf(receiver.attempts(second.document.id)[0])).toBeGreaterThan(
      receiver.received.indexOf(attempts[2]),
    );
    expect((await deadLetters(admin, `?tenant_id=${tenant}`)).map((d) => d.event_id)).not.toContain(
      first.document.id,
    );
  });

  it('dead-letters an event after the last attempt, lists it per tenant and redelivers it', async () => {
    const session = uniqueId('s');
    receiver.answer = (request) => (request.document.data.session_id === session ? 'fail' : 'ok');
    await say(tenant, session, 'Qual é o meu plano?');
    const letter = await sessionDeadLetter(session);
    expect(letter).toMatchObject({
      destination: `webhook:${tenant}-crm`,
      tenant_id: tenant,
      event_name: 'AGENT_COMPLETED',
      attempts: MAX_ATTEMPTS,
      last_error: 'HTTP 500',
      redelivered_at: null,
      body: { id: letter.event_id, type: 'AGENT_COMPLETED' },
    });
    expect(receiver.attempts(letter.event_id)).toHaveLength(MAX_ATTEMPTS);
    // The conversation is not held up by it: its next event goes out.
    receiver.answer = () => 'ok';
    await say(tenant, session, 'E a minha fatura?');
    await eventually('the next event of the session', () =>
      receiver.delivered((r) => r.document.data.session_id === session).length > 0 ? true : undefined,
    );

    // Another tenant's key neither sees nor redelivers it.
    expect((await deadLetters(otherAdmin)).map((d) => d.id)).not.toContain(letter.id);
    const foreign = await app.post(`/v1/admin/events/dead-letters/${letter.id}/redeliver`, {}, otherAdmin);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toMatchObject({ error: { code: 'DEAD_LETTER_NOT_FOUND' } });

    receiver.answer = () => 'fail';
    const refused = await app.post(`/v1/admin/events/dead-letters/${letter.id}/redeliver`, {}, tenantAdmin);
    expect(refused.status).toBe(502);
    expect(refused.body).toMatchObject({
      error: {
        code: 'WEBHOOK_DELIVERY_FAILED',
        details: { attempts: MAX_ATTEMPTS + 1, last_error: 'HTTP 500' },
      },
    });

    receiver.answer = () => 'ok';
    const redelivered = await app.post<DeadLetter>(
      `/v1/admin/events/dead-letters/${letter.id}/redeliver`,
      {},
      tenantAdmin,
    );
    expect(redelivered.status).toBe(200);
    expect(redelivered.body).toMatchObject({ id: letter.id, attempts: MAX_ATTEMPTS + 2 });
    expect(redelivered.body.redelivered_at).toEqual(expect.any(String));
    const [request] = receiver.delivered((r) => r.document.id === letter.event_id);
    expect(new Webhook(SECRET).verify(request.body, request.headers)).toMatchObject({ id: letter.event_id });
    expect((await deadLetters(tenantAdmin, '?redelivered=false')).map((d) => d.id)).not.toContain(letter.id);
    expect((await deadLetters(tenantAdmin, '?redelivered=true')).map((d) => d.id)).toContain(letter.id);

    const missing = await app.post('/v1/admin/events/dead-letters/999999999999/redeliver', {}, admin);
    expect(missing.status).toBe(404);
    const invalid = await app.post('/v1/admin/events/dead-letters/abc/redeliver', {}, admin);
    expect(invalid.status).toBe(400);
  });

  it('redelivers a letter once however many ask at the same time, and not again once delivered', async () => {
    const session = uniqueId('s');
    receiver.answer = (request) => (request.document.data.session_id === session ? 'fail' : 'ok');
    await say(tenant, session, 'Qual é o meu plano?');
    const letter = await sessionDeadLetter(session);
    receiver.answer = () => 'ok';
    const redeliver = () =>
      app.post<DeadLetter>(`/v1/admin/events/dead-letters/${letter.id}/redeliver`, {}, tenantAdmin);
    const answers = await Promise.all(Array.from({ length: 5 }, redeliver));
    expect(receiver.attempts(letter.event_id)).toHaveLength(MAX_ATTEMPTS + 1);
    // The one that sent it answers 200; the others 409 while it is in flight, or 200 with it done.
    expect(answers.filter((answer) => answer.status === 200).length).toBeGreaterThanOrEqual(1);
    for (const answer of answers.filter((a) => a.status !== 200)) {
      expect(answer).toMatchObject({ status: 409, body: { error: { code: 'REDELIVERY_IN_PROGRESS' } } });
    }
    const again = await redeliver();
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: letter.id, attempts: MAX_ATTEMPTS + 1 });
    expect(again.body.redelivered_at).toEqual(expect.any(String));
    expect(receiver.attempts(letter.event_id)).toHaveLength(MAX_ATTEMPTS + 1);
  });

  it("redelivers a letter only to an endpoint of the letter's own tenant", async () => {
    // A letter the other tenant's endpoint left when it had the id this tenant's endpoint has now (webhooks.yaml
    // edited since): the id alone must not send the other tenant's event here.
    const eventId = `${other}:${uniqueId('s')}:1:0`;
    const [{ id }]: { id: string }[] = await app.dataSource.query(
      `INSERT INTO event_dead_letters
         (destination, tenant_id, conversation_key, event_id, event_name, body, attempts, last_error)
       VALUES ($1, $2, $3, $4, 'AGENT_COMPLETED', $5::jsonb, 1, 'HTTP 500') RETURNING id::text AS id`,
      [
        `webhook:${tenant}-crm`,
        other,
        eventId.split(':').slice(0, 2).join(':'),
        eventId,
        JSON.stringify({
          id: eventId,
          type: 'AGENT_COMPLETED',
          timestamp: new Date().toISOString(),
          data: {},
        }),
      ],
    );
    try {
      const refused = await app.post(`/v1/admin/events/dead-letters/${id}/redeliver`, {}, admin);
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({ error: { code: 'WEBHOOK_ENDPOINT_UNKNOWN' } });
      expect(receiver.attempts(eventId)).toEqual([]);
    } finally {
      await app.dataSource.query('DELETE FROM event_dead_letters WHERE id = $1', [id]);
    }
  });

  it('never follows a redirect: a 3xx is a failed attempt, and the signed event goes nowhere else', async () => {
    const session = uniqueId('s');
    // The endpoint moves every request of the session elsewhere; a sender that followed would be answered 200 there.
    receiver.answer = (request) =>
      request.document.data.session_id === session && request.path === '/crm' ? 'redirect' : 'ok';
    await say(tenant, session, 'Qual é o meu plano?');
    const letter = await sessionDeadLetter(session);
    expect(letter).toMatchObject({
      attempts: MAX_ATTEMPTS,
      last_error: 'HTTP 307 (redirects are not followed)',
    });
    expect(receiver.attempts(letter.event_id).map((r) => r.path)).toEqual(Array(MAX_ATTEMPTS).fill('/crm'));
    expect(receiver.received.filter((r) => r.path.startsWith('/redirected'))).toEqual([]);
  });

  it("deletes a session's dead letters with it, a subject's with the subject, and old ones by age", async () => {
    const [purged, personal, aged, recent] = ['p', 'u', 'a', 'r'].map((prefix) => uniqueId(prefix));
    const person = uniqueId('person');
    const failing = new Set([purged, personal, aged, recent]);
    receiver.answer = (request) => (failing.has(String(request.document.data.session_id)) ? 'fail' : 'ok');
    await say(tenant, purged, 'Qual é o meu plano?');
    await say(tenant, personal, 'Qual é o meu plano?', person);
    await say(tenant, aged, 'Qual é o meu plano?');
    await say(tenant, recent, 'Qual é o meu plano?');
    const sessionsWithLetters = async () => {
      const letters = await deadLetters(admin, `?tenant_id=${tenant}&limit=200`);
      return [...failing].filter((session) =>
        letters.some((d) => d.event_id.startsWith(`${tenant}:${session}:`)),
      );
    };
    await eventually('a dead letter of each session', async () =>
      (await sessionsWithLetters()).length === failing.size ? true : undefined,
    );

    const removed = await app.request(
      'DELETE',
      `/v1/admin/sessions/${purged}?tenant_id=${tenant}`,
      undefined,
      admin,
    );
    expect(removed.status).toBe(200);
    const forgotten = await app.request(
      'DELETE',
      `/v1/admin/memory/subjects/${person}?tenant_id=${tenant}`,
      undefined,
      admin,
    );
    expect(forgotten.status).toBe(200);
    expect(await sessionsWithLetters()).toEqual([aged, recent]);

    await app.dataSource.query(
      `UPDATE event_dead_letters SET created_at = now() - interval '31 days' WHERE event_id LIKE $1`,
      [`${tenant}:${aged}:%`],
    );
    expect(await app.app.get(DeadLetterRetentionService).sweep()).toBeGreaterThan(0);
    expect(await sessionsWithLetters()).toEqual([recent]);
  });
});

describe('webhook retries across a restart', () => {
  /** Starts an app with one endpoint of `tenant` on `database`; each call starts it again on the same database. */
  function appWithEndpoint(
    database: TestDatabase,
    receiver: WebhookReceiver,
    tenant: string,
    endpoint: { max_attempts: number; timeout_ms: number },
    backoffMs: { base: number; max: number },
  ): () => Promise<TestApp> {
    return () =>
      startTestApp({
        env: {
          ...database.env,
          EVENTS_WEBHOOKS_PATH: receiver.webhooksFile('/crm', {
            id: `${tenant}-crm`,
            tenant_id: tenant,
            secret_env: 'TEST_WEBHOOK_SECRET',
            events: ['AGENT_COMPLETED'],
            ...endpoint,
          }),
          TEST_WEBHOOK_SECRET: SECRET,
          EVENTS_WEBHOOK_BACKOFF_BASE_MS: String(backoffMs.base),
          EVENTS_WEBHOOK_BACKOFF_MAX_MS: String(backoffMs.max),
          EVENTS_RELAY_POLL_MS: '50',
        },
      });
  }

  async function sendMessage(app: TestApp, tenant: string): Promise<void> {
    const response = await app.post('/v1/channels/web/messages', {
      tenant_id: tenant,
      agent_id: 'telecom_contas',
      session_id: uniqueId('s'),
      text: 'Qual é o meu plano?',
    });
    expect(response.status).toBe(200);
  }

  function deadLetterOf(app: TestApp, tenant: string, eventId: string): Promise<DeadLetter> {
    return eventually('the dead letter', async () => {
      const listed = await app.get<{ items: DeadLetter[] }>(
        `/v1/admin/events/dead-letters?tenant_id=${tenant}`,
      );
      return listed.body.items.find((item) => item.event_id === eventId);
    });
  }

  it('continues the count on the same database and dead-letters after the configured total', async () => {
    const tenant = uniqueId('r');
    const receiver = await WebhookReceiver.start();
    receiver.answer = () => 'fail';
    // Both apps share one database: CI's server, or one embedded server held by this test.
    const database = await testDatabase();
    // Waits of 2.5 to 5 s: the restart happens inside one. A stop lets an attempt in flight finish and counts it,
    // so with waits of 1 to 2 s a loaded machine could close after a third attempt, not two.
    const start = appWithEndpoint(
      database,
      receiver,
      tenant,
      { max_attempts: 4, timeout_ms: 400 },
      { base: 5000, max: 5000 },
    );
    let app = await start();
    try {
      await sendMessage(app, tenant);
      const eventId = await eventually('the second attempt', () => {
        const [first] = receiver.received;
        return first && receiver.attempts(first.document.id).length >= 2 ? first.document.id : undefined;
      });
      await app.close();
      expect(receiver.attempts(eventId).length).toBe(2);

      app = await start();
      const letter = await deadLetterOf(app, tenant, eventId);
      expect(letter.attempts).toBe(4);
      expect(receiver.attempts(eventId).length).toBe(4);
      const pending: unknown[] = await app.dataSource.query(
        'SELECT 1 FROM event_delivery_attempts WHERE event_id = $1',
        [eventId],
      );
      expect(pending).toEqual([]);
    } finally {
      await app.close();
      await receiver.stop();
      database.release();
    }
  }, 120000);

  it('lets an attempt in flight finish when the app stops, and counts it', async () => {
    const tenant = uniqueId('r');
    const receiver = await WebhookReceiver.start();
    // The first request is not answered: the app is stopped while it waits; later ones fail.
    receiver.answer = (_request, earlier) => (earlier === 0 ? 'hang' : 'fail');
    const database = await testDatabase();
    const start = appWithEndpoint(
      database,
      receiver,
      tenant,
      { max_attempts: 3, timeout_ms: 1500 },
      { base: 50, max: 100 },
    );
    let app = await start();
    try {
      await sendMessage(app, tenant);
      const eventId = await eventually('the first attempt', () => receiver.received[0]?.document.id);
      await app.close();
      // Aborting it would have left it uncounted: the next start would send three more.
      expect(receiver.attempts(eventId).length).toBe(1);

      app = await start();
      const letter = await deadLetterOf(app, tenant, eventId);
      expect(letter.attempts).toBe(3);
      expect(letter.last_error).toBe('HTTP 500');
      expect(receiver.attempts(eventId).length).toBe(3);
    } finally {
      await app.close();
      await receiver.stop();
      database.release();
    }
  }, 120000);
});
