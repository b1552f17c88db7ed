import { rmSync } from 'node:fs';
import { DataSource } from 'typeorm';
import { CHECKPOINT_ENTITIES, serializeCheckpoint } from '@agent/checkpoint';
import { conversationKeyOf, type AgentState } from '@agent/contracts';
import {
  createDataSource,
  DatabaseService,
  runMigrationsExclusively,
  EmbeddedPostgres,
} from '@agent/database';
import { describeCheckpointStoreContract } from '../support/checkpoint-store-contract';
import { embeddedDataDir } from '../support/embedded-servers';
import { postgresCheckpointStore, postgresStoreHarness } from '../support/postgres-checkpoint-store';
import { scratchDatabase } from '../support/scratch-database';

/**
 * The CheckpointStore contract on PostgresCheckpointStore: the embedded default (PGlite in its child process,
 * reached through pg like a server) always, and a real Postgres when DATABASE_URL is set (CI).
 */

/** A migrated embedded PGlite in a directory of its own. */
async function openEmbedded(prefix: string): Promise<{ db: DatabaseService; close(): Promise<void> }> {
  const dir = embeddedDataDir(prefix);
  const embedded = await EmbeddedPostgres.start(dir, 170000);
  const dataSource = await createDataSource({
    url: embedded.url,
    poolSize: 1,
    embedded: true,
    entities: CHECKPOINT_ENTITIES,
  });
  await dataSource.runMigrations({ transaction: 'each' });
  const db = new DatabaseService(dataSource, embedded);
  return {
    db,
    close: async () => {
      await db.onApplicationShutdown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describeCheckpointStoreContract('embedded PGlite', async () => {
  const { db, close } = await openEmbedded('checkpoint-contract-');
  return postgresStoreHarness(db, close);
});

const url = process.env.DATABASE_URL;
if (url) {
  describeCheckpointStoreContract('Postgres (DATABASE_URL)', async () => {
    const dataSource: DataSource = await createDataSource({
      url,
      poolSize: 4,
      embedded: false,
      entities: CHECKPOINT_ENTITIES,
    });
    // Other suites may migrate the same database at the same moment.
    await runMigrationsExclusively(dataSource, 0);
    const db = new DatabaseService(dataSource, null);
    return postgresStoreHarness(db, () => db.onApplicationShutdown());
  });

  describe('the turn statements on Postgres', () => {
    /**
     * A store on a pool of one connection; `turns(n)` takes the lease and commits `n` more turns of one
     * conversation, `prepared()` lists the connection's named statements.
     */
    async function withStore(
      preparedStatements: boolean,
      work: (session: {
        dataSource: DataSource;
        turns(count: number): Promise<void>;
        prepared(): Promise<string[]>;
      }) => Promise<void>,
      databaseUrl = url ?? '',
    ): Promise<void> {
      const dataSource = await createDataSource({
        url: databaseUrl,
        poolSize: 1,
        embedded: false,
        entities: CHECKPOINT_ENTITIES,
      });
      const db = new DatabaseService(dataSource, null, preparedStatements);
      const store = postgresCheckpointStore(db);
      const session = `prepared-${process.pid}-${Date.now().toString(36)}-${preparedStatements}`;
      const who = {
        conversation_key: conversationKeyOf('prepared', session),
        tenant_id: 'prepared',
        session_id: session,
        agent_id: 'telecom_contas',
      };
      let head = 0;
      try {
        await runMigrationsExclusively(dataSource, 0);
        await work({
          dataSource,
          turns: async (count) => {
            for (let i = 0; i < count; i++) {
              expect(
                (await store.acquireLease(who, { token: 't:1', leaseMs: 60000 })).session,
              ).not.toBeNull();
              const state: AgentState = { user_text: `turn ${head + 1}` };
              const { text, checksum } = serializeCheckpoint(state, head || null);
              await store.commitTurn(
                {
                  identity: who,
                  leaseToken: 't:1',
                  parentVersion: head || null,
                  turn: head + 1,
                  state,
                  status: 'active',
                  events: [],
                },
                { expectedHead: head, serializedState: text, checksum, keep: 3 },
              );
              head++;
            }
          },
          prepared: async () => {
            const rows: { name: string }[] = await dataSource.query(
              'SELECT name FROM pg_prepared_statements ORDER BY name',
            );
            return rows.map((row) => row.name);
          },
        });
      } finally {
        await store.deleteConversation(who.conversation_key);
        await db.onApplicationShutdown();
      }
    }

    it('names them, so each connection parses and plans them once', async () => {
      await withStore(true, async ({ turns, prepared }) => {
        await turns(2);
        expect(await prepared()).toEqual(['checkpoint_commit', 'checkpoint_lease']);
      });
    });

    it('sends them unnamed with DATABASE_PREPARED_STATEMENTS off (a pooler that cannot keep them)', async () => {
      await withStore(false, async ({ turns, prepared }) => {
        await turns(2);
        expect(await prepared()).toEqual([]);
      });
    });

    it('prepares them again when a migration changed the type of a column they return (a rolling deploy)', async () => {
      // A database of its own: the test changes a column's type.
      const scratch = await scratchDatabase(url ?? '', 'prepared_stale');
      try {
        await withStore(
          true,
          async ({ dataSource, turns, prepared }) => {
            await turns(1);
            await dataSource.query('ALTER TABLE sessions ALTER COLUMN channel TYPE varchar(200)');
            await turns(2);
            expect(await prepared()).toEqual(['checkpoint_commit', 'checkpoint_lease']);
          },
          scratch.url,
        );
      } finally {
        await scratch.drop();
      }
    });

    it('commits the lease without waiting for a WAL flush and the turn with one, on the same connection', async () => {
      // A database of its own: a trigger on sessions records, at each commit, the setting that commit ran under.
      const scratch = await scratchDatabase(url ?? '', 'lease_async_commit');
      try {
        await withStore(
          true,
          async ({ dataSource, turns }) => {
            await dataSource.query(`
              CREATE TABLE commit_settings (id serial PRIMARY KEY, setting text NOT NULL);
              CREATE FUNCTION record_commit_setting() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                  INSERT INTO commit_settings (setting) VALUES (current_setting('synchronous_commit'));
                  RETURN NULL;
                END $$;
              CREATE CONSTRAINT TRIGGER record_commit_setting AFTER INSERT OR UPDATE ON sessions
                DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION record_commit_setting();`);
            await turns(2);
            const settings: { setting: string }[] = await dataSource.query(
              'SELECT setting FROM commit_settings ORDER BY id',
            );
            // Lease, commit, lease, commit: the lease's setting ends with its transaction.
            expect(settings.map((row) => row.setting)).toEqual(['off', 'on', 'off', 'on']);
            const [connection]: { synchronous_commit: string }[] =
              await dataSource.query('SHOW synchronous_commit');
            expect(connection.synchronous_commit).toBe('on');
          },
          scratch.url,
        );
      } finally {
        await scratch.drop();
      }
    });

    it('goes on unnamed when the server already holds one of their names, as behind a pooler', async () => {
      await withStore(true, async ({ dataSource, turns, prepared }) => {
        // Another client's statement of that name on the server connection (42P05 when this client prepares it).
        await dataSource.query('PREPARE checkpoint_lease AS SELECT 1');
        await turns(2);
        // The refused connection was dropped; its successor got only unnamed statements.
        expect(await prepared()).toEqual([]);
      });
    });

    it('goes on unnamed when the server loses them, as behind a pooler in transaction mode', async () => {
      await withStore(true, async ({ dataSource, turns, prepared }) => {
        await turns(1);
        // The connection forgets its statements while the client still counts on them.
        await dataSource.query('DEALLOCATE ALL');
        await turns(2);
        expect(await prepared()).toEqual([]);
      });
    });
  });
} else {
  describe('CheckpointStore contract on Postgres', () => {
    it.skip('needs DATABASE_URL (CI sets it); only the embedded backend ran', () => undefined);
  });
}

/**
 * How a turn's documents are stored (the CompactTurnStorage migration): compressed, and inline in their rows
 * rather than moved to the TOAST table. On the embedded backend, which no other suite writes to.
 */
describe('turn storage on embedded PGlite', () => {
  let embedded: { db: DatabaseService; close(): Promise<void> };

  beforeAll(async () => {
    embedded = await openEmbedded('turn-storage-');
  }, 180000);

  afterAll(async () => {
    await embedded?.close();
  });

  it('compresses the turn log row, the checkpoint and the stored response inline', async () => {
    const { db } = embedded;
    const store = postgresCheckpointStore(db);
    // Keys longer than a TOAST pointer, which the toaster could otherwise move out of line on their own.
    const session = 'session-with-a-key-longer-than-a-toast-pointer';
    const who = {
      conversation_key: conversationKeyOf('storage', session),
      tenant_id: 'storage',
      session_id: session,
      agent_id: 'telecom_contas',
    };
    const payload = (index: number) => ({
      at: new Date(0).toISOString(),
      code: `RAIL_${index}`,
      reason: 'within the size limit',
      metadata: { source: 'screen', estimated_tokens: index },
      conversation_key: who.conversation_key,
    });
    const history = Array.from({ length: 40 }, (_, turn) => ({
      role: 'user' as const,
      content: `Quero entender a cobrança da minha fatura deste mês (${turn})`,
    }));
    const state: AgentState = { user_text: 'fatura', turn: 1, history };
    const { text, checksum } = serializeCheckpoint(state, null);
    expect((await store.acquireLease(who, { token: 't:1', leaseMs: 60000 })).session).not.toBeNull();
    await store.commitTurn(
      {
        identity: who,
        leaseToken: 't:1',
        parentVersion: null,
        turn: 1,
        state,
        status: 'active',
        events: Array.from({ length: 40 }, (_, index) => ({
          name: 'GRL.002',
          payload: payload(index),
          at: new Date(0).toISOString(),
        })),
        idempotency: {
          message_id: 'm-1',
          response: { answer: 'Sua fatura está no aplicativo. '.repeat(80) },
        },
      },
      { expectedHead: 0, serializedState: text, checksum, keep: 3 },
    );

    const stored: { method: string | null; size: number; raw: number }[] = await db.dataSource.query(
      `SELECT pg_column_compression(events) AS method, pg_column_size(events) AS size,
              octet_length(events) AS raw FROM turn_log WHERE conversation_key = $1
       UNION ALL
       SELECT pg_column_compression(state), pg_column_size(state), octet_length(state)
         FROM checkpoints WHERE conversation_key = $1
       UNION ALL
       SELECT pg_column_compression(response), pg_column_size(response), octet_length(response)
         FROM turn_log WHERE conversation_key = $1`,
      [who.conversation_key],
    );
    expect(stored).toHaveLength(3);
    for (const column of stored) {
      expect(column.method).toBe('pglz');
      expect(column.size).toBeLessThan(column.raw / 2);
    }
    const toastTables: { name: string }[] = await db.dataSource.query(
      `SELECT reltoastrelid::regclass::text AS name FROM pg_class
        WHERE relname IN ('turn_log', 'checkpoints', 'processed_messages')`,
    );
    expect(toastTables).toHaveLength(3);
    for (const { name } of toastTables) {
      const [{ chunks }]: { chunks: number }[] = await db.dataSource.query(
        `SELECT count(*)::integer AS chunks FROM ${name}`,
      );
      expect(chunks).toBe(0);
    }
    expect(await store.listEvents(who.conversation_key)).toHaveLength(40);
  });
});
