import { FakeLlmServer } from '../support/fake-llm';
import { scriptStages } from '../support/scripted-stages';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';

/** Booting the app with a fresh embedded PGlite can take minutes on a busy machine. */
const APP_START_TIMEOUT_MS = 240_000;
// Tenants of this run only: the queue of a shared database holds other runs' waiting conversations, oldest first.
const TENANT = uniqueId('acme');
const OTHER = uniqueId('globex');
const AGENT_ID = 'telecom_contas';
const ADMIN = { authorization: 'Bearer desk-admin-global' };
const ADMIN_SCOPED = { authorization: 'Bearer desk-admin-acme' };
// Named keys: a claim records the name configured with the key, never one the request gives.
const MARIA = { authorization: 'Bearer desk-maria-key' };
const JOAO = { authorization: 'Bearer desk-joao-key' };
const LEAD = { authorization: 'Bearer desk-lead-key' };
const CHANNEL = { authorization: 'Bearer desk-channel' };
const CHANNEL_OTHER = { authorization: 'Bearer desk-channel-other' };
const PENDING_MESSAGE = 'A person will answer you shortly.';

interface Waiting {
  conversation_key: string;
  tenant_id: string;
  session_id: string;
  channel: string | null;
  user_id: string | null;
  requested_at: string;
  waiting_seconds: number;
  reason: string;
  source: string;
  active_agent: string | null;
  intent: string | null;
  user_text: string | null;
  last_messages: { role: string; content: string }[];
  messages_since: number;
  claim: { claimed_by: string; claimed_at: string } | null;
}

interface ActionResult {
  action: string;
  changed: boolean;
  events: string[];
  claim?: { claimed_by: string; claimed_at: string } | null;
}

