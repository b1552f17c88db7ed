import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CHECKPOINT_ENTITIES } from './checkpoint.entities';
import { CheckpointCommits } from './checkpoint-commits';
import { CheckpointRecovery } from './checkpoint-recovery';
import { CheckpointRetry } from './checkpoint-retry';
import { CheckpointService } from './checkpoint.service';
import { ConversationLeases } from './conversation-leases';
import { CheckpointStore } from './checkpoint.store';
import { PostgresCheckpointStore } from './postgres-checkpoint.store';
import { RetentionService } from './retention.service';
import { TurnStatsQuery } from './turn-stats.query';

@Module({
  imports: [TypeOrmModule.forFeature(CHECKPOINT_ENTITIES)],
  providers: [
    { provide: CheckpointStore, useClass: PostgresCheckpointStore },
    CheckpointRetry,
    CheckpointCommits,
    CheckpointRecovery,
    ConversationLeases,
    CheckpointService,
    RetentionService,
    TurnStatsQuery,
  ],
  exports: [CheckpointService, TurnStatsQuery],
})
export class CheckpointModule {}
