import {
  CheckpointEntity,
  PostgresCheckpointStore,
  SessionEntity,
  SessionEventView,
} from '@agent/checkpoint';
import { DatabaseService } from '@agent/database';
import type { CheckpointStoreHarness } from './checkpoint-store-contract';

/** PostgresCheckpointStore outside Nest, on a DataSource created with CHECKPOINT_ENTITIES. */
export function postgresCheckpointStore(db: DatabaseService): PostgresCheckpointStore {
  const { dataSource } = db;
  return new PostgresCheckpointStore(
    db,
    dataSource.getRepository(SessionEntity),
    dataSource.getRepository(CheckpointEntity),
    dataSource.getRepository(SessionEventView),
  );
}

/** The contract suite's harness for the Postgres store on `db`: SQL behind the store's back where it needs it. */
export function postgresStoreHarness(
  db: DatabaseService,
  close: () => Promise<void>,
): CheckpointStoreHarness {
  const dataSource = db.dataSource;
  return {
    store: postgresCheckpointStore(db),
    turnLog: (conversationKey) =>
      dataSource.query(
        'SELECT version, turn, summary, events::jsonb AS events FROM turn_log WHERE conversation_key = $1 ORDER BY version',
        [conversationKey],
      ),
    failedRuns: (conversationKey) =>
      dataSource.query(
        `SELECT version, attempt, turn, events::jsonb AS events FROM turn_failures
          WHERE conversation_key = $1 ORDER BY version, attempt`,
        [conversationKey],
      ),
    backdate: async (conversationKey, days, tables = ['turn_log', 'processed_messages']) => {
      for (const table of tables) {
        await dataSource.query(
          `UPDATE ${table} SET created_at = created_at - ($2::text || ' days')::interval WHERE conversation_key = $1`,
          [conversationKey, String(days)],
        );
      }
    },
    storeEarlierRecord: async (conversationKey, messageId, response) => {
      await dataSource.query(
        `INSERT INTO processed_messages (conversation_key, message_id, turn, response) VALUES ($1, $2, 1, $3)`,
        [conversationKey, messageId, response],
      );
    },
    close,
  };
}