describe('the handoff desk over HTTP (HUMAN_HANDOFF_MODE=hold)', () => {
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        ENABLE_ROUTE_STICKINESS: 'true',
        HUMAN_HANDOFF_MODE: 'hold',
        HUMAN_HANDOFF_PENDING_MESSAGE: PENDING_MESSAGE,
        CHANNEL_API_KEYS: `${TENANT}:desk-channel,${OTHER}:desk-channel-other`,
        ADMIN_API_KEYS: [
          'desk-admin-global',
          `${TENANT}:desk-admin-acme`,
          `maria@${TENANT}:desk-maria-key`,
          `joao@${TENANT}:desk-joao-key`,
          'lead@*:desk-lead-key',
        ].join(','),
      },
    });
  }, APP_START_TIMEOUT_MS);

  afterAll(async () => {
    await app?.close();
    await fake.stop();
  });

  beforeEach(() => {
    fake.reset();
    scriptStages(fake, { 'I want to talk to a person': { decision: 'HUMAN_HANDOFF', confidence: 0.99 } });
  });

  async function say(tenant: string, sessionId: string, text: string) {
    const res = await app.post<{ answer: string; blocked: boolean }>(
      '/v1/channels/whatsapp/messages',
      { tenant_id: tenant, agent_id: AGENT_ID, session_id: sessionId, user_id: `u-${sessionId}`, text },
      tenant === OTHER ? CHANNEL_OTHER : CHANNEL,
    );
    expect(res.status).toBe(200);
    return res.body;
  }

  const path = (tenant: string, sessionId: string, action: string) =>
    `/v1/admin/sessions/${sessionId}/${action}?tenant_id=${tenant}`;

  async function waiting(headers: Record<string, string>, query = ''): Promise<Waiting[]> {
    const res = await app.get<{ items: Waiting[] }>(`/v1/admin/handoffs${query}`, headers);
    expect(res.status).toBe(200);
    return res.body.items;
  }

  it('lists, claims and resumes a waiting conversation; the next message runs the agent again', async () => {
    const first = uniqueId('desk');
    const second = uniqueId('desk');
    const foreign = uniqueId('desk');
    await say(TENANT, first, 'What is my plan?');
    await say(TENANT, first, 'I want to talk to a person');
    await say(OTHER, foreign, 'What is my plan?');
    const adminHandoff = await app.post<ActionResult>(
      path(OTHER, foreign, 'handoff'),
      { reason: 'called the hotline' },
      ADMIN,
    );
    expect(adminHandoff.status).toBe(200);
    await say(TENANT, second, 'I want to talk to a person');
    expect((await say(TENANT, first, 'hello?')).answer).toBe(PENDING_MESSAGE);

    const own = await waiting(ADMIN, `?tenant_id=${TENANT}`);
    expect(own.map((w) => w.session_id)).toEqual([first, second]);
    const [item] = own;
    expect(item).toMatchObject({
      conversation_key: `${TENANT}:${first}`,
      tenant_id: TENANT,
      channel: 'whatsapp',
      user_id: `u-${first}`,
      reason: 'scripted HUMAN_HANDOFF',
      source: 'continuity',
      user_text: 'I want to talk to a person',
      messages_since: 1,
      claim: null,
    });
    expect(item.last_messages).toEqual([
      expect.objectContaining({ role: 'user', content: 'What is my plan?' }),
      expect.objectContaining({ role: 'assistant', content: expect.any(String) }),
    ]);
    expect(item.active_agent).toEqual(expect.any(String));
    expect(item.waiting_seconds).toBeGreaterThanOrEqual(0);
    expect(await waiting(ADMIN, `?tenant_id=${OTHER}`)).toEqual([
      expect.objectContaining({ session_id: foreign, source: 'admin', reason: 'called the hotline' }),
    ]);

    // A tenant-scoped key sees its tenant only; another tenant is 403.
    const scoped = await waiting(ADMIN_SCOPED);
    expect(scoped.every((w) => w.tenant_id === TENANT)).toBe(true);
    expect(scoped.map((w) => w.session_id)).toEqual(expect.arrayContaining([first, second]));
    const forbidden = await app.get(`/v1/admin/handoffs?tenant_id=${OTHER}`, ADMIN_SCOPED);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toMatchObject({ error: { code: 'FORBIDDEN' } });

    const claimed = await app.post<ActionResult>(path(TENANT, first, 'claim'), {}, MARIA);
    expect(claimed.status).toBe(200);
    expect(claimed.body).toMatchObject({
      action: 'claim',
      changed: true,
      events: ['session.handoff.claimed'],
      claim: { claimed_by: 'maria' },
    });
    // What `curl -X POST` sends: no body.
    const again = await app.post<ActionResult>(path(TENANT, first, 'claim'), undefined, MARIA);
    expect(again.body).toMatchObject({ changed: false, claim: { claimed_by: 'maria' } });
    const stolen = await app.post(path(TENANT, first, 'claim'), {}, ADMIN_SCOPED);
    expect(stolen.status).toBe(409);
    expect(stolen.body).toMatchObject({
      error: { code: 'HANDOFF_CLAIMED', details: { claimed_by: 'maria' } },
    });
    const listed = (await waiting(ADMIN_SCOPED)).find((w) => w.session_id === first);
    expect(listed?.claim).toEqual({ claimed_by: 'maria', claimed_at: claimed.body.claim?.claimed_at });

    const resumed = await app.post<ActionResult>(path(TENANT, first, 'resume'), {}, ADMIN);
    expect(resumed.body).toMatchObject({ changed: true, events: ['session.resumed'] });
    const events = await app.get<{ items: { name: string; payload: Record<string, unknown> }[] }>(
      `/v1/admin/sessions/${first}/events?tenant_id=${TENANT}`,
      ADMIN,
    );
    expect(events.body.items.find((e) => e.name === 'session.resumed')?.payload).toMatchObject({
      source: 'admin',
      claimed_by: 'maria',
    });
    expect((await waiting(ADMIN, `?tenant_id=${TENANT}`)).map((w) => w.session_id)).not.toContain(first);
    const back = await say(TENANT, first, 'What is my plan?');
    expect(back.blocked).toBe(false);
    expect(back.answer).not.toBe(PENDING_MESSAGE);

    // A new request after the resume is unclaimed again.
    await say(TENANT, first, 'I want to talk to a person');
    expect(
      (await waiting(ADMIN, `?tenant_id=${TENANT}`)).find((w) => w.session_id === first)?.claim,
    ).toBeNull();
  });

  it('takes who claims from the key: no other key claims as the claimer, gives it back or ends it', async () => {
    const sessionId = uniqueId('desk');
    await say(TENANT, sessionId, 'I want to talk to a person');
    expect((await app.get('/v1/admin/me', MARIA)).body).toMatchObject({
      tenants: [TENANT],
      operator: 'maria',
    });
    // The body cannot name who claims: a request that tries is refused and writes nothing.
    const impersonated = await app.post(path(TENANT, sessionId, 'claim'), { operator: 'maria' }, JOAO);
    expect(impersonated.status).toBe(400);
    expect(impersonated.body).toMatchObject({ error: { code: 'VALIDATION_FAILED' } });
    const claimOf = async () =>
      (await waiting(MARIA)).find((w) => w.session_id === sessionId)?.claim?.claimed_by ?? null;
    expect(await claimOf()).toBeNull();
    expect((await app.post(path(TENANT, sessionId, 'claim'), {}, MARIA)).status).toBe(200);

    for (const [action, key] of [
      ['resume', JOAO],
      ['end', JOAO],
      ['resume', ADMIN_SCOPED],
    ] as const) {
      const refused = await app.post(path(TENANT, sessionId, action), {}, key);
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({
        error: { code: 'HANDOFF_CLAIMED', details: { claimed_by: 'maria' } },
      });
    }
    expect(await claimOf()).toBe('maria');
    const resumed = await app.post<ActionResult>(path(TENANT, sessionId, 'resume'), {}, MARIA);
    expect(resumed.body).toMatchObject({ changed: true, events: ['session.resumed'] });

    // A global key may end a conversation someone holds.
    await say(TENANT, sessionId, 'I want to talk to a person');
    expect((await app.post(path(TENANT, sessionId, 'claim'), {}, JOAO)).status).toBe(200);
    const ended = await app.post<ActionResult>(path(TENANT, sessionId, 'end'), {}, LEAD);
    expect(ended.status).toBe(200);
    expect(ended.body).toMatchObject({ changed: true, session: { status: 'ended' } });
  });

  it('refuses a claim on a conversation nobody is waiting on', async () => {
    const sessionId = uniqueId('desk');
    await say(TENANT, sessionId, 'What is my plan?');
    const notWaiting = await app.post(path(TENANT, sessionId, 'claim'), {}, ADMIN);
    expect(notWaiting.status).toBe(409);
    expect(notWaiting.body).toMatchObject({ error: { code: 'SESSION_STATE_CONFLICT' } });
    const badLimit = await app.get('/v1/admin/handoffs?limit=0', ADMIN);
    expect(badLimit.status).toBe(400);
    const missing = await app.post(path(TENANT, uniqueId('none'), 'claim'), {}, ADMIN);
    expect(missing.status).toBe(404);
  });

  it('races operators: one of two claims wins, and a claim racing an end or a resume never outlives it', async () => {
    const named = (headers: Record<string, string>) => (headers === MARIA ? 'maria' : 'joao');
    const eventNames = async (sessionId: string) =>
      (
        await app.get<{ items: { name: string }[] }>(
          `/v1/admin/sessions/${sessionId}/events?tenant_id=${TENANT}`,
          ADMIN,
        )
      ).body.items.map((e) => e.name);
    const claimOf = async (sessionId: string) =>
      (await waiting(ADMIN, `?tenant_id=${TENANT}`)).find((w) => w.session_id === sessionId);
    /** The checkpoint chain stays one line: every version once. */
    const expectLinear = async (sessionId: string) => {
      const res = await app.get<{ items: { version: number }[] }>(
        `/v1/admin/sessions/${sessionId}/checkpoints?tenant_id=${TENANT}`,
        ADMIN,
      );
      const versions = res.body.items.map((c) => c.version);
      expect(new Set(versions).size).toBe(versions.length);
    };
    /** Sends both at once, the first one first in even rounds and last in odd ones, so each order gets its turn. */
    const both = async <A, B>(round: number, a: () => Promise<A>, b: () => Promise<B>): Promise<[A, B]> => {
      if (round % 2 === 0) return Promise.all([a(), b()]);
      const [second, first] = await Promise.all([b(), a()]);
      return [first, second];
    };
    for (let round = 0; round < 4; round++) {
      // Two operators claim at once: one holds it, the other is told who.
      const contested = uniqueId('desk-race');
      await say(TENANT, contested, 'I want to talk to a person');
      const claims = await Promise.all(
        [MARIA, JOAO].map(async (key) => ({
          key,
          res: await app.post<ActionResult>(path(TENANT, contested, 'claim'), {}, key),
        })),
      );
      const won = claims.filter((c) => c.res.status === 200);
      expect(won).toHaveLength(1);
      const winner = named(won[0].key);
      const lost = claims.find((c) => c.res.status !== 200);
      expect(lost?.res.status).toBe(409);
      expect(lost?.res.body).toMatchObject({
        error: { code: 'HANDOFF_CLAIMED', details: { claimed_by: winner } },
      });
      expect((await claimOf(contested))?.claim?.claimed_by).toBe(winner);
      expect((await eventNames(contested)).filter((n) => n === 'session.handoff.claimed')).toHaveLength(1);

      // A claim racing the end: the session ends either way, and no claim is recorded after the end.
      const ending = uniqueId('desk-race');
      await say(TENANT, ending, 'I want to talk to a person');
      const [claim, end] = await both(
        round,
        () => app.post<ActionResult>(path(TENANT, ending, 'claim'), {}, MARIA),
        () => app.post<ActionResult>(path(TENANT, ending, 'end'), {}, LEAD),
      );
      expect(end.status).toBe(200);
      expect([200, 409]).toContain(claim.status);
      expect(await claimOf(ending)).toBeUndefined();
      const names = await eventNames(ending);
      const claimedAt = names.indexOf('session.handoff.claimed');
      expect(claim.status).toBe(claimedAt === -1 ? 409 : 200);
      if (claimedAt !== -1) expect(claimedAt).toBeLessThan(names.indexOf('session.end.requested'));
      await expectLinear(ending);

      // A claim racing a resume by another operator: one of them happens, never both.
      const resuming = uniqueId('desk-race');
      await say(TENANT, resuming, 'I want to talk to a person');
      const [claimed, resumed] = await both(
        round,
        () => app.post<ActionResult>(path(TENANT, resuming, 'claim'), {}, MARIA),
        () => app.post<ActionResult>(path(TENANT, resuming, 'resume'), {}, JOAO),
      );
      expect([claimed.status, resumed.status].sort()).toEqual([200, 409]);
      const held = await claimOf(resuming);
      if (claimed.status === 200) {
        expect(resumed.body).toMatchObject({ error: { code: 'HANDOFF_CLAIMED' } });
        expect(held?.claim?.claimed_by).toBe('maria');
      } else {
        expect(claimed.body).toMatchObject({ error: { code: 'SESSION_STATE_CONFLICT' } });
        expect(held).toBeUndefined();
      }
      await expectLinear(resuming);
    }
  });
});
