import { DataSource } from 'typeorm';
import { CHECKPOINT_ENTITIES, ConversationIdentity, PostgresCheckpointStore } from '@agent/checkpoint';
import {
  createDataSource,
  DatabaseService,
  runMigrationsExclusively,
  isConnectionError,
} from '@agent/database';
import { checkpointServiceFor, conversationIdentity } from '../support/checkpoint-turns';
import { postgresCheckpointStore } from '../support/postgres-checkpoint-store';
import { TcpProxy } from '../support/tcp-proxy';
import { waitUntil } from '../support/wait-for';

/**
 * CheckpointService through a real connection that drops (a TCP proxy in front of DATABASE_URL): retry,
 * recovery, and no half-written turn. Its logic on a store that never drops is in test/unit/checkpoint-service.spec.ts.
 */
const DATABASE_URL = process.env.DATABASE_URL;

if (DATABASE_URL) {
  describe('CheckpointService through a real outage', () => {
    let store: PostgresCheckpointStore;
    let dataSource: DataSource;
    let direct: DatabaseService;
    let proxy: TcpProxy;
    let proxied: { store: PostgresCheckpointStore; db: DatabaseService; dataSource: DataSource };

    beforeAll(async () => {
      dataSource = await createDataSource({
        url: DATABASE_URL,
        poolSize: 4,
        embedded: false,
        entities: CHECKPOINT_ENTITIES,
      });
      await runMigrationsExclusively(dataSource, 0);
      direct = new DatabaseService(dataSource, null);
      store = postgresCheckpointStore(direct);
      const opened = await TcpProxy.forUrl(DATABASE_URL);
      proxy = opened.proxy;
      const proxiedSource = await createDataSource({
        url: opened.url,
        poolSize: 3,
        embedded: false,
        entities: CHECKPOINT_ENTITIES,
      });
      const db = new DatabaseService(proxiedSource, null);
      proxied = { store: postgresCheckpointStore(db), db, dataSource: proxiedSource };
    });

    afterAll(async () => {
      await proxy.restore();
      await proxied.db.onApplicationShutdown();
      await proxy.stop();
      await direct.onApplicationShutdown();
    });

    it('retries a save while the database is unreachable, re-raises a connection error, and recovers', async () => {
      const { service, seen } = checkpointServiceFor(proxied.store);
      const who = conversationIdentity();
      const lease = await service.acquire(who);
      await proxy.cut();
      const commit = () =>
        lease.commit({
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
      const { service } = checkpointServiceFor(counting, { CHECKPOINT_RETRY_ATTEMPTS: '1' });
      const message = async (
        who: ConversationIdentity,
        messageId: string,
      ): Promise<'committed' | 'replayed'> => {
        const acquired = await service.acquireFor(who, messageId);
        if ('replay' in acquired) return 'replayed';
        try {
          const loaded = await service.load(acquired);
          const turn = acquired.session.turn_count + 1;
          await acquired.commit({
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
      const first = conversationIdentity();
      expect(await message(first, 'm-1')).toBe('committed');
      const turnStatements = [...statements];
      expect(turnStatements).toEqual(['acquireLease', 'commitTurn']);

      for (let cut = 0; cut <= turnStatements.length; cut++) {
        const who = conversationIdentity();
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
      const { service, seen } = checkpointServiceFor(proxied.store, {
        CHECKPOINT_RETRY_ATTEMPTS: '8',
        CHECKPOINT_RETRY_BASE_MS: '50',
        CHECKPOINT_RETRY_MAX_MS: '200',
      });
      const who = conversationIdentity();
      const lease = await service.acquire(who);
      await proxy.cut();
      const committed = lease.commit({
        parentVersion: null,
        turn: 1,
        state: { user_text: 'outage shorter than the retries' },
        status: 'active',
        events: [],
      });
      // Back once the commit has failed and is waiting to retry.
      await waitUntil('a retry of the commit', () => seen.some((e) => e.name === 'checkpoint.save.retry'));
      await proxy.restore();
      const version = await committed;
      await lease.release();
      expect(version).toBe(1);
      expect(seen.filter((e) => e.name === 'checkpoint.save.retry').length).toBeGreaterThanOrEqual(1);
    });
  });
} else {
  describe('CheckpointService through a real outage', () => {
    it.skip('needs DATABASE_URL (CI sets it): outage tests through the TCP proxy did not run', () =>
      undefined);
  });
}
