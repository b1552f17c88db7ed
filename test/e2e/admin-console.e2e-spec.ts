import { FakeLlmServer } from '../support/fake-llm';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';

// The admin API the operator console relies on beyond the session endpoints: the key's scope and the
// last-activity filter.
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
    fake.script({ model: 'agent', reply: { content: 'Resposta do agente.' } });
    fake.setFallback({ json: { intent: 'unknown', confidence: 0, reason: 'test' } });
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        CHANNEL_API_KEYS: `${TENANT}:channel-console`,
        ADMIN_API_KEYS: `admin-console-global,${TENANT}:admin-console-scoped,${TENANT}:admin-console-multi,${OTHER}:admin-console-multi`,
      },
    });
  }, 240_000);

  afterAll(async () => {
    await app?.close();
    await fake?.stop();
  });

  describe('GET /v1/admin/me', () => {
    it('tells a key which tenants it serves', async () => {
      const global = await app.get('/v1/admin/me', ADMIN);
      expect(global.status).toBe(200);
      expect(global.body).toEqual({
        authentication: true,
        tenants: null,
        key_id: expect.stringMatching(/^[0-9a-f]{12}$/),
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
      const say = (sessionId: string) =>
        app.post(
          '/v1/channels/web/messages',
          { tenant_id: TENANT, agent_id: 'telecom_contas', session_id: sessionId, text: 'Minha fatura' },
          CHANNEL,
        );
      expect((await say(older)).status).toBe(200);
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
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect((await say(newer)).status).toBe(200);

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
});
