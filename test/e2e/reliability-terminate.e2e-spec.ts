import { Client } from 'pg';
import {
  AppProcess,
  freePort,
  spawnAppProcess,
  stopAppProcess,
  waitUntilReady,
} from '../support/app-process';
import { FakeLlmServer, GUARDRAILS_ALLOW } from '../support/fake-llm';
import { TcpProxy } from '../support/tcp-proxy';
import { uniqueId } from '../support/test-app';
import { waitUntil } from '../support/wait-for';

/**
 * What a failover, a restart or a proxy reset does to the service's connections: the server terminates them
 * (pg_terminate_backend, SQLSTATE 57P01). The compiled service runs as its own process, so an unhandled 'error'
 * event would end it for real; its connections carry an application name of their own, so the test terminates
 * only them on a server other tests share, and go through a proxy that can hold the server's last words.
 */
const databaseUrl = process.env.DATABASE_URL;
const describeWithPostgres = databaseUrl
  ? describe
  : (name: string, body: () => void) => describe.skip(`${name} (needs DATABASE_URL; CI sets it)`, body);

interface TurnBody {
  turn?: number;
  error?: { code: string };
}

describeWithPostgres('Postgres connections terminated under the service', () => {
  const applicationName = uniqueId('terminate');
  let fake: FakeLlmServer;
  let proxy: TcpProxy;
  let admin: Client;
  let app: AppProcess;
  let port: number;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    fake.script({ model: 'agent', reply: { content: 'ok', delayMs: 20 } });
    fake.script(GUARDRAILS_ALLOW);
    fake.setFallback({ json: { intent: 'unknown', confidence: 0, reason: 'test fallback' } });
    const proxied = await TcpProxy.forUrl(databaseUrl ?? '');
    proxy = proxied.proxy;
    const url = new URL(proxied.url);
    url.searchParams.set('application_name', applicationName);
    admin = new Client({ connectionString: databaseUrl });
    await admin.connect();
    port = await freePort();
    app = spawnAppProcess('apps/agent-runtime/src/main.ts', [], {
      PORT: String(port),
      DATABASE_URL: url.toString(),
      LLM_BASE_URL: fake.baseUrl,
      LLM_API_KEY: 'test-key',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_MINUTE: '100000',
    });
    await waitUntilReady(app, port);
  });

  afterAll(async () => {
    if (app) await stopAppProcess(app);
    await admin?.end();
    await proxy?.stop();
    await fake?.stop();
  });

  afterEach(() => {
    proxy.release();
    // A process that died says why here, not only in a later test's failure.
    expect(app.output()).not.toMatch(/Unhandled 'error' event|uncaughtException/);
    expect(app.child.exitCode).toBeNull();
  });

  /** Terminates the service's backends (all of them, or those in `state`); returns how many. */
  async function terminate(state?: string): Promise<number> {
    // In the select list, so it runs only on the rows the WHERE kept (never on another test's backend).
    const result = await admin.query<{ terminated: boolean }>(
      `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
        WHERE application_name = $1 AND ($2::text IS NULL OR state = $2)`,
      [applicationName, state ?? null],
    );
    return result.rows.filter((row) => row.terminated).length;
  }

  async function backends(state?: string): Promise<number> {
    const result = await admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND ($2::text IS NULL OR state = $2)`,
      [applicationName, state ?? null],
    );
    return result.rows[0].n;
  }

  function send(sessionId: string, messageId: string) {
    return fetch(`http://127.0.0.1:${port}/v1/channels/web/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        tenant_id: 'acme',
        agent_id: 'telecom_contas',
        session_id: sessionId,
        text: `mensagem ${messageId}`,
        message_id: messageId,
      }),
    }).then(async (response) => ({
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
      body: (await response.json()) as TurnBody,
    }));
  }

  /**
   * Sends until the service answers 200, as a channel resending the same message would; returns the answers and
   * tells `onAnswer` of each.
   */
  async function deliver(
    sessionId: string,
    messageId: string,
    onAnswer?: () => void,
  ): Promise<{ status: number; turn?: number }[]> {
    const answers: { status: number; turn?: number }[] = [];
    await waitUntil(
      `an answer 200 to message ${messageId}`,
      async () => {
        const answer = await send(sessionId, messageId);
        answers.push({ status: answer.status, turn: answer.body.turn });
        onAnswer?.();
        if (answer.status === 200) return true;
        expect(answer.status).toBe(503);
        expect(Number(answer.retryAfter)).toBeGreaterThan(0);
        return false;
      },
      30000,
      100,
    );
    return answers;
  }

  /** The conversation's committed turns, from the turn log (compaction keeps only the newest checkpoints). */
  async function storedVersions(sessionId: string): Promise<number[]> {
    const result = await admin.query<{ version: number; turn: number }>(
      'SELECT version, turn FROM turn_log WHERE conversation_key = $1 ORDER BY version',
      [`acme:${sessionId}`],
    );
    for (const row of result.rows) expect(row.turn).toBe(row.version);
    return result.rows.map((row) => row.version);
  }

  it('survives the server hanging up on a connection in the instant the pool hands it over', async () => {
    // Every connection of the pool gone: the next query opens a new one.
    await send(uniqueId('warm'), uniqueId('m'));
    await terminate();
    await waitUntil('the terminated backends to go', async () => (await backends()) === 0, 10000);
    // Postgres can forget a backend before the proxy passed its goodbye on: held from here on, that goodbye would
    // leave the pool a dead connection, which the probe would take (its answer never coming) instead of opening
    // one. Once the service closed its end of each, its pool has dropped them all.
    await waitUntil('the service to close its connections', () => proxy.connections === 0, 10000);
    // The server's welcome (its "ready for query") and its goodbye (57P01 and the close) then reach the service in
    // one read: the pool hands the connection over on the first and the connection fails on the second, before
    // the code that asked for it could listen for its errors.
    proxy.hold();
    const probe = fetch(`http://127.0.0.1:${port}/health/ready`).then((response) => response.status);
    await waitUntil('the probe to open a connection', async () => (await backends('idle')) > 0, 10000);
    await terminate();
    await waitUntil('the new backend to go', async () => (await backends()) === 0, 10000);
    proxy.release();
    expect([200, 503]).toContain(await probe);
    // Still alive after the connection's last words, and serving (afterEach checks it never died meanwhile).
    const sessionId = uniqueId('after');
    expect((await deliver(sessionId, uniqueId('m'))).at(-1)?.status).toBe(200);
  });

  it('survives terminations while idle', async () => {
    const sessionId = uniqueId('idle');
    for (let round = 1; round <= 5; round++) {
      await terminate();
      // Gone while idle in the pool: the next turn finds its connections dead, not dying under it.
      await waitUntil('the terminated backends to go', async () => (await backends()) === 0, 10000);
      const answers = await deliver(sessionId, `idle-${round}`);
      expect(answers.at(-1)?.turn).toBe(round);
    }
    expect(await storedVersions(sessionId)).toEqual([1, 2, 3, 4, 5]);
  });

  it('under load, every turn answers 200 or 503 with Retry-After, and resending runs it once', async () => {
    const sessions = Array.from({ length: 4 }, () => uniqueId('load'));
    const sent = new Map<string, number>();
    let stop = false;
    let answered = 0;
    const killer = (async () => {
      let terminated = 0;
      for (let seen = 0; !stop; seen = answered) {
        terminated += await terminate();
        // Once per answer: the next termination lands among the turns of the other sessions still in flight.
        await waitUntil('the next answer', () => stop || answered > seen);
      }
      return terminated;
    })();
    await Promise.all(
      sessions.map(async (sessionId) => {
        for (let turn = 1; turn <= 8; turn++) {
          const answers = await deliver(sessionId, `${sessionId}-${turn}`, () => answered++);
          expect(answers.at(-1)?.turn).toBe(turn);
          sent.set(sessionId, turn);
        }
      }),
    );
    stop = true;
    expect(await killer).toBeGreaterThan(0);
    for (const sessionId of sessions) {
      expect(await storedVersions(sessionId)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    }
  });
});
