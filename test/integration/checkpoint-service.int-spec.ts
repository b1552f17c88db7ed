import { EventEmitter2 } from '@nestjs/event-emitter';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import {
  CheckpointFencingError,
  CheckpointService,
  CheckpointStore,
  ConversationIdentity,
  PostgresCheckpointStore,
  RetentionService,
  TurnLockTimeoutError,
} from '@agent/checkpoint';
import { parseEnvNamespace } from '@agent/config';
import type { AgentState, HistoryMessage } from '@agent/contracts';
import { createDataSource, DatabaseService, EmbeddedPostgres, isConnectionError } from '@agent/database';
import { EventBusService, MetricsService } from '@agent/observability';
import { TcpProxy } from '../support/tcp-proxy';

/**
 * CheckpointService on a real database (embedded PGlite always, Postgres when DATABASE_URL is set): integrity and
 * recovery, retry, compaction, bounded checkpoint size, and the one-writer lease with fencing across instances.
 */
interface Backend {
  name: string;
  open(): Promise<{ store: PostgresCheckpointStore; dataSource: DataSource; close(): Promise<void> }>;
}

const MIGRATION_LOCK = 727073690;
const DATABASE_URL = process.env.DATABASE_URL;

async function migrate(dataSource: DataSource): Promise<void> {
  await dataSource.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
  try {
    await dataSource.runMigrations({ transaction: 'each' });
  } finally {
    await dataSource.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
  }
}

