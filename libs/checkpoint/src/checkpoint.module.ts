import { Module } from '@nestjs/common';
import { CheckpointService } from './checkpoint.service';
import { CheckpointStore } from './checkpoint.store';
import { PostgresCheckpointStore } from './postgres-checkpoint.store';
import { TurnStatsQuery } from './turn-stats.query';

@Module({
  providers: [
    { provide: CheckpointStore, useClass: PostgresCheckpointStore },
    CheckpointService,
    TurnStatsQuery,
  ],
  exports: [CheckpointService, TurnStatsQuery],
})
export class CheckpointModule {}
