import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { FakeLlmServer, GUARDRAILS_ALLOW } from '../support/fake-llm';
import { TcpProxy } from '../support/tcp-proxy';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';
import { eventually } from '../support/wait-for';
import { WebhookReceiver } from '../support/webhook-receiver';

/**
 * A dependency that accepts connections and never answers (a TCP black hole between the app and it) costs a
 * request a bounded, documented time, and readiness names it within READINESS_TIMEOUT_MS. The bounds are set
 * short here; the assertions leave room for a loaded machine, far below the unbounded waits (30 s to minutes).
 */
const DATABASE_URL = process.env.DATABASE_URL;
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const describeWithPostgres = DATABASE_URL
  ? describe
  : (name: string, body: () => void) => describe.skip(`${name} (needs DATABASE_URL; CI sets it)`, body);

interface Readiness {
  status: string;
  error?: Record<string, { status: string; message?: string }>;
  details: Record<string, { status: string; message?: string; destinations?: { destination: string }[] }>;
}

interface ErrorBody {
  error: { code: string };
}

async function timed<T>(work: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = Date.now();
  const result = await work();
  return { result, ms: Date.now() - started };
}

describe('dependencies that hang', () => {
  let fake: FakeLlmServer;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    fake.script(GUARDRAILS_ALLOW);
    fake.script({ model: 'agent', reply: { content: 'ok' } });
    fake.setFallback({ json: { intent: 'unknown', confidence: 0, reason: 'test fallback' } });
  });

  afterAll(async () => {
    await fake?.stop();
  });

  describeWithPostgres('Postgres', () => {
    let proxy: TcpProxy;
    let app: TestApp;
    let admin: Client;

    beforeAll(async () => {
      const proxied = await TcpProxy.forUrl(DATABASE_URL ?? '');
      proxy = proxied.proxy;
      admin = new Client({ connectionString: DATABASE_URL });
      await admin.connect();
      app = await startTestApp({
        fakeLlm: fake,
        env: {
          DATABASE_URL: proxied.url,
          DATABASE_QUERY_TIMEOUT_MS: '800',
          DATABASE_CONNECT_TIMEOUT_MS: '800',
          READINESS_TIMEOUT_MS: '400',
        },
      });
    });

    afterAll(async () => {
      await proxy?.restore();
      await app?.close();
      await proxy?.stop();
      await admin?.end();
    });

    const send = (sessionId: string, messageId: string) =>
      app.post<ErrorBody & { turn: number }>('/v1/channels/web/messages', {
        tenant_id: 'acme',
        agent_id: 'telecom_contas',
        session_id: sessionId,
        message_id: messageId,
        text: 'qual o valor da minha fatura?',
      });

    it('costs a turn one DATABASE_QUERY_TIMEOUT_MS, is named by readiness, and the resent message runs once', async () => {
      const sessionId = uniqueId('hung-db');
      expect((await send(sessionId, 'm1')).status).toBe(200);
      proxy.blackHole();
      const turn = await timed(() => send(sessionId, 'm2'));
      expect(turn.result.status).toBe(503);
      expect(turn.result.body.error.code).toBe('DATABASE_UNAVAILABLE');
      expect(Number(turn.result.headers.get('retry-after'))).toBeGreaterThan(0);
      // One timeout (800 ms), not one per retry nor the statement timeout (30 s).
      expect(turn.ms).toBeLessThan(2500);

      const ready = await timed(() => app.get<Readiness>('/health/ready'));
      expect(ready.result.status).toBe(503);
      expect(ready.result.body.error?.database).toEqual({
        status: 'down',
        message: 'no answer within 400 ms',
      });
      expect(ready.ms).toBeLessThan(1500);

      await proxy.restore();
      await eventually('the turn answered once Postgres answers', async () => {
        const again = await send(sessionId, 'm2');
        return again.status === 200 ? again : undefined;
      });
      const ran = await admin.query<{ turn: number }>(
        'SELECT turn FROM turn_log WHERE conversation_key = $1 ORDER BY version',
        [`acme:${sessionId}`],
      );
      expect(ran.rows.map((row) => row.turn)).toEqual([1, 2]);
      expect((await app.get('/health/ready')).status).toBe(200);
    });
  });

  describe('Redis (the shared rate-limit store)', () => {
    const KEY = 'hung-redis-admin-key';
    const bearer = { authorization: `Bearer ${KEY}` };
    let proxy: TcpProxy;
    let app: TestApp;

    beforeAll(async () => {
      const proxied = await TcpProxy.forUrl(REDIS_URL);
      proxy = proxied.proxy;
      app = await startTestApp({
        fakeLlm: fake,
        env: {
          ADMIN_API_KEYS: KEY,
          REDIS_URL: proxied.url,
          RATE_LIMIT_KEY_PREFIX: `test:${uniqueId('hung')}:`,
          REDIS_COMMAND_TIMEOUT_MS: '300',
          READINESS_TIMEOUT_MS: '1000',
        },
      });
    });

    afterAll(async () => {
      await proxy?.restore();
      await app?.close();
      await proxy?.stop();
    });

    it('costs a request REDIS_COMMAND_TIMEOUT_MS (a 503 with Retry-After), fails readiness, and both recover', async () => {
      expect((await app.get('/v1/admin/me', bearer)).status).toBe(200);
      proxy.blackHole();
      for (let i = 0; i < 3; i++) {
        const request = await timed(() => app.get<ErrorBody>('/v1/admin/me', bearer));
        expect(request.result.status).toBe(503);
        expect(request.result.body.error.code).toBe('RATE_LIMIT_UNAVAILABLE');
        expect(request.result.headers.get('retry-after')).toBe('5');
        expect(request.ms).toBeLessThan(1500);
      }
      // The public probe: which dependency, not why (the admin view has the client's message).
      const ready = await timed(() => app.get<Readiness>('/health/ready'));
      expect(ready.result.status).toBe(503);
      expect(ready.result.body.error).toEqual({ rate_limit: { status: 'down', message: 'unreachable' } });
      expect(ready.ms).toBeLessThan(1500);
      const detailed = await app.get<Readiness>('/health/ready', bearer);
      expect(detailed.body.error?.rate_limit.message).toMatch(/timed out/i);

      await proxy.restore();
      await eventually('requests served again', async () =>
        (await app.get('/v1/admin/me', bearer)).status === 200 ? true : undefined,
      );
      expect((await app.get('/health/ready')).status).toBe(200);
    });
  });

  describe('the model endpoint', () => {
    let hole: TcpProxy;
    let app: TestApp;

    beforeAll(async () => {
      hole = await TcpProxy.blackHoled();
      app = await startTestApp({ env: { LLM_BASE_URL: `http://127.0.0.1:${hole.port}/v1` } });
    });

    afterAll(async () => {
      await app?.close();
      await hole?.stop();
    });

    it("costs a turn its stages' profile timeouts: the fail-closed guardrail's, then the safe answer", async () => {
      const turn = await timed(() =>
        app.post<{ answer: string; blocked: boolean }>('/v1/channels/web/messages', {
          tenant_id: 'acme',
          agent_id: 'telecom_contas',
          session_id: uniqueId('hung-model'),
          text: 'Quero trocar de plano',
        }),
      );
      expect(turn.result.status).toBe(200);
      expect(turn.result.body).toMatchObject({
        blocked: true,
        answer: 'Não consegui processar sua mensagem agora. Por favor, tente novamente em instantes.',
      });
      // The guardrail profile's timeout (1 s in the tests' profiles), not the client's default of minutes.
      expect(turn.ms).toBeGreaterThanOrEqual(1000);
      expect(turn.ms).toBeLessThan(4000);
      // Every stage has a fallback: readiness says degraded, and stays 200.
      const ready = await app.get<{ info: { llm: { degraded: boolean } } }>('/health/ready');
      expect(ready.status).toBe(200);
      expect(ready.body.info.llm.degraded).toBe(true);
    });
  });

  describe('readiness of a tenant-scoped admin key', () => {
    const tenant = uniqueId('ra');
    const other = uniqueId('rb');
    let receiver: WebhookReceiver;
    let dir: string;
    let app: TestApp;

    beforeAll(async () => {
      receiver = await WebhookReceiver.start();
      dir = mkdtempSync(join(tmpdir(), 'readiness-webhooks-'));
      const file = join(dir, 'webhooks.yaml');
      const endpoint = (tenantId: string) => ({
        id: `${tenantId}-crm`,
        tenant_id: tenantId,
        url: receiver.url('/crm'),
        secret_env: 'TEST_WEBHOOK_SECRET',
      });
      writeFileSync(file, JSON.stringify({ endpoints: [endpoint(tenant), endpoint(other)] }));
      app = await startTestApp({
        fakeLlm: fake,
        env: {
          EVENTS_WEBHOOKS_PATH: file,
          TEST_WEBHOOK_SECRET: 'whsec_dGVzdHNlY3JldHRlc3RzZWNyZXR0ZXN0c2VjcmV0',
          ADMIN_API_KEYS: `ready-global,${tenant}:ready-tenant`,
        },
      });
    });

    afterAll(async () => {
      await app?.close();
      await receiver?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    const destinations = async (key?: string) => {
      const ready = await app.get<Readiness>('/health/ready', key ? { authorization: `Bearer ${key}` } : {});
      expect(ready.status).toBe(200);
      return ready.body.details.events.destinations?.map((d) => d.destination).sort();
    };

    it("shows a tenant's admin only its own webhook destinations, a global admin all, the public none", async () => {
      expect(await destinations('ready-tenant')).toEqual([`webhook:${tenant}-crm`]);
      expect(await destinations('ready-global')).toEqual(
        [`webhook:${tenant}-crm`, `webhook:${other}-crm`].sort(),
      );
      expect(await destinations()).toBeUndefined();
    });
  });
});
