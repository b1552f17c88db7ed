import Redis from 'ioredis';
import { AddressInfo, createServer, Socket } from 'node:net';
import { RATE_LIMIT_STORAGE, RateLimitStorage } from '../../apps/agent-runtime/src/auth/auth.module';
import { SharedRateLimitStorage } from '../../apps/agent-runtime/src/auth/shared-rate-limit.storage';
import { startTestApp, TestApp } from '../support/test-app';
import { waitUntil } from '../support/wait-for';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const TENANT = `rl${Date.now().toString(36)}`;
const KEY = 'admin-key-rate-limit';
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const LIMIT = 10;

interface ErrorBody {
  error: { code: string; message: string };
  request_id: string;
}

/** Sends `count` admin list requests with one key, alternating between the apps; returns the statuses. */
async function hammer(apps: TestApp[], count: number, headers: Record<string, string>): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) {
    const res = await apps[i % apps.length].get(`/v1/admin/sessions?tenant_id=${TENANT}`, headers);
    statuses.push(res.status);
  }
  return statuses;
}

describe('rate limits across replicas', () => {
  const prefix = `test:${TENANT}:rate-limit:`;
  let redis: Redis;

  beforeAll(() => {
    redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  });

  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  async function replicas(env: Record<string, string>): Promise<TestApp[]> {
    const base = { ADMIN_API_KEYS: KEY, RATE_LIMIT_PER_MINUTE: String(LIMIT), RAG_INGEST_ON_START: 'false' };
    // One after the other: startTestApp sets and restores process.env around each start.
    const first = await startTestApp({ env: { ...base, ...env } });
    return [first, await startTestApp({ env: { ...base, ...env } })];
  }

  it('shares one limit between two app instances through Redis', async () => {
    const apps = await replicas({ REDIS_URL, RATE_LIMIT_KEY_PREFIX: prefix });
    try {
      const statuses = await hammer(apps, 3 * LIMIT, bearer(KEY));
      expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
      expect(statuses.filter((s) => s === 429)).toHaveLength(2 * LIMIT);
      // Both instances refused once the shared bucket was spent.
      expect(statuses.slice(LIMIT)).toEqual(new Array<number>(2 * LIMIT).fill(429));
      expect((await redis.keys(`${prefix}*`)).length).toBeGreaterThan(0);
      // Unauthenticated guesses share their address's bucket across the instances too.
      const guesses = await hammer(apps, LIMIT + 4, bearer('not-a-key'));
      expect(guesses.filter((s) => s === 401)).toHaveLength(LIMIT);
      expect(guesses.filter((s) => s === 429)).toHaveLength(4);
    } finally {
      await Promise.all(apps.map((app) => app.close()));
    }
  });

  it('counts per instance without REDIS_URL (the documented default)', async () => {
    const apps = await replicas({});
    try {
      const statuses = await hammer(apps, 3 * LIMIT, bearer(KEY));
      expect(statuses.filter((s) => s === 200)).toHaveLength(2 * LIMIT);
    } finally {
      await Promise.all(apps.map((app) => app.close()));
    }
  });

  it('answers 503 with Retry-After, not an unlimited pass, when Redis is unreachable', async () => {
    // A "Redis" that drops every connection at once: the client keeps trying, and the test sees each try. Once
    // told to, it keeps the connections and answers OK to everything, enough for the client's ready check.
    let attempts = 0;
    let answering = false;
    const kept: Socket[] = [];
    const standIn = createServer((socket) => {
      attempts += 1;
      if (answering) {
        kept.push(socket);
        socket.on('data', () => socket.write('+OK\r\n'));
      } else {
        socket.destroy();
      }
    });
    await new Promise<void>((resolve) => standIn.listen(0, '127.0.0.1', resolve));
    const { port } = standIn.address() as AddressInfo;
    const app = await startTestApp({
      env: { ADMIN_API_KEYS: KEY, REDIS_URL: `redis://127.0.0.1:${port}`, RAG_INGEST_ON_START: 'false' },
    });
    const storage = app.app.get<RateLimitStorage>(RATE_LIMIT_STORAGE);
    if (!(storage instanceof SharedRateLimitStorage)) {
      throw new Error('REDIS_URL set, yet no shared rate limit');
    }
    try {
      const res = await app.get<ErrorBody>(`/v1/admin/sessions?tenant_id=${TENANT}`, bearer(KEY));
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('RATE_LIMIT_UNAVAILABLE');
      expect(res.headers.get('retry-after')).toBe('5');
      // Probes are not rate limited, so they still answer.
      expect((await app.get('/health/live')).status).toBe(200);
      expect(attempts).toBeGreaterThan(0);
      answering = true;
      await waitUntil('the client to be ready again', () => storage.redis.status === 'ready');
    } finally {
      await app.close();
    }
    // Closing the app ends the client: it hangs up and never reconnects.
    await waitUntil('the rate limit client to end', () => storage.redis.status === 'end');
    for (const socket of kept) socket.destroy();
    await new Promise<void>((resolve) => standIn.close(() => resolve()));
  });

  it('believes X-Forwarded-For only from a proxy named in TRUST_PROXY (item 4)', async () => {
    const trusting = await startTestApp({
      env: {
        ADMIN_API_KEYS: KEY,
        RATE_LIMIT_PER_MINUTE: '2',
        TRUST_PROXY: '127.0.0.1',
        RAG_INGEST_ON_START: 'false',
      },
    });
    try {
      // Behind a trusted proxy, each client address has its own bucket.
      const first = await hammer([trusting], 3, { ...bearer('guess'), 'x-forwarded-for': '198.51.100.1' });
      const second = await hammer([trusting], 3, { ...bearer('guess'), 'x-forwarded-for': '198.51.100.2' });
      expect(first).toEqual([401, 401, 429]);
      expect(second).toEqual([401, 401, 429]);
    } finally {
      await trusting.close();
    }
    const direct = await startTestApp({
      env: {
        ADMIN_API_KEYS: KEY,
        RATE_LIMIT_PER_MINUTE: '2',
        TRUST_PROXY: '10.0.0.0/8',
        RAG_INGEST_ON_START: 'false',
      },
    });
    try {
      // The caller is not a trusted proxy: rotating the header changes nothing.
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        const res = await direct.get(`/v1/admin/sessions?tenant_id=${TENANT}`, {
          ...bearer('guess'),
          'x-forwarded-for': `198.51.100.${i}`,
        });
        statuses.push(res.status);
      }
      expect(statuses).toEqual([401, 401, 429, 429]);
    } finally {
      await direct.close();
    }
  });
});
