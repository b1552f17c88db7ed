import { CheckpointStore } from '@agent/checkpoint';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { Client } from 'pg';
import { FakeChatRequest, FakeLlmServer, GUARDRAILS_ALLOW, lastUserMessage } from '../support/fake-llm';
import { TcpProxy } from '../support/tcp-proxy';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';
import { eventually, waitUntil } from '../support/wait-for';

/**
 * Failures only a real Postgres server can produce: the app's connection killed mid-save (pg_terminate_backend),
 * the database unreachable (a TCP proxy cut between app and server), and two app instances on one database.
 * The two instances are two Nest apps in this process, each with its own pool, lease tokens and in-process queue:
 * they share nothing but Postgres, as two replicas would.
 */
const DATABASE_URL = process.env.DATABASE_URL;

interface TurnBody {
  turn: number;
  answer: string;
  error?: { code: string };
}

interface HistoryRow {
  role: string;
  content: string;
  turn?: number;
}

const AGENT_ID = 'telecom_contas';
const answerFor = (text: string) => `resposta para: ${text}`;

if (!DATABASE_URL) {
  describe('reliability on a real Postgres server', () => {
    it.skip('needs DATABASE_URL (CI sets it): pg_terminate_backend, outage and two-instance tests did not run', () =>
      undefined);
  });
} else {
  describe('reliability on a real Postgres server', () => {
    let fake: FakeLlmServer;
    let llmProxy: TcpProxy;
    let llmUrl: string;
    /** Direct connection for the test's own reads, locks and kills. */
    let admin: Client;

    beforeAll(async () => {
      fake = await FakeLlmServer.start();
      ({ proxy: llmProxy, url: llmUrl } = await TcpProxy.forUrl(fake.baseUrl));
      admin = new Client({ connectionString: DATABASE_URL });
      await admin.connect();
    });

    afterAll(async () => {
      await admin?.end();
      await llmProxy?.stop();
      await fake?.stop();
    });

    beforeEach(() => {
      llmProxy.release();
      fake.reset();
      fake.script(GUARDRAILS_ALLOW);
      fake.setFallback({ json: { intent: 'unknown', confidence: 0, reason: 'test fallback' } });
    });

    /** The agent answers every message; its first answer to `held` stays in the proxy until `llmProxy.release()`. */
    function scriptAgent(held?: string): { inFlight: Promise<void> } {
      let arrived!: () => void;
      const arrival = new Promise<void>((resolve) => (arrived = resolve));
      fake.script({
        model: 'agent',
        reply: (request: FakeChatRequest) => {
          const text = lastUserMessage(request);
          if (text === held) {
            // Only the first time: a later turn with the same text answers at once.
            held = undefined;
            llmProxy.hold();
            arrived();
          }
          return { content: answerFor(text) };
        },
      });
      return { inFlight: arrival };
    }

    function send(app: TestApp, sessionId: string, text: string, extra: Record<string, string> = {}) {
      return app.post<TurnBody>('/v1/channels/web/messages', {
        tenant_id: 'acme',
        agent_id: AGENT_ID,
        session_id: sessionId,
        text,
        ...extra,
      });
    }

    const key = (sessionId: string) => `acme:${sessionId}`;

    async function count(table: string, sessionId: string): Promise<number> {
      const result = await admin.query<{ n: string }>(
        `SELECT count(*) AS n FROM ${table} WHERE conversation_key = $1`,
        [key(sessionId)],
      );
      return Number(result.rows[0].n);
    }

    /** The versions committed (the turn log keeps a row for each; checkpoints only the newest few). */
    async function versions(sessionId: string): Promise<number[]> {
      const result = await admin.query<{ version: number }>(
        'SELECT version FROM turn_log WHERE conversation_key = $1 ORDER BY version',
        [key(sessionId)],
      );
      return result.rows.map((row) => row.version);
    }

    async function headHistory(sessionId: string): Promise<HistoryRow[]> {
      const result = await admin.query<{ history: HistoryRow[] }>(
        `SELECT state::jsonb->'history' AS history FROM checkpoints WHERE conversation_key = $1 ORDER BY version DESC LIMIT 1`,
        [key(sessionId)],
      );
      return result.rows[0]?.history ?? [];
    }

    async function eventNames(
      sessionId: string,
      turn: number,
    ): Promise<{ name: string; payload: Record<string, unknown> }[]> {
      const result = await admin.query<{ name: string; payload: Record<string, unknown> }>(
        'SELECT name, payload FROM session_events WHERE conversation_key = $1 AND turn = $2 ORDER BY id',
        [key(sessionId), turn],
      );
      return result.rows;
    }

    /** The backend whose statement waits on a lock `locker` holds: the app's connection, caught mid-save. */
    async function backendBlockedBy(locker: Client): Promise<number> {
      const lockerPid = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      return eventually(
        'the app to block on the test lock',
        async () => {
          const blocked = await admin.query<{ pid: number }>(
            'SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))',
            [lockerPid],
          );
          return blocked.rows.length === 1 ? blocked.rows[0].pid : undefined;
        },
        15000,
      );
    }

    describe('the database connection killed mid-save', () => {
      let app: TestApp;

      beforeAll(async () => {
        app = await startTestApp({ env: { LLM_BASE_URL: llmUrl, DATABASE_URL } });
      });

      afterAll(async () => {
        await app?.close();
      });

      /**
       * Turn 2's answer is held; meanwhile `lock` takes a lock the commit will need. Released, the turn reaches its
       * commit and blocks inside the transaction; the test kills that backend, lets go of the lock, and expects
       * the retry to commit the turn.
       */
      async function killDuringCommit(lock: (locker: Client, sessionId: string) => Promise<void>) {
        const sessionId = uniqueId('kill');
        const { inFlight } = scriptAgent('segundo turno');
        expect((await send(app, sessionId, 'primeiro turno')).status).toBe(200);
        const second = send(app, sessionId, 'segundo turno');
        await inFlight;
        const locker = new Client({ connectionString: DATABASE_URL });
        await locker.connect();
        try {
          await locker.query('BEGIN');
          await lock(locker, sessionId);
          llmProxy.release();
          const victim = await backendBlockedBy(locker);
          const killed = await admin.query<{ ok: boolean }>('SELECT pg_terminate_backend($1) AS ok', [
            victim,
          ]);
          expect(killed.rows[0].ok).toBe(true);
          // Gone before the lock is let go, so the killed statement never gets to run.
          await waitUntil('the killed backend to go', async () => {
            const alive = await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [victim]);
            return alive.rowCount === 0;
          });
          await locker.query('ROLLBACK');
        } finally {
          await locker.end();
        }
        const res = await second;
        expect(res.status).toBe(200);
        expect(res.body.turn).toBe(2);
        const retries = (await eventNames(sessionId, 2)).filter((e) => e.name === 'checkpoint.save.retry');
        expect(retries.length).toBeGreaterThanOrEqual(1);
        expect(String(retries[0].payload.error)).toMatch(/terminat/i);
        expect(await versions(sessionId)).toEqual([1, 2]);
        // The pool dropped the killed connection: more turns and a pool-wide burst of queries all work.
        for (const text of ['terceiro', 'quarto']) {
          expect((await send(app, sessionId, text)).status).toBe(200);
        }
        expect(await versions(sessionId)).toEqual([1, 2, 3, 4]);
        const probes = await Promise.all(
          Array.from({ length: 12 }, () => app.dataSource.query('SELECT pg_backend_pid() AS pid')),
        );
        expect(probes).toHaveLength(12);
      }

      it('retries when the session row update is killed, then commits', async () => {
        await killDuringCommit(async (locker, sessionId) => {
          await locker.query('SELECT 1 FROM sessions WHERE conversation_key = $1 FOR UPDATE', [
            key(sessionId),
          ]);
        });
      });

      it('retries when the commit is killed at its checkpoint insert, then commits', async () => {
        await killDuringCommit(async (locker, sessionId) => {
          // An uncommitted row with the same (conversation, version) makes the app's insert wait on the unique index.
          await locker.query(
            `INSERT INTO checkpoints (conversation_key, version, parent_version, state, format, checksum, size_bytes)
             VALUES ($1, 2, 1, '{}', 2, 'lock', 2)`,
            [key(sessionId)],
          );
        });
      });
    });

    describe('Postgres unreachable', () => {
      let dbProxy: TcpProxy;
      let app: TestApp;
      const noc005: Record<string, unknown>[] = [];

      beforeAll(async () => {
        const proxied = await TcpProxy.forUrl(DATABASE_URL);
        dbProxy = proxied.proxy;
        app = await startTestApp({ env: { LLM_BASE_URL: llmUrl, DATABASE_URL: proxied.url } });
        app.app.get(EventEmitter2).on('NOC.005', (payload: Record<string, unknown>) => noc005.push(payload));
      });

      afterAll(async () => {
        await dbProxy?.restore();
        await app?.close();
        await dbProxy?.stop();
      });

      beforeEach(() => {
        noc005.length = 0;
      });

      it('answers 503 with NOC.005, writes nothing, and serves again when the database is back', async () => {
        scriptAgent();
        const sessionId = uniqueId('down');
        await dbProxy.cut();
        const down = await send(app, sessionId, 'banco fora', { message_id: 'm-down' });
        expect(down.status).toBe(503);
        expect(down.body.error?.code).toBe('DATABASE_UNAVAILABLE');
        expect(Number(down.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(noc005).toEqual([
          expect.objectContaining({
            error: expect.any(String),
            exception_type: expect.any(String),
            conversation_key: `acme:${sessionId}`,
            session_id: sessionId,
          }),
        ]);
        expect((await app.get('/health/ready')).status).toBe(503);
        // A failed readiness probe is not a failed workflow: probes every few seconds must not raise NOC.005.
        expect(noc005).toHaveLength(1);
        expect(fake.requestsFor('agent')).toHaveLength(0);

        await dbProxy.restore();
        for (const table of ['sessions', 'checkpoints', 'session_events', 'processed_messages']) {
          expect(await count(table, sessionId)).toBe(0);
        }
        const back = await send(app, sessionId, 'banco fora', { message_id: 'm-down' });
        expect(back.status).toBe(200);
        expect(back.body.turn).toBe(1);
        expect(back.headers.get('idempotent-replay')).toBeNull();
        expect((await app.get('/health/ready')).status).toBe(200);
      });

      it('loses a turn whose commit fails whole, and the next try is not blocked by its lease', async () => {
        const { inFlight } = scriptAgent('caiu no meio');
        const sessionId = uniqueId('midturn');
        const turn = send(app, sessionId, 'caiu no meio', { message_id: 'm-mid' });
        await inFlight;
        await dbProxy.cut();
        llmProxy.release();
        const failed = await turn;
        expect(failed.status).toBe(503);
        expect(noc005.length).toBeGreaterThanOrEqual(1);
        await dbProxy.restore();

        // Nothing half-written: no checkpoint, event or idempotency record; the session row never got a turn.
        for (const table of ['checkpoints', 'session_events', 'processed_messages']) {
          expect(await count(table, sessionId)).toBe(0);
        }
        const session = await admin.query<{ turn_count: number; head_version: number }>(
          'SELECT turn_count, head_version FROM sessions WHERE conversation_key = $1',
          [key(sessionId)],
        );
        expect(session.rows).toEqual([{ turn_count: 0, head_version: 0 }]);

        // The failed turn could not release its lease; this instance reclaims it at once.
        const started = Date.now();
        const again = await send(app, sessionId, 'caiu no meio', { message_id: 'm-mid' });
        expect(again.status).toBe(200);
        expect(again.body.turn).toBe(1);
        expect(Date.now() - started).toBeLessThan(3000);
        expect(await versions(sessionId)).toEqual([1]);
      });
    });

    describe('two app instances on one database', () => {
      let first: TestApp;
      let second: TestApp;

      /** The second instance's lease statements: asked twice for one conversation, it was refused once. */
      let secondLeaseAttempts: jest.SpiedFunction<CheckpointStore['acquireLease']>;

      beforeAll(async () => {
        first = await startTestApp({ env: { LLM_BASE_URL: llmUrl, DATABASE_URL } });
        second = await startTestApp({ env: { LLM_BASE_URL: llmUrl, DATABASE_URL } });
        secondLeaseAttempts = jest.spyOn(second.app.get(CheckpointStore), 'acquireLease');
      });

      /** Waits until the second instance was refused the lease of `sessionId`: it waits behind the first. */
      async function refusedOnSecond(sessionId: string): Promise<void> {
        await waitUntil(
          `the second instance to be refused the lease of ${sessionId}`,
          () =>
            secondLeaseAttempts.mock.calls.filter(
              ([identity]) => identity.conversation_key === key(sessionId),
            ).length >= 2,
        );
      }

      afterAll(async () => {
        await first?.close();
        await second?.close();
      });

      it('serializes a turn on one instance behind an in-flight turn on the other', async () => {
        const { inFlight } = scriptAgent('na instância A');
        const sessionId = uniqueId('twoapps');
        const a = send(first, sessionId, 'na instância A');
        await inFlight;
        const b = send(second, sessionId, 'na instância B');
        await refusedOnSecond(sessionId);
        llmProxy.release();
        const [resA, resB] = await Promise.all([a, b]);
        expect([resA.status, resB.status]).toEqual([200, 200]);
        expect([resA.body.turn, resB.body.turn]).toEqual([1, 2]);
        expect(await versions(sessionId)).toEqual([1, 2]);
        expect((await headHistory(sessionId)).map((m) => m.content)).toEqual([
          'na instância A',
          answerFor('na instância A'),
          'na instância B',
          answerFor('na instância B'),
        ]);
      });

      it('answers a burst spread over both instances with contiguous versions', async () => {
        scriptAgent();
        const sessionId = uniqueId('twoburst');
        const texts = ['b1', 'b2', 'b3', 'b4', 'b5', 'b6'];
        const results = await Promise.all(
          texts.map((text, i) => send(i % 2 ? second : first, sessionId, text)),
        );
        expect(results.map((r) => r.status)).toEqual(texts.map(() => 200));
        expect(results.map((r) => r.body.turn).sort()).toEqual([1, 2, 3, 4, 5, 6]);
        expect(await versions(sessionId)).toEqual([1, 2, 3, 4, 5, 6]);
        const users = (await headHistory(sessionId)).filter((m) => m.role === 'user');
        expect(users.map((m) => m.turn)).toEqual([1, 2, 3, 4, 5, 6]);
        for (const result of results) {
          expect(users[result.body.turn - 1].content).toBe(texts[results.indexOf(result)]);
        }
      });

      it('runs a message delivered to both instances at once only once', async () => {
        const { inFlight } = scriptAgent('entregue duas vezes');
        const sessionId = uniqueId('twoidem');
        const a = send(first, sessionId, 'entregue duas vezes', { message_id: 'twice' });
        await inFlight;
        const b = send(second, sessionId, 'entregue duas vezes', { message_id: 'twice' });
        await refusedOnSecond(sessionId);
        llmProxy.release();
        const [resA, resB] = await Promise.all([a, b]);
        expect([resA.status, resB.status]).toEqual([200, 200]);
        expect(resB.body).toEqual(resA.body);
        expect(resB.headers.get('idempotent-replay')).toBe('true');
        expect(fake.requestsFor('agent')).toHaveLength(1);
        expect(await versions(sessionId)).toEqual([1]);
      });
    });
  });
}
