export * from './memory.module';
export * from './memory.service';
export * from './memory.types';
export * from './memory.errors';
export * from './long-term-memory.store';
export { PostgresLongTermMemoryStore } from './postgres-long-term-memory.store';
export {
  extractionMessages,
  MAX_FACTS_PER_TURN,
  memoryFactsOutput,
  renderMemoryContext,
  validateExtraction,
} from './memory-extraction';
export * from './long-term-memory.entity';
