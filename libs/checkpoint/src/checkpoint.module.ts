import { Module } from '@nestjs/common';
import { CheckpointService } from './checkpoint.service';
import { CheckpointStore } from './checkpoint.store';
import { PostgresCheckpointStore } from './postgres-checkpoint.store';
import { RetentionService } from './retention.service';
import { TurnStatsQuery } from './turn-stats.query';

@Module({
  providers: [
    { provide: CheckpointStore, useClass: PostgresCheckpointStore },
    CheckpointService,
    RetentionService,
    TurnStatsQuery,
  ],
  exports: [CheckpointService, TurnStatsQuery],
})
export class CheckpointModule {}
