import {
  CheckpointEntity,
  PostgresCheckpointStore,
  SessionEntity,
  SessionEventView,
} from '@agent/checkpoint';
import { DatabaseService } from '@agent/database';

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
