import {
  AgentMismatchError,
  CheckpointFencingError,
  ConversationIdentity,
  RetentionService,
  TurnLockTimeoutError,
} from '@agent/checkpoint';
import type { AgentState, HistoryMessage } from '@agent/contracts';
import {
  checkpointServiceFor,
  connectionReset,
  conversationIdentity,
  runCheckpointTurn,
  storeWith,
} from '../support/checkpoint-turns';
import { InMemoryCheckpointStore } from '../support/in-memory-checkpoint-store';
import { waitUntil } from '../support/wait-for';

/**
 * CheckpointService on the in-memory store (which passes the same contract as the Postgres one): integrity and
 * recovery, retry, compaction, retention, bounded checkpoint size, and the one-writer lease with fencing across
 * instances. Rows are changed behind the store's back where the Postgres tests would use SQL.
 */
describe('CheckpointService', () => {
  let store: InMemoryCheckpointStore;

  beforeEach(() => {
    store = new InMemoryCheckpointStore();
  });

  /** The stored row of a version, to tamper with. */
  const row = (who: ConversationIdentity, version: number) => {
    const found = store.tables.checkpoints.get(who.conversation_key)?.get(version);
    if (!found) throw new Error(`no version ${version}`);
    return found;
  };
  const corrupt = (who: ConversationIdentity, version: number) => {
    const stored = row(who, version);
    stored.state_text = JSON.stringify({ ...JSON.parse(stored.state_text), user_text: 'tampered' });
  };

  describe('integrity and recovery', () => {
    it('skips a corrupt head, restores the previous version, and the next commit extends the head', async () => {
      const { service, seen } = checkpointServiceFor(store);
      const who = conversationIdentity();
      for (let i = 0; i < 3; i++) await runCheckpointTurn(service, who);
      corrupt(who, 3);

      const loaded = await service.loadLatest(who.conversation_key);
      expect(loaded).toMatchObject({ version: 2, skipped: 1, state: { user_text: 'message 2' } });
      expect(seen.filter((e) => e.name.startsWith('checkpoint.recovery'))).toEqual([
        {
          name: 'checkpoint.recovery.skip_corrupt',
          payload: expect.objectContaining({ version: 3, reason: 'checksum mismatch' }),
        },
      ]);

      const next = await runCheckpointTurn(service, who);
      expect(next).toMatchObject({ version: 4, restoredFrom: 2, state: { user_text: 'message 4' } });
      const head = await service.getVersion(who.conversation_key, 4);
      expect(head?.parent_version).toBe(2);
      expect(await service.loadLatest(who.conversation_key)).toMatchObject({ version: 4, skipped: 0 });
      // The commit of 4 deleted 1: CHECKPOINT_RETENTION (3) versions are kept, the corrupt one among them.
      const listed = await service.listCheckpoints(who.conversation_key);
      expect(listed.map((c) => [c.version, c.valid])).toEqual([
        [4, true],
        [3, false],
        [2, true],
      ]);
    });

    it('starts clean when every version is corrupt, and says so in events', async () => {
      const { service, seen } = checkpointServiceFor(store);
      const who = conversationIdentity();
      for (let i = 0; i < 3; i++) await runCheckpointTurn(service, who);
      corrupt(who, 3);
      row(who, 2).state_text = '"not an object"';
      row(who, 1).checksum = '0'.repeat(64);

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
      const next = await runCheckpointTurn(service, who);
      expect(next).toMatchObject({
        version: 4,
        restoredFrom: null,
        state: { user_text: 'message 4', turn: 4 },
      });
      expect((await service.getVersion(who.conversation_key, 4))?.parent_version).toBeNull();
    });

    it('records the gap when the head version has no row, and restores the newest stored one', async () => {
      const { service, seen } = checkpointServiceFor(store);
      const who = conversationIdentity();
      for (let i = 0; i < 4; i++) await runCheckpointTurn(service, who);
      for (const version of [3, 4]) store.tables.checkpoints.get(who.conversation_key)?.delete(version);
      const next = await runCheckpointTurn(service, who);
      expect(next).toMatchObject({ version: 5, restoredFrom: 2, state: { user_text: 'message 5' } });
      expect(seen.filter((e) => e.name.startsWith('checkpoint.recovery'))).toEqual([
        {
          name: 'checkpoint.recovery.version_gap',
          payload: expect.objectContaining({ expected_version: 4, found_version: 2, missing_versions: 2 }),
        },
      ]);
      // Every version gone: a clean start that still says what was missing.
      store.tables.checkpoints.delete(who.conversation_key);
      seen.length = 0;
      expect(await runCheckpointTurn(service, who)).toMatchObject({ version: 6, restoredFrom: null });
      expect(seen.filter((e) => e.name.startsWith('checkpoint.recovery'))).toEqual([
        {
          name: 'checkpoint.recovery.version_gap',
          payload: expect.objectContaining({ expected_version: 5, found_version: null, missing_versions: 5 }),
        },
      ]);
    });

    it('scans only CHECKPOINT_RECOVERY_SCAN_LIMIT versions', async () => {
      const { service, seen } = checkpointServiceFor(store, { CHECKPOINT_RECOVERY_SCAN_LIMIT: '2' });
      const who = conversationIdentity();
      for (let i = 0; i < 4; i++) await runCheckpointTurn(service, who);
      corrupt(who, 4);
      corrupt(who, 3);
      expect(await service.loadLatest(who.conversation_key)).toBeNull();
      expect(seen.filter((e) => e.name === 'checkpoint.recovery.skip_corrupt')).toHaveLength(2);
      expect(seen.find((e) => e.name === 'checkpoint.recovery.clean_start')?.payload.skipped).toBe(2);

      const wider = checkpointServiceFor(store, { CHECKPOINT_RECOVERY_SCAN_LIMIT: '3' });
      expect(await wider.service.loadLatest(who.conversation_key)).toMatchObject({ version: 2, skipped: 2 });
    });
  });

  describe('compaction', () => {
    it('keeps the last CHECKPOINT_RETENTION versions of each conversation as it commits', async () => {
      const { service } = checkpointServiceFor(store, { CHECKPOINT_RETENTION: '5' });
      const who = conversationIdentity();
      const other = conversationIdentity();
      for (let i = 0; i < 12; i++) {
        await runCheckpointTurn(service, who);
        if (i < 4) await runCheckpointTurn(service, other);
      }
      expect((await store.listVersions(who.conversation_key)).map((v) => v.version)).toEqual([
        12, 11, 10, 9, 8,
      ]);
      expect((await store.listVersions(other.conversation_key)).map((v) => v.version)).toEqual([4, 3, 2, 1]);
    });

    it('keeps a 500-turn conversation at a constant size once the history cap is reached', async () => {
      const { service, config } = checkpointServiceFor(store);
      const limit = config.MEMORY_HISTORY_LIMIT;
      const who = conversationIdentity();
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
        const { version } = await runCheckpointTurn(service, who, next);
        if (turn % 50 === 0) {
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
      const { service, config } = checkpointServiceFor(store);
      const old = conversationIdentity();
      const recent = conversationIdentity();
      for (const who of [old, recent]) {
        for (const messageId of ['m-1', 'm-2']) {
          const lease = await service.acquireFor(who, messageId);
          if ('replay' in lease) throw new Error('not a replay');
          await lease.commit({
            parentVersion: lease.session.head_version || null,
            turn: lease.session.turn_count + 1,
            state: { user_text: messageId },
            status: 'active',
            events: [{ name: 'NOC.001', payload: {}, at: new Date().toISOString() }],
            idempotency: { message_id: messageId, response: { ok: true } },
          });
        }
      }
      const fortyDaysAgo = new Date(Date.now() - 40 * 86_400_000);
      for (const row of [
        ...(store.tables.turnLog.get(old.conversation_key)?.values() ?? []),
        ...(store.tables.processed.get(old.conversation_key)?.values() ?? []),
      ]) {
        row.created_at = fortyDaysAgo;
      }
      const count = (table: 'turnLog' | 'processed', who: ConversationIdentity) =>
        store.tables[table].get(who.conversation_key)?.size ?? 0;
      // Retention off (0 days) keeps everything.
      const keepAll = new RetentionService(store, {
        ...config,
        TURN_LOG_RETENTION_DAYS: 0,
        PROCESSED_MESSAGES_RETENTION_DAYS: 0,
      });
      expect(await keepAll.sweep()).toEqual({ turn_log: 0, processed_messages: 0, turn_failures: 0 });
      expect(count('turnLog', old)).toBe(2);

      // Idempotency records expire on their own when the turn log is kept longer.
      const keepLog = new RetentionService(store, { ...config, TURN_LOG_RETENTION_DAYS: 60 });
      expect(await keepLog.sweep()).toEqual({ turn_log: 0, processed_messages: 2, turn_failures: 0 });
      expect([count('turnLog', old), count('processed', old)]).toEqual([2, 0]);

      const deleted = await new RetentionService(store, config).sweep();
      expect(deleted).toEqual({ turn_log: 2, processed_messages: 0, turn_failures: 0 });
      expect([count('turnLog', old), count('processed', old)]).toEqual([0, 0]);
      expect([count('turnLog', recent), count('processed', recent)]).toEqual([2, 2]);
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
      const { service, seen } = checkpointServiceFor(flaky);
      const who = conversationIdentity();
      expect((await runCheckpointTurn(service, who)).version).toBe(1);
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
      const { service, seen } = checkpointServiceFor(down, {
        CHECKPOINT_RETRY_ATTEMPTS: '4',
        CHECKPOINT_RETRY_BASE_MS: '40',
        CHECKPOINT_RETRY_MAX_MS: '60',
        CHECKPOINT_RETRY_JITTER_MS: '10',
      });
      const who = conversationIdentity();
      const started = Date.now();
      const failure = await runCheckpointTurn(service, who).catch((error: unknown) => error);
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
      const { service, seen } = checkpointServiceFor(broken);
      await expect(runCheckpointTurn(service, conversationIdentity())).rejects.toThrow('syntax error');
      expect(calls).toBe(1);
      expect(seen.filter((e) => e.name.endsWith('.retry'))).toEqual([]);
    });
  });

  describe('one writer per conversation', () => {
    it('makes a second instance wait for the lease, bounded by TURN_LOCK_TIMEOUT_MS', async () => {
      const a = checkpointServiceFor(store);
      let attemptsOfB = 0;
      const storeOfB = storeWith(store, {
        acquireLease: (identity, request) => {
          attemptsOfB++;
          return store.acquireLease(identity, request);
        },
      });
      const b = checkpointServiceFor(storeOfB, { TURN_LOCK_TIMEOUT_MS: '5000' });
      const impatient = checkpointServiceFor(store, { TURN_LOCK_TIMEOUT_MS: '150' });
      const who = conversationIdentity();
      const held = await a.service.acquire(who);
      const refused = await impatient.service.acquire(who).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(TurnLockTimeoutError);
      expect((refused as TurnLockTimeoutError).retryAfterSeconds).toBeGreaterThanOrEqual(1);

      const waiting = b.service.acquire(who);
      // A second attempt means the first was refused: b waits for the lease a holds.
      await waitUntil('b to be refused the lease', () => attemptsOfB >= 2, 5000);
      await held.release();
      const lease = await waiting;
      expect(attemptsOfB).toBeGreaterThanOrEqual(2);
      expect(lease.waitedMs).toBeGreaterThan(0);
      await lease.release();
    });

    it('lets a killed holder block the conversation for at most its lease', async () => {
      const who = conversationIdentity();
      // A holder that died right after taking a 1.5 s lease: nobody renews or releases it.
      await store.acquireLease(who, { token: 'killed-process:turn', leaseMs: 1500 });
      const { service } = checkpointServiceFor(store, {
        TURN_LEASE_MS: '1000',
        TURN_LOCK_TIMEOUT_MS: '6000',
      });
      const started = Date.now();
      const result = await runCheckpointTurn(service, who);
      const waited = Date.now() - started;
      expect(result.version).toBe(1);
      expect(waited).toBeGreaterThanOrEqual(1000);
      expect(waited).toBeLessThan(5000);
    });

    it('fences a holder whose lease lapsed: its commit fails instead of forking history', async () => {
      const a = checkpointServiceFor(store);
      const b = checkpointServiceFor(store);
      const who = conversationIdentity();
      await runCheckpointTurn(a.service, who);
      const stale = await a.service.acquire(who);
      const staleLoad = await a.service.loadLatest(who.conversation_key);
      // A pauses past its lease (GC pause, partition): B takes over and commits version 2.
      const session = store.tables.sessions.get(who.conversation_key);
      if (session) session.lease_expires_at = new Date(Date.now() - 1000);
      expect((await runCheckpointTurn(b.service, who)).version).toBe(2);
      const late = stale.commit({
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
      expect((await runCheckpointTurn(a.service, who)).version).toBe(3);
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
      const a = checkpointServiceFor(flaky);
      const other = checkpointServiceFor(store, { TURN_LOCK_TIMEOUT_MS: '200' });
      const who = conversationIdentity();
      await runCheckpointTurn(a.service, who);
      // A committed turn released the lease in its commit.
      expect((await store.getSession(who.conversation_key))?.lease_owner).toBeNull();
      // A turn that ends without a commit (it failed) gives the lease back on its own, and that is lost here.
      const failed = await a.service.acquire(who);
      await failed.release();
      expect((await store.getSession(who.conversation_key))?.lease_owner).toBe(failed.token);
      await expect(other.service.acquire(who)).rejects.toBeInstanceOf(TurnLockTimeoutError);
      const started = Date.now();
      expect((await runCheckpointTurn(a.service, who)).version).toBe(2);
      expect(Date.now() - started).toBeLessThan(1000);
    });

    it('bounds the wait behind an earlier turn of the same instance, and counts the timeout', async () => {
      const { service, metrics } = checkpointServiceFor(store, { TURN_LOCK_TIMEOUT_MS: '100' });
      const who = conversationIdentity();
      const held = await service.acquire(who);
      const before = (await metrics.lockTimeouts.get()).values[0]?.value ?? 0;
      await expect(service.acquire(who)).rejects.toBeInstanceOf(TurnLockTimeoutError);
      expect((await metrics.lockTimeouts.get()).values[0]?.value).toBe(before + 1);
      await held.release();
      const next = await service.acquire(who);
      expect(next.session.lease_owner).toBe(next.token);
      await next.release();
    });

    it('refuses a conversation bound to another agent and gives its lease back', async () => {
      const { service } = checkpointServiceFor(store);
      const who = conversationIdentity();
      await runCheckpointTurn(service, who);
      const failure = await service
        .acquire({ ...who, agent_id: 'another_agent' })
        .catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(AgentMismatchError);
      expect(failure).toMatchObject({ boundAgentId: 'telecom_contas', requestedAgentId: 'another_agent' });
      expect((await store.getSession(who.conversation_key))?.lease_owner).toBeNull();
      expect((await runCheckpointTurn(service, who)).version).toBe(2);
    });

    it('answers a processed message from its record without taking the lease', async () => {
      const { service } = checkpointServiceFor(store);
      const who = conversationIdentity();
      const lease = await service.acquireFor(who, 'm-1');
      if ('replay' in lease) throw new Error('a new message cannot be a replay');
      await lease.commit({
        parentVersion: null,
        turn: 1,
        state: { user_text: 'oi' },
        status: 'active',
        events: [],
        idempotency: { message_id: 'm-1', response: { answer: 'olá' }, fingerprint: 'f' },
      });
      // Another instance holds the lease now: the replay does not wait for it.
      const other = checkpointServiceFor(store, { TURN_LOCK_TIMEOUT_MS: '100' });
      const holder = await other.service.acquire(who);
      expect(await service.acquireFor(who, 'm-1')).toEqual({
        replay: { response: { answer: 'olá' }, fingerprint: 'f' },
      });
      await holder.release();
    });

    it('restores the head read with the lease without reading it again', async () => {
      let reads = 0;
      const counting = storeWith(store, {
        latestVersions: (key, limit, before) => {
          reads++;
          return store.latestVersions(key, limit, before);
        },
      });
      const { service } = checkpointServiceFor(counting);
      const who = conversationIdentity();
      await runCheckpointTurn(service, who);
      expect(await runCheckpointTurn(service, who)).toMatchObject({ version: 2, restoredFrom: 1 });
      expect(reads).toBe(0);
    });

    it('serializes concurrent turns of one instance in arrival order with contiguous versions', async () => {
      const { service } = checkpointServiceFor(store);
      const who = conversationIdentity();
      const order: number[] = [];
      const results = await Promise.all(
        [1, 2, 3, 4, 5].map((n) =>
          runCheckpointTurn(service, who, (previous, turn) => {
            order.push(n);
            return { ...previous, turn, user_text: `m${n}` };
          }),
        ),
      );
      expect(order).toEqual([1, 2, 3, 4, 5]);
      expect(results.map((r) => r.version)).toEqual([1, 2, 3, 4, 5]);
    });
  });
});
