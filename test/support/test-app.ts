import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import { createApp } from '../../apps/agent-runtime/src/bootstrap';
import { leaseEmbeddedServer } from './embedded-servers';
import { FakeLlmServer } from './fake-llm';
import { REPO_ROOT } from './repo-root';
import { withEnv } from './with-env';

export { REPO_ROOT } from './repo-root';
export const TEST_LLM_PROFILES = join(REPO_ROOT, 'test', 'support', 'config', 'llm_profiles.yaml');

export interface HttpResult<T = Record<string, unknown>> {
  status: number;
  body: T;
  headers: Headers;
}

export interface TestApp {
  app: NestFastifyApplication;
  baseUrl: string;
  dataSource: DataSource;
  post<T = Record<string, unknown>>(
    path: string,
    body: unknown,
    headers?: Record<string, string>,
  ): Promise<HttpResult<T>>;
  get<T = Record<string, unknown>>(path: string, headers?: Record<string, string>): Promise<HttpResult<T>>;
  request<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<HttpResult<T>>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  /** Env overrides for this app (undefined removes a variable). */
  env?: Record<string, string | undefined>;
  /** Points LLM_BASE_URL at this server. */
  fakeLlm?: FakeLlmServer;
}

/** The database settings of a test app, and how to give the database back when the test is done with it. */
export interface TestDatabase {
  env: Record<string, string | undefined>;
  release(): void;
}

/**
 * The database the tests use: DATABASE_URL when set (CI's Postgres), else a migrated embedded PGlite server this
 * test holds alone until it releases it (see embedded-servers.ts), reached with a pool of one connection as the
 * embedded default does. A test that needs the embedded default itself (its data directory, its lock, its child
 * process) passes `DATA_DIR` in the app's env instead (`embeddedDataDir`).
 */
export async function testDatabase(): Promise<TestDatabase> {
  if (process.env.DATABASE_URL) {
    return { env: { DATABASE_URL: process.env.DATABASE_URL }, release: () => undefined };
  }
  const lease = await leaseEmbeddedServer();
  return {
    // One session behind every connection, as the embedded default has: no named statements across them.
    env: {
      DATABASE_URL: lease.url,
      DATABASE_POOL_SIZE: '1',
      DATABASE_PREPARED_STATEMENTS: 'false',
      DATA_DIR: undefined,
    },
    release: lease.release,
  };
}

/** Boots the whole Nest app on an ephemeral port with test config and the fake LLM. */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  // An app told where its database is (DATABASE_URL or DATA_DIR in its env) gets no other.
  const database =
    options.env && ('DATABASE_URL' in options.env || 'DATA_DIR' in options.env)
      ? { env: {}, release: () => undefined }
      : await testDatabase();
  const env: Record<string, string | undefined> = {
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    NODE_ENV: 'test',
    CONFIG_DIR: join(REPO_ROOT, 'config'),
    LLM_PROFILES_PATH: TEST_LLM_PROFILES,
    LLM_BASE_URL: options.fakeLlm?.baseUrl,
    LLM_API_KEY: 'test-key',
    // On by default in the product; the tests about stickiness turn it on, the others script the router alone.
    ENABLE_ROUTE_STICKINESS: 'false',
    ...database.env,
    ...options.env,
  };
  const app = await withEnv(env, async () => {
    const created = await createApp();
    await created.listen({ port: 0, host: '127.0.0.1' });
    return created;
  }).catch((error: unknown) => {
    database.release();
    throw error;
  });
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const baseUrl = `http://127.0.0.1:${port}`;
  const request = async <T>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      // non-JSON bodies (metrics) stay text
    }
    return { status: response.status, body: parsed as T, headers: response.headers };
  };
  return {
    app,
    baseUrl,
    dataSource: app.get(DataSource),
    request,
    post: (path, body, headers) => request('POST', path, body, headers),
    get: (path, headers) => request('GET', path, undefined, headers),
    close: async () => {
      await app.close();
      database.release();
    },
  };
}

/** A unique id per test so tests share a database without interfering. */
export function uniqueId(prefix = 's'): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}