const backends: Backend[] = [
  {
    name: 'embedded PGlite',
    open: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'checkpoint-service-'));
      const embedded = await EmbeddedPostgres.start(dir, 170000);
      const dataSource = await createDataSource({ url: embedded.url, poolSize: 1, embedded: true });
      await dataSource.runMigrations({ transaction: 'each' });
      const db = new DatabaseService(dataSource, embedded);
      return {
        store: new PostgresCheckpointStore(db),
        dataSource,
        close: async () => {
          await db.onApplicationShutdown();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
];
if (DATABASE_URL) {
  backends.push({
    name: 'Postgres (DATABASE_URL)',
    open: async () => {
      const dataSource = await createDataSource({ url: DATABASE_URL, poolSize: 4, embedded: false });
      await migrate(dataSource);
      const db = new DatabaseService(dataSource, null);
      return { store: new PostgresCheckpointStore(db), dataSource, close: () => db.onApplicationShutdown() };
    },
  });
}

interface SeenEvent {
  name: string;
  payload: Record<string, unknown>;
}

function makeService(store: CheckpointStore, env: Record<string, string> = {}) {
  const emitter = new EventEmitter2();
  const seen: SeenEvent[] = [];
  emitter.onAny((name, payload) =>
    seen.push({ name: String(name), payload: payload as Record<string, unknown> }),
  );
  const config = parseEnvNamespace('checkpoint', {
    CHECKPOINT_RETRY_BASE_MS: '5',
    CHECKPOINT_RETRY_JITTER_MS: '5',
    ...env,
  });
  const service = new CheckpointService(store, config, new EventBusService(emitter), new MetricsService());
  return { service, seen, config };
}

let counter = 0;
function identity(): ConversationIdentity {
  const session = `svc-${process.pid}-${Date.now().toString(36)}-${counter++}`;
  return {
    conversation_key: `acme:${session}`,
    tenant_id: 'acme',
    session_id: session,
    agent_id: 'telecom_contas',
    user_id: 'u-1',
    channel: 'web',
  };
}

/** One turn the way TurnService runs it: lease with the head, load (with recovery), next state, commit. */
async function runTurn(
  service: CheckpointService,
  who: ConversationIdentity,
  next: (previous: AgentState, turn: number) => AgentState = (previous, turn) => ({
    ...previous,
    user_text: `message ${turn}`,
    turn,
  }),
): Promise<{ version: number; restoredFrom: number | null; state: AgentState }> {
  const lease = await service.acquire(who);
  try {
    const loaded = await service.load(lease);
    const turn = lease.session.turn_count + 1;
    const state = next(loaded?.state ?? {}, turn);
    const version = await service.commit({
      identity: who,
      leaseToken: lease.token,
      parentVersion: loaded?.version ?? null,
      turn,
      state,
      status: 'active',
      events: [],
    });
    return { version, restoredFrom: loaded?.version ?? null, state };
  } finally {
    await lease.release();
  }
}

/** The store with some methods replaced, to provoke failures the database cannot be made to produce on cue. */
function storeWith(store: CheckpointStore, overrides: Partial<CheckpointStore>): CheckpointStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      const override = (overrides as Record<PropertyKey, unknown>)[property];
      if (override !== undefined) return override;
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

function connectionReset(): Error {
  return Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
}

describe.each(backends)('CheckpointService on $name', (backend) => {
  let store: PostgresCheckpointStore;
  let dataSource: DataSource;
  let close: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    ({ store, dataSource, close } = await backend.open());
  }, 180000);

  afterAll(async () => {
    await close?.();
  });

  const corrupt = (
    who: ConversationIdentity,
    version: number,
    sql = `jsonb_set(state::jsonb, '{user_text}', '"tampered"')::text`,
  ) =>
    dataSource.query(`UPDATE checkpoints SET state = ${sql} WHERE conversation_key = $1 AND version = $2`, [
      who.conversation_key,
      version,
    ]);

  describe('integrity and recovery', () => {
    it('skips a corrupt head, restores the previous version, and the next commit extends the head', async () => {
      const { service, seen } = makeService(store);
      const who = identity();
      for (let i = 0; i < 3; i++) await runTurn(service, who);
      await corrupt(who, 3);

      const loaded = await service.loadLatest(who.conversation_key);
      expect(loaded).toMatchObject({ version: 2, skipped: 1, state: { user_text: 'message 2' } });
      expect(seen.filter((e) => e.name.startsWith('checkpoint.recovery'))).toEqual([
        {
          name: 'checkpoint.recovery.skip_corrupt',
          payload: expect.objectContaining({ version: 3, reason: 'checksum mismatch' }),
        },
      ]);

      const next = await runTurn(service, who);
      expect(next).toMatchObject({ version: 4, restoredFrom: 2, state: { user_text: 'message 4' } });
      const head = await service.getVersion(who.conversation_key, 4);
      expect(head?.parent_version).toBe(2);
      expect(await service.loadLatest(who.conversation_key)).toMatchObject({ version: 4, skipped: 0 });
      const listed = await service.listCheckpoints(who.conversation_key);
      expect(listed.map((c) => [c.version, c.valid])).toEqual([
        [4, true],
        [3, false],
        [2, true],
        [1, true],
      ]);
    });

    it('starts clean when every version is corrupt, and says so in events', async () => {
      const { service, seen } = makeService(store);
      const who = identity();
      for (let i = 0; i < 3; i++) await runTurn(service, who);
      await corrupt(who, 3);
      await corrupt(who, 2, `'"not an object"'`);
      await dataSource.query(
        `UPDATE checkpoints SET checksum = repeat('0', 64) WHERE conversation_key = $1 AND version = 1`,
        [who.conversation_key],
      );

      expect(await service.loadLatest(who.conversation_key)).toBeNull();
      const recovery = seen.filter((e) => e.name.startsWith('checkpoint.recovery'));
      expect(recovery.map((e) => [e.name, e.payload.version ?? e.payload.skipped, e.payload.reason])).toEqual(
        [
          ['checkpoint.recovery.skip_corrupt', 3, 'checksum mismatch'],
          ['checkpoint.recovery.skip_corrupt', 2, 'state is not an object'],
          ['checkpoint.recovery.skip_corrupt', 1, 'checksum mismatch'],
          ['checkpoint.recovery.clean_start', 3, undefined],
        ],
      );
      const next = await runTurn(service, who);
      expect(next).toMatchObject({
        version: 4,
        restoredFrom: null,
        state: { user_text: 'message 4', turn: 4 },
      });
      expect((await service.getVersion(who.conversation_key, 4))?.parent_version).toBeNull();
    });

    it('records the gap when the head version has no row, and restores the newest stored one', async () => {
      const { service, seen } = makeService(store);
      const who = identity();
      for (let i = 0; i < 4; i++) await runTurn(service, who);
      await dataSource.query('DELETE FROM checkpoints WHERE conversation_key = $1 AND version IN (3, 4)', [
        who.conversation_key,
      ]);
      const next = await runTurn(service, who);
      expect(next).toMatchObject({ version: 5, restoredFrom: 2, state: { user_text: 'message 5' } });
      expect(seen.filter((e) => e.name.startsWith('checkpoint.recovery'))).toEqual([
        {
          name: 'checkpoint.recovery.version_gap',
          payload: expect.objectContaining({ expected_version: 4, found_version: 2, missing_versions: 2 }),
        },
      ]);
      // Every version gone: a clean start that still says what was missing.
      await dataSource.query('DELETE FROM checkpoints WHERE conversation_key = $1', [who.conversation_key]);
      seen.length = 0;
      expect(await runTurn(service, who)).toMatchObject({ version: 6, restoredFrom: null });
      expect(seen.filter((e) => e.name.startsWith('checkpoint.recovery'))).toEqual([
        {
          name: 'checkpoint.recovery.version_gap',
          payload: expect.objectContaining({ expected_version: 5, found_version: null, missing_versions: 5 }),
        },
      ]);
    });

    it('scans only CHECKPOINT_RECOVERY_SCAN_LIMIT versions', async () => {
      const { service, seen } = makeService(store, { CHECKPOINT_RECOVERY_SCAN_LIMIT: '2' });
      const who = identity();
      for (let i = 0; i < 4; i++) await runTurn(service, who);
      await corrupt(who, 4);
      await corrupt(who, 3);
      expect(await service.loadLatest(who.conversation_key)).toBeNull();
      expect(seen.filter((e) => e.name === 'checkpoint.recovery.skip_corrupt')).toHaveLength(2);
      expect(seen.find((e) => e.name === 'checkpoint.recovery.clean_start')?.payload.skipped).toBe(2);

      const wider = makeService(store, { CHECKPOINT_RECOVERY_SCAN_LIMIT: '3' });
      expect(await wider.service.loadLatest(who.conversation_key)).toMatchObject({ version: 2, skipped: 2 });
    });
  });

  describe('compaction', () => {
    it('keeps the last CHECKPOINT_RETENTION versions, compacting in batches after the commits', async () => {
      const { service } = makeService(store, {
        CHECKPOINT_RETENTION: '5',
        // Only the explicit run below compacts.
        CHECKPOINT_COMPACTION_INTERVAL_MS: '600000',
      });
      const who = identity();
      const other = identity();
      for (let i = 0; i < 12; i++) {
        await runTurn(service, who);
        await runTurn(service, other);
      }
      // Off the turn path: nothing compacted yet, then one batch for both conversations.
      expect(await store.listVersions(who.conversation_key)).toHaveLength(12);
      await service.compactPending();
      expect((await store.listVersions(other.conversation_key)).map((v) => v.version)).toEqual([
        12, 11, 10, 9, 8,
      ]);
      const versions = await store.listVersions(who.conversation_key);
      expect(versions.map((v) => v.version)).toEqual([12, 11, 10, 9, 8]);
    });

    it('never undoes the write when it fails, and emits checkpoint.compaction.failed', async () => {
      const failing = storeWith(store, {
        compact: () => Promise.reject(new Error('compaction exploded')),
      });
      const { service, seen } = makeService(failing, { CHECKPOINT_RETENTION: '1' });
      const who = identity();
      const first = await runTurn(service, who);
      await service.compactPending();
      const second = await runTurn(service, who);
      await service.compactPending();
      expect([first.version, second.version]).toEqual([1, 2]);
      expect((await store.listVersions(who.conversation_key)).map((v) => v.version)).toEqual([2, 1]);
      const failures = seen.filter((e) => e.name === 'checkpoint.compaction.failed');
      expect(failures).toHaveLength(2);
      expect(failures[0].payload.error).toBe('compaction exploded');
    });

    it('keeps a 500-turn conversation at a constant size once the history cap is reached', async () => {
      const { service, config } = makeService(store);
      const limit = config.MEMORY_HISTORY_LIMIT;
      const who = identity();
      const sizes = new Map<number, number>();
      const totals = new Map<number, number>();
      // The persist node's rule: append the turn's two messages, keep the last MEMORY_HISTORY_LIMIT.
      const next = (previous: AgentState, turn: number): AgentState => {
        const at = new Date(Date.UTC(2025, 0, 1, 0, 0, turn % 60)).toISOString();
        const messages: HistoryMessage[] = [
          { role: 'user', content: `user message number ${turn % 10} about the invoice`, turn, at },
          {
            role: 'assistant',
            content: `assistant answer ${turn % 10} about it`,
            turn,
            at,
            route: 'billing_agent',
          },
        ];
        return {
          ...previous,
          user_text: messages[0].content,
          final_answer: messages[1].content,
          turn,
          history: [...(previous.history ?? []), ...messages].slice(-limit),
        };
      };
      for (let turn = 1; turn <= 500; turn++) {
        const { version } = await runTurn(service, who, next);
        if (turn % 50 === 0) {
          await service.compactPending();
          const rows = await store.listVersions(who.conversation_key);
          sizes.set(turn, rows[0].size_bytes);
          totals.set(
            turn,
            rows.reduce((sum, row) => sum + row.size_bytes, 0),
          );
          expect(rows).toHaveLength(Math.min(turn, config.CHECKPOINT_RETENTION));
          expect(rows[0].version).toBe(version);
        }
      }
      // Full after limit/2 turns; from then on only the digits of turn numbers change.
      const plateau = sizes.get(100) ?? 0;
      for (const turn of [150, 200, 300, 400, 500]) {
        expect(Math.abs((sizes.get(turn) ?? 0) - plateau)).toBeLessThanOrEqual(limit * 2);
        expect(Math.abs((totals.get(turn) ?? 0) - (totals.get(100) ?? 0))).toBeLessThanOrEqual(
          limit * 2 * config.CHECKPOINT_RETENTION,
        );
      }
      expect((await store.getSession(who.conversation_key))?.head_version).toBe(500);
    }, 300000);
  });

  describe('retention', () => {
    it('deletes turn log rows and idempotency records older than their retention, and nothing newer', async () => {
      const { service, config } = makeService(store);
      const old = identity();
      const recent = identity();
      for (const who of [old, recent]) {
        for (const messageId of ['m-1', 'm-2']) {
          const lease = await service.acquireFor(who, messageId);
          if ('replay' in lease) throw new Error('not a replay');
          await service.commit({
            identity: who,
            leaseToken: lease.token,
            parentVersion: lease.session.head_version || null,
            turn: lease.session.turn_count + 1,
            state: { user_text: messageId },
            status: 'active',
            events: [{ name: 'NOC.001', payload: {}, at: new Date().toISOString() }],
            idempotency: { message_id: messageId, response: { ok: true } },
          });
        }
      }
      for (const table of ['turn_log', 'processed_messages']) {
        await dataSource.query(
          `UPDATE ${table} SET created_at = now() - interval '40 days' WHERE conversation_key = $1`,
          [old.conversation_key],
        );
      }
      const count = async (table: string, who: ConversationIdentity) =>
        Number(
          (
            await dataSource.query(`SELECT count(*) AS n FROM ${table} WHERE conversation_key = $1`, [
              who.conversation_key,
            ])
          )[0].n,
        );
      // Retention off (0 days) keeps everything.
      const keepAll = new RetentionService(store, {
        ...config,
        TURN_LOG_RETENTION_DAYS: 0,
        PROCESSED_MESSAGES_RETENTION_DAYS: 0,
      });
      expect(await keepAll.sweep()).toEqual({ turn_log: 0, processed_messages: 0 });
      expect(await count('turn_log', old)).toBe(2);

      const deleted = await new RetentionService(store, config).sweep();
      expect(deleted.turn_log).toBeGreaterThanOrEqual(2);
      expect(deleted.processed_messages).toBeGreaterThanOrEqual(2);
      expect([await count('turn_log', old), await count('processed_messages', old)]).toEqual([0, 0]);
      expect([await count('turn_log', recent), await count('processed_messages', recent)]).toEqual([2, 2]);
      // The checkpoints and the session stay: only the log and the idempotency records age out.
      expect((await store.getSession(old.conversation_key))?.head_version).toBe(2);
    });
  });

  describe('retry', () => {
    it('retries a failed save with backoff and succeeds when the earlier attempt did land', async () => {
      let calls = 0;
      const flaky = storeWith(store, {
        commitTurn: async (commit, write) => {
          calls++;
          const version = await store.commitTurn(commit, write);
          // The commit landed but its acknowledgement is lost, as when the connection drops during COMMIT.
          if (calls === 1) throw connectionReset();
          return version;
        },
      });
      const { service, seen } = makeService(flaky);
      const who = identity();
      expect((await runTurn(service, who)).version).toBe(1);
      expect(calls).toBe(2);
      expect(seen.filter((e) => e.name === 'checkpoint.save.retry').map((e) => e.payload)).toEqual([
        expect.objectContaining({ attempt: 1, max_attempts: 3, error: 'read ECONNRESET' }),
      ]);
      expect((await store.listVersions(who.conversation_key)).map((v) => v.version)).toEqual([1]);
    });

    it('gives up after CHECKPOINT_RETRY_ATTEMPTS with bounded exponential delays and re-raises the last error', async () => {
      const errors: Error[] = [];
      const down = storeWith(store, {
        commitTurn: () => {
          const error = connectionReset();
          errors.push(error);
          return Promise.reject(error);
        },
      });
      const { service, seen } = makeService(down, {
        CHECKPOINT_RETRY_ATTEMPTS: '4',
        CHECKPOINT_RETRY_BASE_MS: '40',
        CHECKPOINT_RETRY_MAX_MS: '60',
        CHECKPOINT_RETRY_JITTER_MS: '10',
      });
      const who = identity();
      const started = Date.now();
      const failure = await runTurn(service, who).catch((error: unknown) => error);
      const elapsed = Date.now() - started;
      expect(errors).toHaveLength(4);
      expect(failure).toBe(errors[3]);
      const delays = seen
        .filter((e) => e.name === 'checkpoint.save.retry')
        .map((e) => Number(e.payload.delay_ms));
      expect(delays).toHaveLength(3);
      // min(max, base * 2^(attempt-1)) + U(0, jitter): 40..50, 60..70, 60..70.
      expect(delays[0]).toBeGreaterThanOrEqual(40);
      expect(delays[0]).toBeLessThanOrEqual(50);
      for (const delay of delays.slice(1)) {
        expect(delay).toBeGreaterThanOrEqual(60);
        expect(delay).toBeLessThanOrEqual(70);
      }
      expect(elapsed).toBeGreaterThanOrEqual(155);
      expect(await store.listVersions(who.conversation_key)).toEqual([]);
    });

    it('does not retry a statement error', async () => {
      let calls = 0;
      const broken = storeWith(store, {
        commitTurn: () => {
          calls++;
          return Promise.reject(Object.assign(new Error('syntax error'), { code: '42601' }));
        },
      });
      const { service, seen } = makeService(broken);
      await expect(runTurn(service, identity())).rejects.toThrow('syntax error');
      expect(calls).toBe(1);
      expect(seen.filter((e) => e.name.endsWith('.retry'))).toEqual([]);
    });
  });

  describe('one writer per conversation', () => {
    it('makes a second instance wait for the lease, bounded by TURN_LOCK_TIMEOUT_MS', async () => {
      const a = makeService(store);
      const b = makeService(store, { TURN_LOCK_TIMEOUT_MS: '5000' });
      const impatient = makeService(store, { TURN_LOCK_TIMEOUT_MS: '150' });
      const who = identity();
      const held = await a.service.acquire(who);
      const refused = await impatient.service.acquire(who).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(TurnLockTimeoutError);
      expect((refused as TurnLockTimeoutError).retryAfterSeconds).toBeGreaterThanOrEqual(1);

      const waiting = b.service.acquire(who);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await held.release();
      const lease = await waiting;
      expect(lease.waitedMs).toBeGreaterThanOrEqual(250);
      await lease.release();
    });

    it('lets a killed holder block the conversation for at most its lease', async () => {
      const who = identity();
      // A holder that died right after taking a 1.5 s lease: nobody renews or releases it.
      await store.acquireLease(who, { token: 'killed-process:turn', leaseMs: 1500 });
      const { service } = makeService(store, { TURN_LEASE_MS: '1000', TURN_LOCK_TIMEOUT_MS: '6000' });
      const started = Date.now();
      const result = await runTurn(service, who);
      const waited = Date.now() - started;
      expect(result.version).toBe(1);
      expect(waited).toBeGreaterThanOrEqual(1000);
      expect(waited).toBeLessThan(5000);
    });

    it('fences a holder whose lease lapsed: its commit fails instead of forking history', async () => {
      const a = makeService(store);
      const b = makeService(store);
      const who = identity();
      await runTurn(a.service, who);
      const stale = await a.service.acquire(who);
      const staleLoad = await a.service.loadLatest(who.conversation_key);
      // A pauses past its lease (GC pause, partition): B takes over and commits version 2.
      await dataSource.query(
        `UPDATE sessions SET lease_expires_at = now() - interval '1 second' WHERE conversation_key = $1`,
        [who.conversation_key],
      );
      expect((await runTurn(b.service, who)).version).toBe(2);
      const late = a.service.commit({
        identity: who,
        leaseToken: stale.token,
        parentVersion: staleLoad?.version ?? null,
        turn: 2,
        state: { user_text: 'from the paused holder' },
        status: 'active',
        events: [],
      });
      await expect(late).rejects.toBeInstanceOf(CheckpointFencingError);
      await stale.release();
      const versions = await store.listVersions(who.conversation_key);
      expect(versions.map((v) => [v.version, v.parent_version])).toEqual([
        [2, 1],
        [1, null],
      ]);
      expect((await runTurn(a.service, who)).version).toBe(3);
    });

    it('reclaims its own lease at once when releasing it failed, while other instances still wait', async () => {
      let failRelease = true;
      const flaky = storeWith(store, {
        releaseLease: (key, token) => {
          if (failRelease) {
            failRelease = false;
            return Promise.reject(new Error('release lost'));
          }
          return store.releaseLease(key, token);
        },
      });
      const a = makeService(flaky);
      const other = makeService(store, { TURN_LOCK_TIMEOUT_MS: '200' });
      const who = identity();
      await runTurn(a.service, who);
      // A committed turn released the lease in its commit.
      expect((await store.getSession(who.conversation_key))?.lease_owner).toBeNull();
      // A turn that ends without a commit (it failed) gives the lease back on its own, and that is lost here.
      const failed = await a.service.acquire(who);
      await failed.release();
      expect((await store.getSession(who.conversation_key))?.lease_owner).toBe(failed.token);
      await expect(other.service.acquire(who)).rejects.toBeInstanceOf(TurnLockTimeoutError);
      const started = Date.now();
      expect((await runTurn(a.service, who)).version).toBe(2);
      expect(Date.now() - started).toBeLessThan(1000);
    });

    it('serializes concurrent turns of one instance in arrival order with contiguous versions', async () => {
      const { service } = makeService(store);
      const who = identity();
      const order: number[] = [];
      const results = await Promise.all(
        [1, 2, 3, 4, 5].map((n) =>
          runTurn(service, who, (previous, turn) => {
            order.push(n);
            return { ...previous, turn, user_text: `m${n}` };
          }),
        ),
      );
      expect(order).toEqual([1, 2, 3, 4, 5]);
      expect(results.map((r) => r.version)).toEqual([1, 2, 3, 4, 5]);
    });
  });

  if (backend.name.startsWith('Postgres') && DATABASE_URL) {
    describe('real outage through a TCP proxy', () => {
      let proxy: TcpProxy;
      let proxied: { store: PostgresCheckpointStore; db: DatabaseService; dataSource: DataSource };

      beforeAll(async () => {
        const opened = await TcpProxy.forUrl(DATABASE_URL);
        proxy = opened.proxy;
        const proxiedSource = await createDataSource({ url: opened.url, poolSize: 3, embedded: false });
        const db = new DatabaseService(proxiedSource, null);
        proxied = { store: new PostgresCheckpointStore(db), db, dataSource: proxiedSource };
      });

      afterAll(async () => {
        await proxy.restore();
        await proxied.db.onApplicationShutdown();
        await proxy.stop();
      });

      it('retries a save while the database is unreachable, re-raises a connection error, and recovers', async () => {
        const { service, seen } = makeService(proxied.store);
        const who = identity();
        const lease = await service.acquire(who);
        await proxy.cut();
        const commit = () =>
          service.commit({
            identity: who,
            leaseToken: lease.token,
            parentVersion: null,
            turn: 1,
            state: { user_text: 'during the outage' },
            status: 'active',
            events: [],
          });
        const failure = await commit().catch((error: unknown) => error);
        expect(isConnectionError(failure)).toBe(true);
        expect(seen.filter((e) => e.name === 'checkpoint.save.retry')).toHaveLength(2);
        await proxy.restore();
        expect(await store.listVersions(who.conversation_key)).toEqual([]);
        expect(await commit()).toBe(1);
        await lease.release();
        // Every pooled connection works again: none of the dropped ones was kept.
        const pids = await Promise.all(
          [1, 2, 3].map(() => proxied.dataSource.query('SELECT pg_backend_pid() AS pid')),
        );
        expect(pids).toHaveLength(3);
      });

      it('leaves nothing half-written when the connection dies before or after any statement of a turn', async () => {
        let statements: string[] = [];
        let cutBefore = -1;
        // Every store call of a turn is one statement; the proxy drops the connections before the chosen one.
        const counting = new Proxy(proxied.store, {
          get(target, property, receiver) {
            const value: unknown = Reflect.get(target, property, receiver);
            if (typeof value !== 'function') return value;
            return async (...args: unknown[]) => {
              if (statements.length === cutBefore) await proxy.cut();
              statements.push(String(property));
              return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
            };
          },
        });
        const { service } = makeService(counting, { CHECKPOINT_RETRY_ATTEMPTS: '1' });
        const message = async (
          who: ConversationIdentity,
          messageId: string,
        ): Promise<'committed' | 'replayed'> => {
          const acquired = await service.acquireFor(who, messageId);
          if ('replay' in acquired) return 'replayed';
          try {
            const loaded = await service.load(acquired);
            const turn = acquired.session.turn_count + 1;
            await service.commit({
              identity: who,
              leaseToken: acquired.token,
              parentVersion: loaded?.version ?? null,
              turn,
              state: { ...loaded?.state, user_text: messageId, turn },
              status: 'active',
              events: [{ name: 'NOC.001', payload: { message_id: messageId }, at: new Date().toISOString() }],
              idempotency: { message_id: messageId, response: { turn } },
            });
            return 'committed';
          } finally {
            await acquired.release();
          }
        };
        const consistent = async (who: ConversationIdentity) => {
          const [row]: {
            head: number;
            turns: number;
            versions: number[];
            logged: number[];
            processed: string[];
          }[] = await dataSource.query(
            `SELECT s.head_version AS head, s.turn_count AS turns,
                      ARRAY(SELECT version FROM checkpoints c WHERE c.conversation_key = s.conversation_key ORDER BY 1) AS versions,
                      ARRAY(SELECT version FROM turn_log t WHERE t.conversation_key = s.conversation_key ORDER BY 1) AS logged,
                      ARRAY(SELECT message_id FROM processed_messages p WHERE p.conversation_key = s.conversation_key ORDER BY 1) AS processed
                 FROM sessions s WHERE s.conversation_key = $1`,
            [who.conversation_key],
          );
          const expected = Array.from({ length: row.head }, (_, i) => i + 1);
          expect(row).toEqual({
            head: row.turns,
            turns: row.turns,
            versions: expected,
            logged: expected,
            processed: expected.map((version) => `m-${version}`),
          });
        };

        // An uninterrupted turn: its statements.
        const first = identity();
        expect(await message(first, 'm-1')).toBe('committed');
        const turnStatements = [...statements];
        expect(turnStatements).toEqual(['acquireLease', 'commitTurn']);

        for (let cut = 0; cut <= turnStatements.length; cut++) {
          const who = identity();
          expect(await message(who, 'm-1')).toBe('committed');
          statements = [];
          cutBefore = cut;
          const outcome = await message(who, 'm-2').catch((error: unknown) => error);
          cutBefore = -1;
          await proxy.restore();
          if (cut < turnStatements.length) expect(isConnectionError(outcome)).toBe(true);
          else expect(outcome).toBe('committed');
          await consistent(who);
          // The channel resends: the turn lands exactly once.
          const resent = await message(who, 'm-2');
          expect(resent).toBe(cut < turnStatements.length ? 'committed' : 'replayed');
          await consistent(who);
          expect((await store.getSession(who.conversation_key))?.head_version).toBe(2);
        }
      });

      it('succeeds when the database comes back during the backoff', async () => {
        const { service, seen } = makeService(proxied.store, {
          CHECKPOINT_RETRY_ATTEMPTS: '8',
          CHECKPOINT_RETRY_BASE_MS: '50',
          CHECKPOINT_RETRY_MAX_MS: '200',
        });
        const who = identity();
        const lease = await service.acquire(who);
        await proxy.cut();
        setTimeout(() => void proxy.restore(), 250);
        const version = await service.commit({
          identity: who,
          leaseToken: lease.token,
          parentVersion: null,
          turn: 1,
          state: { user_text: 'outage shorter than the retries' },
          status: 'active',
          events: [],
        });
        await lease.release();
        expect(version).toBe(1);
        expect(seen.filter((e) => e.name === 'checkpoint.save.retry').length).toBeGreaterThanOrEqual(1);
      });
    });
  }
});

if (!DATABASE_URL) {
  describe('CheckpointService on Postgres', () => {
    it.skip('needs DATABASE_URL (CI sets it): outage tests through the TCP proxy did not run', () =>
      undefined);
  });
}
