import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { deploymentSpec, k8sDocuments } from '../support/k8s-manifests';
import { REPO_ROOT, startTestApp, TestApp, uniqueId } from '../support/test-app';

const TENANT = `ops${Date.now().toString(36)}`;
const KEYS = { admin: 'admin-key-first', admin2: 'admin-key-second', channel: 'channel-key-ops' };
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

interface ErrorBody {
  error: { code: string; message: string };
  request_id: string;
}

describe('rate limit, body limit, headers', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({
      env: {
        RATE_LIMIT_PER_MINUTE: '3',
        BODY_LIMIT_BYTES: '2048',
        CHANNEL_API_KEYS: `${TENANT}:${KEYS.channel}`,
        ADMIN_API_KEYS: `${KEYS.admin},${KEYS.admin2}`,
      },
    });
  });

  afterAll(async () => {
    await app.close();
  });

  it('limits each key separately, across routes, with 429 and Retry-After', async () => {
    const list = `/v1/admin/sessions?tenant_id=${TENANT}`;
    for (let i = 1; i <= 3; i++) {
      const ok = await app.get(list, bearer(KEYS.admin));
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-ratelimit-limit')).toBe('3');
      expect(ok.headers.get('x-ratelimit-remaining')).toBe(String(3 - i));
    }
    const limited = await app.get<ErrorBody>(list, bearer(KEYS.admin));
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('RATE_LIMITED');
    expect(limited.body.error.message).toBe('rate limit exceeded: 3 requests per minute; retry after 60 s');
    expect(limited.body.request_id).toBeTruthy();
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);

    // Same key, another route: the bucket is the key's, not the route's.
    const other = await app.get(`/v1/admin/sessions/x?tenant_id=${TENANT}`, bearer(KEYS.admin));
    expect(other.status).toBe(429);
    // Another key is unaffected.
    const second = await app.get(list, bearer(KEYS.admin2));
    expect(second.status).toBe(200);
    // Probes and scrapes are never limited.
    for (let i = 0; i < 6; i++) {
      expect((await app.get('/health/live')).status).toBe(200);
      expect((await app.get('/metrics')).status).toBe(200);
    }
  });

  it('limits failed key guesses by client address, whatever X-Forwarded-For claims (no TRUST_PROXY)', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await app.get(`/v1/admin/sessions?tenant_id=${TENANT}`, {
        ...bearer(`guess-${i}`),
        'x-forwarded-for': `203.0.113.${i}`,
      });
      statuses.push(res.status);
    }
    expect(statuses).toEqual([401, 401, 401, 429]);
  });

  it('answers 413 in the error envelope for a body over BODY_LIMIT_BYTES', async () => {
    const res = await app.post<ErrorBody>(
      '/v1/channels/web/messages',
      { tenant_id: TENANT, agent_id: 'telecom_contas', session_id: uniqueId(), text: 'x'.repeat(4096) },
      bearer(KEYS.channel),
    );
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(res.body.request_id).toBe(res.headers.get('x-request-id'));
  });

  it('answers malformed JSON with 400 and unknown routes with 404, both in the envelope', async () => {
    const bad = await app.post<ErrorBody>(
      '/v1/channels/web/messages',
      '{"tenant_id": ',
      bearer(KEYS.channel),
    );
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBeTruthy();
    expect(bad.body.request_id).toBeTruthy();
    const missing = await app.get<ErrorBody>('/v1/nothing-here');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('NOT_FOUND');
  });

  it('sends security headers', async () => {
    for (const path of ['/health/live', `/v1/admin/sessions?tenant_id=${TENANT}`]) {
      const res = await app.get(path);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('x-frame-options')).toBe('SAMEORIGIN');
      expect(res.headers.get('strict-transport-security')).toMatch(/max-age=\d+/);
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('cross-origin-opener-policy')).toBe('same-origin');
      expect(res.headers.get('x-powered-by')).toBeNull();
      expect(res.headers.get('x-request-id')).toBeTruthy();
    }
  });

  it('serves the OpenAPI document at /docs/json with the bearer scheme', async () => {
    const res = await app.get<{
      paths: Record<string, unknown>;
      components: { securitySchemes: Record<string, unknown> };
    }>('/docs/json');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.paths)).toEqual(
      expect.arrayContaining([
        '/v1/channels/{channel}/messages',
        '/v1/admin/sessions',
        '/v1/admin/sessions/{session_id}',
        '/v1/admin/sessions/{session_id}/events',
        '/v1/admin/sessions/{session_id}/checkpoints',
        '/v1/admin/sessions/{session_id}/end',
        '/v1/admin/sessions/{session_id}/handoff',
        '/v1/admin/sessions/{session_id}/resume',
      ]),
    );
    expect(res.body.components.securitySchemes.bearer).toBeDefined();
    // The running app serves exactly the committed document.
    expect(res.body).toEqual(JSON.parse(readFileSync(join(REPO_ROOT, 'openapi.json'), 'utf8')));
  });

  it('answers the probe paths the Kubernetes manifests use', async () => {
    const container = deploymentSpec(k8sDocuments('base'), 'agent-runtime').template.spec.containers[0];
    for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe'] as const) {
      const res = await app.get(container[probe].httpGet.path);
      expect({ probe, status: res.status }).toEqual({ probe, status: 200 });
    }
  });
});
