export * from './checkpoint.module';
export * from './checkpoint.service';
export {
  ConversationLeases,
  type ConversationLease,
  type LeaseCommit,
  type Replay,
} from './conversation-leases';
export { CheckpointRetry, type CheckpointOperation } from './checkpoint-retry';
export { CheckpointCommits } from './checkpoint-commits';
export { CheckpointRecovery } from './checkpoint-recovery';
export * from './checkpoint.entities';
export * from './checkpoint.errors';
export * from './checkpoint.types';
export * from './checkpoint.store';
export * from './turn-stats.query';
export * from './turn-summary';
export * from './retention.service';
export { PostgresCheckpointStore } from './postgres-checkpoint.store';
export * from './session-cursor';
export * from './turn-log-events';
export {
  canonicalJson,
  checkpointChecksum,
  CheckpointFormat,
  jsonbText,
  readCheckpoint,
  type CheckpointReading,
  serializeCheckpoint,
} from './canonical-json';
