import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { MEMORY_ENTITIES } from './long-term-memory.entity';
import { LongTermMemoryStore } from './long-term-memory.store';
import { MemoryService } from './memory.service';
import { PostgresLongTermMemoryStore } from './postgres-long-term-memory.store';

/** DatabaseService (@agent/database) and LlmService (@agent/llm) come from their global modules. */
@Module({
  imports: [TypeOrmModule.forFeature(MEMORY_ENTITIES)],
  providers: [{ provide: LongTermMemoryStore, useClass: PostgresLongTermMemoryStore }, MemoryService],
  exports: [MemoryService],
})
export class MemoryModule {}
