import { FakeLlmServer, GUARDRAILS_ALLOW } from '../support/fake-llm';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';

const TENANT = `auth${Date.now().toString(36)}`;
const OTHER = `${TENANT}-other`;
const KEYS = {
  channel: 'channel-key-tenant',
  channelOther: 'channel-key-other',
  admin: 'admin-key-global',
  adminScoped: 'admin-key-tenant',
  adminOther: 'admin-key-other',
};
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

interface ErrorBody {
  error: { code: string; message: string };
  request_id: string;
}

describe('authentication and tenant isolation', () => {
  let fake: FakeLlmServer;
  let app: TestApp;
  const sessionId = uniqueId('auth');

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    fake.script(GUARDRAILS_ALLOW);
    fake.setFallback({ content: 'ok' });
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        CHANNEL_API_KEYS: `${TENANT}:${KEYS.channel},${OTHER}:${KEYS.channelOther}`,
        ADMIN_API_KEYS: `${KEYS.admin},${TENANT}:${KEYS.adminScoped},${OTHER}:${KEYS.adminOther}`,
      },
    });
    const res = await app.post('/v1/channels/web/messages', message(TENANT), bearer(KEYS.channel));
    expect(res.status).toBe(200);
  });

  afterAll(async () => {
    await app.close();
    await fake.stop();
  });

  function message(tenant: string, session = sessionId) {
    return { tenant_id: tenant, agent_id: 'telecom_contas', session_id: session, text: 'Minha fatura' };
  }

  const adminEndpoints: { method: string; path: (tenant?: string) => string; body?: unknown }[] = [
    { method: 'GET', path: (t) => `/v1/admin/sessions${t ? `?tenant_id=${t}` : ''}` },
    { method: 'GET', path: (t) => `/v1/admin/sessions/${sessionId}${t ? `?tenant_id=${t}` : ''}` },
    { method: 'GET', path: (t) => `/v1/admin/sessions/${sessionId}/events${t ? `?tenant_id=${t}` : ''}` },
    {
      method: 'GET',
      path: (t) => `/v1/admin/sessions/${sessionId}/checkpoints${t ? `?tenant_id=${t}` : ''}`,
    },
    {
      method: 'POST',
      path: (t) => `/v1/admin/sessions/${sessionId}/end${t ? `?tenant_id=${t}` : ''}`,
      body: {},
    },
    {
      method: 'POST',
      path: (t) => `/v1/admin/sessions/${sessionId}/handoff${t ? `?tenant_id=${t}` : ''}`,
      body: {},
    },
    {
      method: 'POST',
      path: (t) => `/v1/admin/sessions/${sessionId}/resume${t ? `?tenant_id=${t}` : ''}`,
      body: {},
    },
    { method: 'DELETE', path: (t) => `/v1/admin/sessions/${sessionId}${t ? `?tenant_id=${t}` : ''}` },
  ];

  it('answers 401 on every endpoint without a key or with a wrong one, in the error envelope', async () => {
    const endpoints = [
      { method: 'POST', path: () => '/v1/channels/web/messages', body: message(TENANT) },
      ...adminEndpoints,
    ];
    for (const endpoint of endpoints) {
      for (const headers of [
        {},
        bearer('not-a-key'),
        bearer(`${KEYS.admin}x`),
        { authorization: `Basic ${KEYS.admin}` },
      ]) {
        const res = await app.request<ErrorBody>(
          endpoint.method,
          endpoint.path(TENANT),
          endpoint.body,
          headers,
        );
        expect({ endpoint: `${endpoint.method} ${endpoint.path()}`, status: res.status }).toEqual({
          endpoint: `${endpoint.method} ${endpoint.path()}`,
          status: 401,
        });
        expect(res.body.error.code).toBe('UNAUTHORIZED');
        expect(res.body.request_id).toBeTruthy();
        expect(res.headers.get('www-authenticate')).toBe('Bearer');
      }
    }
  });

  it('refuses a channel key on admin endpoints and an admin key on the channel endpoint (403)', async () => {
    for (const endpoint of adminEndpoints) {
      const res = await app.request<ErrorBody>(
        endpoint.method,
        endpoint.path(TENANT),
        endpoint.body,
        bearer(KEYS.channel),
      );
      expect({ endpoint: endpoint.path(), status: res.status }).toEqual({
        endpoint: endpoint.path(),
        status: 403,
      });
      expect(res.body.error.code).toBe('FORBIDDEN');
    }
    const asAdmin = await app.post<ErrorBody>(
      '/v1/channels/web/messages',
      message(TENANT),
      bearer(KEYS.admin),
    );
    expect(asAdmin.status).toBe(403);
  });

  it('refuses a channel key posting for another tenant (403) and runs nothing', async () => {
    const before = fake.requests.length;
    const res = await app.post<ErrorBody>(
      '/v1/channels/web/messages',
      message(TENANT),
      bearer(KEYS.channelOther),
    );
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
    expect(fake.requests.length).toBe(before);
    const own = await app.post(
      '/v1/channels/web/messages',
      message(OTHER, uniqueId('own')),
      bearer(KEYS.channelOther),
    );
    expect(own.status).toBe(200);
  });

  it("gives another tenant's scoped admin key a 404 on every session endpoint (no existence leak)", async () => {
    for (const endpoint of adminEndpoints.slice(1)) {
      // Naming the victim's tenant, or relying on the key's own tenant: both look like a missing session.
      for (const tenant of [TENANT, undefined]) {
        const res = await app.request<ErrorBody>(
          endpoint.method,
          endpoint.path(tenant),
          endpoint.body,
          bearer(KEYS.adminOther),
        );
        const missing = await app.request<ErrorBody>(
          endpoint.method,
          endpoint.path(tenant).replace(sessionId, 'never-existed'),
          endpoint.body,
          bearer(KEYS.adminOther),
        );
        expect({ endpoint: endpoint.path(tenant), status: res.status }).toEqual({
          endpoint: endpoint.path(tenant),
          status: 404,
        });
        expect(res.body.error).toEqual(missing.body.error);
      }
    }
    const list = await app.get<ErrorBody>(`/v1/admin/sessions?tenant_id=${TENANT}`, bearer(KEYS.adminOther));
    expect(list.status).toBe(403);
    const ownList = await app.get<{ items: { tenant_id: string }[] }>(
      '/v1/admin/sessions',
      bearer(KEYS.adminOther),
    );
    expect(ownList.status).toBe(200);
    expect(ownList.body.items.every((s) => s.tenant_id === OTHER)).toBe(true);

    // The session survived all of that.
    const detail = await app.get(`/v1/admin/sessions/${sessionId}?tenant_id=${TENANT}`, bearer(KEYS.admin));
    expect(detail.status).toBe(200);
  });

  it('lets the tenant-scoped admin key and the global key reach the session', async () => {
    for (const endpoint of adminEndpoints.slice(0, 4)) {
      const scoped = await app.request(endpoint.method, endpoint.path(), undefined, bearer(KEYS.adminScoped));
      expect({ endpoint: endpoint.path(), status: scoped.status }).toEqual({
        endpoint: endpoint.path(),
        status: 200,
      });
      const global = await app.request(endpoint.method, endpoint.path(TENANT), undefined, bearer(KEYS.admin));
      expect({ endpoint: endpoint.path(TENANT), status: global.status }).toEqual({
        endpoint: endpoint.path(TENANT),
        status: 200,
      });
    }
    const handoff = await app.post(`/v1/admin/sessions/${sessionId}/handoff`, {}, bearer(KEYS.adminScoped));
    expect(handoff.status).toBe(200);
    const resume = await app.post(`/v1/admin/sessions/${sessionId}/resume`, {}, bearer(KEYS.adminScoped));
    expect(resume.status).toBe(200);
    const end = await app.post(
      `/v1/admin/sessions/${sessionId}/end?tenant_id=${TENANT}`,
      {},
      bearer(KEYS.admin),
    );
    expect(end.status).toBe(200);
    const removed = await app.request(
      'DELETE',
      `/v1/admin/sessions/${sessionId}`,
      undefined,
      bearer(KEYS.adminScoped),
    );
    expect(removed.status).toBe(200);
  });

  it('never asks for a key on probes, metrics and docs', async () => {
    for (const path of ['/health/live', '/health/ready', '/metrics', '/docs/json']) {
      const res = await app.get(path);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
    }
  });
});

