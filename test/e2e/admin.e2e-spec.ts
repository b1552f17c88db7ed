import { FakeLlmServer, GUARDRAILS_ALLOW } from '../support/fake-llm';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';

// Tenants of their own, so listings are exact even when other suites share the database.
const TENANT = `adm${Date.now().toString(36)}`;
const OTHER = `${TENANT}-other`;
const CHANNEL = { authorization: 'Bearer channel-key-tenant' };
const CHANNEL_OTHER = { authorization: 'Bearer channel-key-other' };
const ADMIN = { authorization: 'Bearer admin-key-global' };
const ADMIN_SCOPED = { authorization: 'Bearer admin-key-tenant' };

const HANDOFF_MESSAGE = 'Um atendente humano vai continuar.';
const PENDING_MESSAGE = 'Aguarde o atendente.';
const END_MESSAGE = 'Encerrado pelo atendimento.';
const ALREADY_ENDED = 'Sessão encerrada.';

interface Turn {
  turn: number;
  answer: string;
  route: string | null;
  route_decision: { method?: string; confidence?: number } | null;
  blocked: boolean;
  session_ended: boolean;
}
interface Summary {
  conversation_key: string;
  tenant_id: string;
  session_id: string;
  agent_id: string;
  status: string;
  turn_count: number;
  head_version: number;
}
interface ActionResult {
  action: string;
  changed: boolean;
  version: number;
  message: string | null;
  events: string[];
  session: Summary;
  state: Record<string, unknown>;
}

