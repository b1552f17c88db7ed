import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { CHECKPOINT_ENTITIES } from '@agent/checkpoint';
import {
  createDataSource,
  DatabaseService,
  runMigrationsExclusively,
  EmbeddedPostgres,
} from '@agent/database';
import {
  CheckpointStoreHarness,
  describeCheckpointStoreContract,
} from '../support/checkpoint-store-contract';
import { postgresCheckpointStore } from '../support/postgres-checkpoint-store';

/**
 * The CheckpointStore contract on PostgresCheckpointStore: the embedded default (PGlite in its child process,
 * reached through pg like a server) always, and a real Postgres when DATABASE_URL is set (CI).
 */

function harness(db: DatabaseService, close: () => Promise<void>): CheckpointStoreHarness {
  const dataSource = db.dataSource;
  return {
    store: postgresCheckpointStore(db),
    turnLog: (conversationKey) =>
      dataSource.query(
        'SELECT version, turn, summary, nodes, events FROM turn_log WHERE conversation_key = $1 ORDER BY version',
        [conversationKey],
      ),
    backdate: async (conversationKey, days) => {
      for (const table of ['turn_log', 'processed_messages']) {
        await dataSource.query(
          `UPDATE ${table} SET created_at = created_at - ($2::text || ' days')::interval WHERE conversation_key = $1`,
          [conversationKey, String(days)],
        );
      }
    },
    close,
  };
}

describeCheckpointStoreContract('embedded PGlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'checkpoint-contract-'));
  const embedded = await EmbeddedPostgres.start(dir, 170000);
  const dataSource = await createDataSource({
    url: embedded.url,
    poolSize: 1,
    embedded: true,
    entities: CHECKPOINT_ENTITIES,
  });
  await dataSource.runMigrations({ transaction: 'each' });
  const db = new DatabaseService(dataSource, embedded);
  return harness(db, async () => {
    await db.onApplicationShutdown();
    rmSync(dir, { recursive: true, force: true });
  });
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
    await runMigrationsExclusively(dataSource);
    const db = new DatabaseService(dataSource, null);
    return harness(db, () => db.onApplicationShutdown());
  });
} else {
  describe('CheckpointStore contract on Postgres', () => {
    it.skip('needs DATABASE_URL (CI sets it); only the embedded backend ran', () => undefined);
  });
}
