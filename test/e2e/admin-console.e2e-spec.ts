import { FakeLlmServer } from '../support/fake-llm';
import { scriptStages } from '../support/scripted-stages';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';
import { clockPast } from '../support/wait-for';

// The admin API the operator console relies on beyond the session endpoints: the key's scope, the
// last-activity filter and the timeline.
const TENANT = `acon${Date.now().toString(36)}`;
const OTHER = `${TENANT}-b`;
const ADMIN = { authorization: 'Bearer admin-console-global' };
const SCOPED = { authorization: 'Bearer admin-console-scoped' };
const MULTI = { authorization: 'Bearer admin-console-multi' };
const CHANNEL = { authorization: 'Bearer channel-console' };

interface Summary {
  session_id: string;
  updated_at: string;
}

describe('admin API for the console', () => {
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        ENABLE_ROUTE_STICKINESS: 'true',
        CHANNEL_API_KEYS: `${TENANT}:channel-console`,
        ADMIN_API_KEYS: `admin-console-global,${TENANT}:admin-console-scoped,${TENANT}:admin-console-multi,${OTHER}:admin-console-multi`,
      },
    });
  }, 240_000);

  afterAll(async () => {
    await app?.close();
    await fake?.stop();
  });

  beforeEach(() => {
    fake.reset();
    scriptStages(fake, {
      'Qual é o meu plano?': { decision: 'ROUTE', confidence: 0.98 },
      'e o que está incluso?': { decision: 'CONTINUE', confidence: 0.97 },
      'talvez a fatura': { decision: 'CONTINUE', confidence: 0.4 },
    });
  });

  const say = (sessionId: string, text: string, tenant = TENANT) =>
    app.post<{ turn: number }>(
      '/v1/channels/web/messages',
      { tenant_id: tenant, agent_id: 'telecom_contas', session_id: sessionId, text },
      CHANNEL,
    );

  describe('GET /v1/admin/me', () => {
    it('tells a key which tenants it serves', async () => {
      const global = await app.get('/v1/admin/me', ADMIN);
      expect(global.status).toBe(200);
      expect(global.body).toEqual({
        authentication: true,
        tenants: null,
        key_id: expect.stringMatching(/^[0-9a-f]{12}$/),
        // An unnamed key acts as its id in claims.
        operator: `key:${String(global.body.key_id)}`,
      });
      expect((await app.get('/v1/admin/me', SCOPED)).body).toMatchObject({ tenants: [TENANT] });
      expect((await app.get('/v1/admin/me', MULTI)).body).toMatchObject({ tenants: [TENANT, OTHER].sort() });
    });

    it('refuses a missing or unknown key (401) and a channel key (403)', async () => {
      expect((await app.get('/v1/admin/me')).status).toBe(401);
      const unknown = await app.get('/v1/admin/me', { authorization: 'Bearer nope' });
      expect(unknown.status).toBe(401);
      expect(unknown.body).toMatchObject({ error: { code: 'UNAUTHORIZED' } });
      expect((await app.get('/v1/admin/me', CHANNEL)).status).toBe(403);
    });
  });

  describe('GET /v1/admin/sessions by last activity', () => {
    it('keeps the sessions active in [updated_after, updated_before)', async () => {
      const older = uniqueId('act');
      const newer = uniqueId('act');
      expect((await say(older, 'Minha fatura')).status).toBe(200);
      const list = async (query: string) => {
        const res = await app.get<{ items: Summary[] }>(
          `/v1/admin/sessions?tenant_id=${TENANT}&${query}`,
          ADMIN,
        );
        expect(res.status).toBe(200);
        return res.body.items.map((item) => item.session_id);
      };
      const [olderRow] = (
        await app.get<{ items: Summary[] }>(`/v1/admin/sessions?tenant_id=${TENANT}&limit=1`, ADMIN)
      ).body.items;
      const boundary = new Date(Date.parse(olderRow.updated_at) + 1).toISOString();
      await clockPast(new Date(boundary));
      expect((await say(newer, 'Minha fatura')).status).toBe(200);

      expect(await list(`updated_after=${boundary}`)).toEqual([newer]);
      expect(await list(`updated_before=${boundary}`)).toEqual([older]);
      expect(await list(`updated_after=${olderRow.updated_at}&updated_before=${boundary}`)).toEqual([older]);
      expect(await list(`updated_after=${new Date(Date.now() + 60_000).toISOString()}`)).toEqual([]);
    });

    it('refuses a value that is not an ISO-8601 date-time', async () => {
      for (const query of ['updated_after=yesterday', 'updated_before=2025-13-01T00:00:00Z']) {
        const res = await app.get(`/v1/admin/sessions?tenant_id=${TENANT}&${query}`, ADMIN);
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({
          error: { code: 'VALIDATION_FAILED', details: [{ field: query.split('=')[0] }] },
        });
      }
    });
  });

  describe('GET /v1/admin/sessions/:id/timeline', () => {
    interface TimelineTurn {
      turn: number;
      route: string | null;
      method: string | null;
      route_bypassed: boolean;
      continuity: {
        decision: string;
        confidence: number;
        accepted: boolean;
        fallback_reason: string | null;
      } | null;
      user_message: string | null;
      answer: string | null;
      guardrails: { stage: string; blocked: boolean }[];
      nodes: { node: string; duration_ms: number }[];
      model_usage: { profile: string; calls: number; prompt_tokens: number; completion_tokens: number }[];
      recoveries: {
        kind: string;
        version: number | null;
        skipped: number | null;
        found_version: number | null;
      }[];
      admin_actions: { action: string; reason: string | null }[];
      events: { name: string }[];
    }
    interface Timeline {
      session: { session_id: string; head_version: number };
      state_version: number | null;
      messages_from_turn: number | null;
      turns: TimelineTurn[];
    }
    const timeline = (sessionId: string, headers = ADMIN, tenant: string | null = TENANT) =>
      app.get<Timeline>(
        `/v1/admin/sessions/${sessionId}/timeline${tenant ? `?tenant_id=${tenant}` : ''}`,
        headers,
      );

    it('shows every turn with its messages, continuity verdict, route, method, timings and tokens', async () => {
      const id = uniqueId('tl');
      for (const text of ['Qual é o meu plano?', 'e o que está incluso?', 'talvez a fatura']) {
        expect((await say(id, text)).status).toBe(200);
      }
      expect(
        (await app.post(`/v1/admin/sessions/${id}/end?tenant_id=${TENANT}`, { reason: 'resolved' }, ADMIN))
          .status,
      ).toBe(200);

      const res = await timeline(id);
      expect(res.status).toBe(200);
      expect(res.body.session.session_id).toBe(id);
      expect(res.body.messages_from_turn).toBe(1);
      expect(res.body.state_version).toBe(res.body.session.head_version);
      const [plan, included, unsure] = res.body.turns;
      expect(res.body.turns).toHaveLength(3);
      expect(plan).toMatchObject({
        turn: 1,
        route: 'product_agent',
        route_bypassed: false,
        continuity: { decision: 'ROUTE', confidence: 0.98, accepted: true, fallback_reason: null },
        user_message: 'Qual é o meu plano?',
        answer: expect.stringContaining('Resposta sobre'),
      });
      expect(plan.method).not.toBe('continuity');
      expect(included).toMatchObject({
        turn: 2,
        route: 'product_agent',
        method: 'continuity',
        route_bypassed: true,
        continuity: { decision: 'CONTINUE', confidence: 0.97, accepted: true },
        user_message: 'e o que está incluso?',
      });
      // Below the threshold: the classifier is overruled and the router decides.
      expect(unsure).toMatchObject({
        turn: 3,
        route: 'billing_agent',
        route_bypassed: false,
        continuity: { decision: 'CONTINUE', accepted: false, fallback_reason: 'below_threshold' },
        admin_actions: [{ action: 'end', reason: 'resolved' }],
      });
      for (const turn of res.body.turns) {
        expect(turn.nodes.length).toBeGreaterThan(0);
        expect(turn.guardrails.map((g) => g.stage)).toContain('input');
        expect(turn.events.map((e) => e.name)).toContain('router.continuity');
      }
      const profiles = (turn: TimelineTurn) => turn.model_usage.map((usage) => usage.profile);
      expect(profiles(plan)).toEqual(expect.arrayContaining(['route_continuity', 'agent']));
      expect(profiles(included)).not.toContain('router');
      expect(included.model_usage.find((usage) => usage.profile === 'route_continuity')).toMatchObject({
        calls: 1,
        prompt_tokens: 310,
        completion_tokens: 14,
      });
    });

    it('marks a corrupt-checkpoint recovery on the turn that ran into it', async () => {
      const id = uniqueId('tl');
      for (const text of ['Qual é o meu plano?', 'e o que está incluso?']) {
        expect((await say(id, text)).status).toBe(200);
      }
      await app.dataSource.query(
        `UPDATE checkpoints SET state = jsonb_set(state::jsonb, '{route}', '"tampered"')::text WHERE conversation_key = $1 AND version = 2`,
        [`${TENANT}:${id}`],
      );
      const corrupt = await timeline(id);
      expect(corrupt.body.session.head_version).toBe(2);
      expect(corrupt.body.state_version).toBe(1);

      expect((await say(id, 'Qual é o meu plano?')).status).toBe(200);
      const recovered = await timeline(id);
      expect(recovered.body.turns.map((turn) => turn.recoveries)).toEqual([
        [],
        [],
        [expect.objectContaining({ kind: 'skip_corrupt', version: 2 })],
      ]);
    });

    it('marks missing checkpoint versions on the turn that ran into them', async () => {
      const id = uniqueId('tl');
      for (const text of ['Qual é o meu plano?', 'e o que está incluso?', 'e o roaming?']) {
        expect((await say(id, text)).status).toBe(200);
      }
      await app.dataSource.query(
        'DELETE FROM checkpoints WHERE conversation_key = $1 AND version IN (2, 3)',
        [`${TENANT}:${id}`],
      );
      expect((await say(id, 'Qual é o meu plano?')).status).toBe(200);
      const recovered = await timeline(id);
      expect(recovered.body.turns.map((turn) => turn.recoveries)).toEqual([
        [],
        [],
        [],
        [{ kind: 'version_gap', version: 3, reason: null, skipped: 2, found_version: 1 }],
      ]);
    });

    it('keeps tenants apart and validates the request', async () => {
      const id = uniqueId('tl');
      expect((await say(id, 'Qual é o meu plano?')).status).toBe(200);
      expect((await timeline(id, SCOPED, null)).status).toBe(200);
      const foreign = await timeline(id, SCOPED, OTHER);
      expect(foreign.status).toBe(404);
      expect(foreign.body).toMatchObject({ error: { code: 'SESSION_NOT_FOUND' } });
      expect((await timeline(id, ADMIN, OTHER)).status).toBe(404);
      expect((await timeline(id, ADMIN, null)).status).toBe(400);
      expect((await timeline('bad id!', ADMIN)).status).toBe(400);
      expect((await timeline(id, { authorization: 'Bearer nope' })).status).toBe(401);
    });
  });
});