describe('admin API', () => {
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        CHANNEL_API_KEYS: `${TENANT}:channel-key-tenant,${OTHER}:channel-key-other`,
        ADMIN_API_KEYS: `admin-key-global,${TENANT}:admin-key-tenant`,
        HUMAN_HANDOFF_MODE: 'hold',
        HUMAN_HANDOFF_MESSAGE: HANDOFF_MESSAGE,
        HUMAN_HANDOFF_PENDING_MESSAGE: PENDING_MESSAGE,
        END_SESSION_MESSAGE: END_MESSAGE,
        SESSION_ALREADY_ENDED_MESSAGE: ALREADY_ENDED,
      },
    });
  });

  afterAll(async () => {
    await app.close();
    await fake.stop();
  });

  beforeEach(() => {
    fake.reset();
    fake.script({ model: 'agent', reply: { content: 'Resposta do agente.' } });
    fake.script(GUARDRAILS_ALLOW);
    fake.setFallback({ json: { intent: 'unknown', confidence: 0, reason: 'test' } });
  });

  const say = (
    sessionId: string,
    text: string,
    options: { tenant?: string; agent?: string; messageId?: string } = {},
  ) =>
    app.post<Turn>(
      '/v1/channels/web/messages',
      {
        tenant_id: options.tenant ?? TENANT,
        agent_id: options.agent ?? 'telecom_contas',
        session_id: sessionId,
        text,
        user_id: 'user-1',
        ...(options.messageId ? { message_id: options.messageId } : {}),
      },
      options.tenant === OTHER ? CHANNEL_OTHER : CHANNEL,
    );

  const sessionPath = (sessionId: string, suffix = '', tenant = TENANT) =>
    `/v1/admin/sessions/${sessionId}${suffix}?tenant_id=${tenant}`;

  describe('GET /v1/admin/sessions', () => {
    it('lists the sessions of a tenant with filters and cursor pagination', async () => {
      const sessions = [uniqueId('list'), uniqueId('list'), uniqueId('list')];
      for (const [index, id] of sessions.entries()) {
        const res = await say(id, 'Minha fatura veio alta', {
          agent: index === 2 ? 'retail_orders' : 'telecom_contas',
        });
        expect(res.status).toBe(200);
      }
      const other = uniqueId('other');
      await say(other, 'Minha fatura', { tenant: OTHER });

      const all: Summary[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const query: string = `tenant_id=${TENANT}&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const page = await app.get<{ items: Summary[]; next_cursor: string | null }>(
          `/v1/admin/sessions?${query}`,
          ADMIN,
        );
        expect(page.status).toBe(200);
        expect(page.body.items.length).toBeLessThanOrEqual(2);
        all.push(...page.body.items);
        cursor = page.body.next_cursor;
        pages++;
      } while (cursor && pages < 100);
      expect(pages).toBe(2);
      const keys = all.map((s) => s.conversation_key);
      expect(new Set(keys).size).toBe(keys.length);
      expect(keys.sort()).toEqual(sessions.map((id) => `${TENANT}:${id}`).sort());

      const newest = await app.get<{ items: Summary[] }>(
        `/v1/admin/sessions?tenant_id=${TENANT}&limit=1`,
        ADMIN,
      );
      expect(newest.body.items[0].session_id).toBe(sessions[2]);

      const retail = await app.get<{ items: Summary[] }>(
        `/v1/admin/sessions?tenant_id=${TENANT}&agent_id=retail_orders`,
        ADMIN,
      );
      expect(retail.body.items.map((s) => s.session_id)).toEqual([sessions[2]]);

      await app.post(sessionPath(sessions[0], '/end'), {}, ADMIN);
      const ended = await app.get<{ items: Summary[] }>(
        `/v1/admin/sessions?tenant_id=${TENANT}&status=ended`,
        ADMIN,
      );
      expect(ended.body.items.map((s) => s.session_id)).toEqual([sessions[0]]);

      const otherTenant = await app.get<{ items: Summary[] }>(`/v1/admin/sessions?tenant_id=${OTHER}`, ADMIN);
      expect(otherTenant.body.items.map((s) => s.session_id)).toEqual([other]);

      // A tenant-scoped key lists its own tenant without naming it.
      const scoped = await app.get<{ items: Summary[] }>('/v1/admin/sessions', ADMIN_SCOPED);
      expect(scoped.status).toBe(200);
      expect(scoped.body.items.map((s) => s.session_id).sort()).toEqual([...sessions].sort());
    });

    it('rejects bad filters and cursors with 400', async () => {
      const badStatus = await app.get<{ error: { code: string } }>('/v1/admin/sessions?status=open', ADMIN);
      expect(badStatus.status).toBe(400);
      expect(badStatus.body.error.code).toBe('VALIDATION_FAILED');
      const badLimit = await app.get('/v1/admin/sessions?limit=0', ADMIN);
      expect(badLimit.status).toBe(400);
      const badCursor = await app.get<{ error: { code: string } }>('/v1/admin/sessions?cursor=nope', ADMIN);
      expect(badCursor.status).toBe(400);
      expect(badCursor.body.error.code).toBe('INVALID_CURSOR');
    });
  });

  it('shows a session: state summary and the decision of every turn', async () => {
    const id = uniqueId('detail');
    const first = await say(id, 'Minha fatura veio alta');
    const second = await say(id, 'E o vencimento?');
    expect(second.body.turn).toBe(2);

    const res = await app.get<{
      session: Summary;
      state: Record<string, unknown>;
      turns: Record<string, unknown>[];
      admin_actions: unknown[];
    }>(sessionPath(id), ADMIN);
    expect(res.status).toBe(200);
    expect(res.body.session).toMatchObject({
      conversation_key: `${TENANT}:${id}`,
      tenant_id: TENANT,
      session_id: id,
      agent_id: 'telecom_contas',
      status: 'active',
      turn_count: 2,
      head_version: 2,
    });
    expect(res.body.state).toMatchObject({
      version: 2,
      route: second.body.route,
      session_ended: false,
      human_handoff_requested: false,
      subject_key: 'user-1',
      history_messages: 4,
    });
    expect(res.body.turns.map((t) => t.turn)).toEqual([1, 2]);
    for (const [index, turn] of [first.body, second.body].entries()) {
      expect(res.body.turns[index]).toMatchObject({
        route: turn.route,
        method: turn.route_decision?.method ?? null,
        route_bypassed: false,
        blocked: false,
      });
      expect(typeof res.body.turns[index].latency_ms).toBe('number');
      expect(typeof res.body.turns[index].at).toBe('string');
    }
    expect(res.body.admin_actions).toEqual([]);
  });

  it('lists the stored events in commit order', async () => {
    const id = uniqueId('events');
    await say(id, 'Minha fatura veio alta');
    const res = await app.get<{
      items: { id: string; turn: number; seq: number; name: string; payload: Record<string, unknown> }[];
    }>(sessionPath(id, '/events'), ADMIN);
    expect(res.status).toBe(200);
    const names = res.body.items.map((e) => e.name);
    expect(names[0]).toBe('NOC.001');
    expect(names).toContain('AGENT_COMPLETED');
    const ids = res.body.items.map((e) => BigInt(e.id));
    expect([...ids].sort((a, b) => (a < b ? -1 : 1))).toEqual(ids);
    for (const event of res.body.items) {
      expect(event.turn).toBe(1);
      expect(event.payload).toMatchObject({
        conversation_key: `${TENANT}:${id}`,
        tenant_id: TENANT,
        session_id: id,
      });
    }
  });

  it('lists checkpoints newest first with their integrity status', async () => {
    const id = uniqueId('ckpt');
    await say(id, 'Minha fatura veio alta');
    await say(id, 'E o vencimento?');
    const before = await app.get<{
      items: {
        version: number;
        parent_version: number | null;
        valid: boolean;
        checksum: string;
        size_bytes: number;
      }[];
    }>(sessionPath(id, '/checkpoints'), ADMIN);
    expect(before.status).toBe(200);
    expect(before.body.items.map((c) => [c.version, c.parent_version, c.valid])).toEqual([
      [2, 1, true],
      [1, null, true],
    ]);
    expect(before.body.items[0].checksum).toMatch(/^[0-9a-f]{64}$/);
    expect(before.body.items[0].size_bytes).toBeGreaterThan(0);

    // Tamper with the newest version behind the store's back: the listing flags it, the detail falls back.
    await app.dataSource.query(
      `UPDATE checkpoints SET state = jsonb_set(state::jsonb, '{route}', '"tampered"')::text WHERE conversation_key = $1 AND version = 2`,
      [`${TENANT}:${id}`],
    );
    const after = await app.get<{ items: { version: number; valid: boolean }[] }>(
      sessionPath(id, '/checkpoints'),
      ADMIN,
    );
    expect(after.body.items.map((c) => [c.version, c.valid])).toEqual([
      [2, false],
      [1, true],
    ]);
    const detail = await app.get<{ state: { version: number | null } }>(sessionPath(id), ADMIN);
    expect(detail.status).toBe(200);
    expect(detail.body.state.version).toBe(1);
  });

  it('hands off (held), keeps the bot silent, then resumes it', async () => {
    const id = uniqueId('handoff');
    await say(id, 'Minha fatura veio alta');

    const handoff = await app.post<ActionResult>(
      sessionPath(id, '/handoff'),
      { reason: 'VIP customer' },
      ADMIN,
    );
    expect(handoff.status).toBe(200);
    expect(handoff.body).toMatchObject({
      action: 'handoff',
      changed: true,
      version: 2,
      message: HANDOFF_MESSAGE,
      events: ['session.human_handoff.requested'],
      session: { status: 'handoff', turn_count: 1, head_version: 2 },
      state: {
        session_control: 'HUMAN_HANDOFF',
        human_handoff_requested: true,
        human_handoff_held: true,
        session_ended: false,
        next_state: 'HUMAN_HANDOFF_REQUESTED',
      },
    });
    const again = await app.post<ActionResult>(sessionPath(id, '/handoff'), {}, ADMIN);
    expect(again.body).toMatchObject({ changed: false, version: 2, events: [] });

    const held = await say(id, 'Alô?');
    expect(held.body).toMatchObject({ turn: 2, answer: PENDING_MESSAGE, blocked: true });
    expect(fake.requestsFor('agent')).toHaveLength(1);

    const resume = await app.post<ActionResult>(sessionPath(id, '/resume'), undefined, ADMIN);
    expect(resume.status).toBe(200);
    expect(resume.body).toMatchObject({
      action: 'resume',
      changed: true,
      message: null,
      events: ['session.resumed'],
      session: { status: 'active' },
      state: { human_handoff_held: false, human_handoff_requested: false, session_control: null },
    });
    const noop = await app.post<ActionResult>(sessionPath(id, '/resume'), undefined, ADMIN);
    expect(noop.body.changed).toBe(false);

    const back = await say(id, 'Minha fatura veio alta de novo');
    expect(back.body).toMatchObject({ turn: 3, blocked: false, answer: 'Resposta do agente.' });

    const events: { name: string; payload: Record<string, unknown>; turn: number }[] =
      await app.dataSource.query(
        `SELECT name, payload, turn FROM session_events WHERE conversation_key = $1 AND name = 'session.human_handoff.requested'`,
        [`${TENANT}:${id}`],
      );
    expect(events).toHaveLength(1);
    expect(events[0].payload).toMatchObject({
      source: 'admin',
      reason: 'VIP customer',
      turn: 1,
      session_id: id,
    });

    const detail = await app.get<{
      admin_actions: { action: string; reason: string | null; after_turn: number }[];
    }>(sessionPath(id), ADMIN);
    expect(detail.body.admin_actions).toEqual([
      expect.objectContaining({ action: 'handoff', reason: 'VIP customer', after_turn: 1 }),
      expect.objectContaining({ action: 'resume', reason: null, after_turn: 2 }),
    ]);
  });

  it('ends a session with the END_SESSION contract and source admin', async () => {
    const id = uniqueId('end');
    await say(id, 'Minha fatura veio alta');
    await say(id, 'E o vencimento?');

    const end = await app.post<ActionResult>(
      sessionPath(id, '/end'),
      { reason: 'closed by operator' },
      ADMIN,
    );
    expect(end.status).toBe(200);
    expect(end.body).toMatchObject({
      action: 'end',
      changed: true,
      version: 3,
      message: END_MESSAGE,
      events: ['session.end.requested'],
      session: { status: 'ended', turn_count: 2, head_version: 3 },
      state: {
        session_control: 'END_SESSION',
        session_ended: true,
        human_handoff_requested: false,
        next_state: 'SESSION_ENDED',
      },
    });
    const rows: { payload: Record<string, unknown>; turn: number }[] = await app.dataSource.query(
      `SELECT payload, turn FROM session_events WHERE conversation_key = $1 AND name = 'session.end.requested'`,
      [`${TENANT}:${id}`],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ turn: 2, payload: { source: 'admin', reason: 'closed by operator' } });
    const checkpoints = await app.get<{ items: { version: number; valid: boolean }[] }>(
      sessionPath(id, '/checkpoints'),
      ADMIN,
    );
    expect(checkpoints.body.items[0]).toMatchObject({ version: 3, valid: true });

    const after = await say(id, 'Ainda está aí?');
    expect(after.body).toMatchObject({ turn: 3, answer: ALREADY_ENDED, session_ended: true, blocked: true });
    expect(fake.requestsFor('agent')).toHaveLength(2);

    const again = await app.post<ActionResult>(sessionPath(id, '/end'), {}, ADMIN);
    expect(again.body).toMatchObject({ changed: false, events: [] });
    for (const action of ['handoff', 'resume']) {
      const conflict = await app.post<{ error: { code: string; details: { status: string } } }>(
        sessionPath(id, `/${action}`),
        {},
        ADMIN,
      );
      expect(conflict.status).toBe(409);
      expect(conflict.body.error).toMatchObject({
        code: 'SESSION_STATE_CONFLICT',
        details: { status: 'ended' },
      });
    }
  });

  it('deletes a session: checkpoints, events, idempotency records and the session row', async () => {
    const id = uniqueId('delete');
    const first = await say(id, 'Minha fatura veio alta', { messageId: 'm-1' });
    expect(first.body.turn).toBe(1);
    const key = `${TENANT}:${id}`;

    const res = await app.request<Record<string, unknown>>('DELETE', sessionPath(id), undefined, ADMIN);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      conversation_key: key,
      deleted: true,
      memory_items_deleted: 0,
      memory_subject_key: 'user-1',
    });
    for (const table of ['checkpoints', 'session_events', 'processed_messages', 'sessions']) {
      const rows: unknown[] = await app.dataSource.query(
        `SELECT 1 FROM ${table} WHERE conversation_key = $1`,
        [key],
      );
      expect({ table, rows: rows.length }).toEqual({ table, rows: 0 });
    }
    for (const suffix of ['', '/events', '/checkpoints']) {
      const gone = await app.get<{ error: { code: string } }>(sessionPath(id, suffix), ADMIN);
      expect(gone.status).toBe(404);
      expect(gone.body.error.code).toBe('SESSION_NOT_FOUND');
    }
    const again = await app.request('DELETE', sessionPath(id), undefined, ADMIN);
    expect(again.status).toBe(404);

    // The idempotency record went too: the same message id starts a new conversation.
    const replay = await say(id, 'Minha fatura veio alta', { messageId: 'm-1' });
    expect(replay.headers.get('idempotent-replay')).toBeNull();
    expect(replay.body.turn).toBe(1);
  });

  describe('long-term memory of a deleted session and of a subject', () => {
    const remember = (
      tenant: string,
      subject: string,
      key: string,
      session: string | null,
      agent = 'telecom_contas',
    ) =>
      app.dataSource.query(
        `INSERT INTO long_term_memories
           (tenant_id, agent_id, subject_key, category, key, value, confidence, source_session_id)
         VALUES ($1, $2, $3, 'preference', $4, 'x', 0.9, $5)`,
        [tenant, agent, subject, key, session],
      );
    const remembered = async (tenant: string): Promise<string[]> => {
      const rows: { agent_id: string; subject_key: string; key: string }[] = await app.dataSource.query(
        'SELECT agent_id, subject_key, key FROM long_term_memories WHERE tenant_id = $1 ORDER BY agent_id, subject_key, key',
        [tenant],
      );
      return rows.map((row) => `${row.agent_id}/${row.subject_key}/${row.key}`);
    };
    const subjectPath = (subject: string, query: string) => `/v1/admin/memory/subjects/${subject}?${query}`;

    afterAll(() =>
      app.dataSource.query('DELETE FROM long_term_memories WHERE tenant_id = ANY($1)', [[TENANT, OTHER]]),
    );

    it('deletes what the session produced with it, keeps the rest of the subject, and keeps all on request', async () => {
      const id = uniqueId('purge');
      const kept = uniqueId('kept');
      await say(id, 'Minha fatura veio alta', { tenant: OTHER });
      await say(kept, 'Minha fatura veio alta', { tenant: OTHER });
      await remember(OTHER, 'user-1', 'channel', id);
      await remember(OTHER, 'user-1', 'plan', id);
      await remember(OTHER, 'user-1', 'city', 'an-earlier-session');
      await remember(OTHER, 'user-2', 'plan', id);
      await remember(OTHER, 'user-1', 'language', kept);

      const badFlag = await app.request(
        'DELETE',
        `${sessionPath(id, '', OTHER)}&purge_memory=maybe`,
        undefined,
        ADMIN,
      );
      expect(badFlag.status).toBe(400);
      const res = await app.request<Record<string, unknown>>(
        'DELETE',
        sessionPath(id, '', OTHER),
        undefined,
        ADMIN,
      );
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        conversation_key: `${OTHER}:${id}`,
        deleted: true,
        memory_items_deleted: 3,
        memory_subject_key: 'user-1',
      });
      expect(await remembered(OTHER)).toEqual([
        'telecom_contas/user-1/city',
        'telecom_contas/user-1/language',
      ]);
      expect((await app.get(sessionPath(id, '', OTHER), ADMIN)).status).toBe(404);

      const keep = await app.request<Record<string, unknown>>(
        'DELETE',
        `${sessionPath(kept, '', OTHER)}&purge_memory=false`,
        undefined,
        ADMIN,
      );
      expect(keep.body).toMatchObject({ deleted: true, memory_items_deleted: null });
      expect(await remembered(OTHER)).toEqual([
        'telecom_contas/user-1/city',
        'telecom_contas/user-1/language',
      ]);
    });

    it("forgets a subject on an explicit call: the subject's facts of every agent in one tenant, nothing else", async () => {
      const tenant = TENANT;
      await remember(tenant, 'forget-me', 'plan', 's-a');
      await remember(tenant, 'forget-me', 'order', 's-b', 'retail_orders');
      await remember(tenant, 'someone-else', 'plan', 's-a');
      await remember(OTHER, 'forget-me', 'plan', 's-c');

      const missingTenant = await app.request(
        'DELETE',
        '/v1/admin/memory/subjects/forget-me',
        undefined,
        ADMIN,
      );
      expect(missingTenant.status).toBe(400);
      const foreign = await app.request('DELETE', subjectPath('forget-me', `tenant_id=${OTHER}`), undefined, {
        authorization: 'Bearer admin-key-tenant',
      });
      expect(foreign.status).toBe(403);

      const oneAgent = await app.request<Record<string, unknown>>(
        'DELETE',
        subjectPath('forget-me', `tenant_id=${tenant}&agent_id=retail_orders`),
        undefined,
        ADMIN,
      );
      expect(oneAgent.body).toEqual({
        tenant_id: tenant,
        agent_id: 'retail_orders',
        subject_key: 'forget-me',
        memory_items_deleted: 1,
      });
      // A tenant-scoped key defaults to its tenant.
      const all = await app.request<Record<string, unknown>>(
        'DELETE',
        subjectPath('forget-me', ''),
        undefined,
        {
          authorization: 'Bearer admin-key-tenant',
        },
      );
      expect(all.status).toBe(200);
      expect(all.body).toEqual({
        tenant_id: tenant,
        agent_id: null,
        subject_key: 'forget-me',
        memory_items_deleted: 1,
      });
      expect((await remembered(tenant)).filter((row) => row.includes('/forget-me/'))).toEqual([]);
      expect(await remembered(tenant)).toContain('telecom_contas/someone-else/plan');
      expect(await remembered(OTHER)).toContain('telecom_contas/forget-me/plan');
    });
  });

  it('answers 404 for unknown sessions and 400 when a global key names no tenant', async () => {
    for (const [method, suffix] of [
      ['GET', ''],
      ['GET', '/events'],
      ['GET', '/checkpoints'],
      ['POST', '/end'],
      ['POST', '/handoff'],
      ['POST', '/resume'],
      ['DELETE', ''],
    ] as const) {
      const missing = await app.request<{ error: { code: string } }>(
        method,
        sessionPath('no-such-session', suffix),
        method === 'POST' ? {} : undefined,
        ADMIN,
      );
      expect({ method, suffix, status: missing.status }).toEqual({ method, suffix, status: 404 });
      const noTenant = await app.request<{ error: { code: string; details: { field: string }[] } }>(
        method,
        `/v1/admin/sessions/any${suffix}`,
        method === 'POST' ? {} : undefined,
        ADMIN,
      );
      expect(noTenant.status).toBe(400);
      expect(noTenant.body.error.details[0].field).toBe('tenant_id');
    }
    const badId = await app.get(
      `/v1/admin/sessions/${encodeURIComponent('bad id!')}?tenant_id=${TENANT}`,
      ADMIN,
    );
    expect(badId.status).toBe(400);
  });
});