describe('authentication off (no keys configured)', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({ env: { CHANNEL_API_KEYS: undefined, ADMIN_API_KEYS: undefined } });
  });

  afterAll(async () => {
    await app.close();
  });

  it('serves every endpoint without a key, admin calls still naming the tenant', async () => {
    const sessionId = uniqueId('open');
    const turn = await app.post('/v1/channels/web/messages', {
      tenant_id: 'open',
      agent_id: 'telecom_contas',
      session_id: sessionId,
      text: 'Minha fatura',
    });
    expect(turn.status).toBe(200);
    const detail = await app.get(`/v1/admin/sessions/${sessionId}?tenant_id=open`);
    expect(detail.status).toBe(200);
    const list = await app.get<{ items: { session_id: string }[] }>('/v1/admin/sessions?tenant_id=open');
    expect(list.body.items.map((s) => s.session_id)).toContain(sessionId);
  });
});

describe('production start-up', () => {
  it('refuses to start without keys, naming the variables', async () => {
    await expect(
      startTestApp({
        env: { NODE_ENV: 'production', CHANNEL_API_KEYS: undefined, ADMIN_API_KEYS: undefined },
      }),
    ).rejects.toThrow(/NODE_ENV=production requires API keys.*CHANNEL_API_KEYS.*ADMIN_API_KEYS/s);
  });

  it('starts with keys', async () => {
    const app = await startTestApp({ env: { NODE_ENV: 'production', ADMIN_API_KEYS: 'admin-key-global' } });
    try {
      const res = await app.get('/v1/admin/sessions?tenant_id=x');
      expect(res.status).toBe(401);
    } finally {
      await app.close();
    }
  });
});
