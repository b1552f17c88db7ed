import { Module } from '@nestjs/common';
import { CheckpointService } from './checkpoint.service';
import { CheckpointStore } from './checkpoint.store';
import { PostgresCheckpointStore } from './postgres-checkpoint.store';

@Module({
  providers: [{ provide: CheckpointStore, useClass: PostgresCheckpointStore }, CheckpointService],
  exports: [CheckpointService],
})
export class CheckpointModule {}
