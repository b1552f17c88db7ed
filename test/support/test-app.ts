import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import { createApp } from '../../apps/agent-runtime/src/bootstrap';
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

/**
 * The database the tests use: DATABASE_URL when set (CI's Postgres), else a fresh embedded PGlite, copied from the
 * run's migrated template when the jest set-up made one (see jest-embedded-template.ts).
 */
export function testDatabaseEnv(): Record<string, string | undefined> {
  if (process.env.DATABASE_URL) return { DATABASE_URL: process.env.DATABASE_URL };
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-runtime-test-'));
  const template = process.env.TEST_EMBEDDED_TEMPLATE;
  if (template) cpSync(template, dataDir, { recursive: true });
  return { DATABASE_URL: undefined, DATA_DIR: dataDir };
}

/** Boots the whole Nest app on an ephemeral port with test config and the fake LLM. */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const database = testDatabaseEnv();
  const env: Record<string, string | undefined> = {
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    NODE_ENV: 'test',
    CONFIG_DIR: join(REPO_ROOT, 'config'),
    LLM_PROFILES_PATH: TEST_LLM_PROFILES,
    LLM_BASE_URL: options.fakeLlm?.baseUrl,
    LLM_API_KEY: 'test-key',
    // On by default in the product; the tests about stickiness turn it on, the others script the router alone.
    ENABLE_ROUTE_STICKINESS: 'false',
    ...database,
    ...options.env,
  };
  const app = await withEnv(env, async () => {
    const created = await createApp();
    await created.listen({ port: 0, host: '127.0.0.1' });
    return created;
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
      if (database.DATA_DIR) rmSync(database.DATA_DIR, { recursive: true, force: true });
    },
  };
}

/** A unique id per test so tests share a database without interfering. */
export function uniqueId(prefix = 's'): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}
