export * from './memory.module';
export * from './memory.service';
export * from './memory.types';
export * from './long-term-memory.store';
export { PostgresLongTermMemoryStore } from './postgres-long-term-memory.store';
export {
  extractionMessages,
  InvalidExtractionError,
  MAX_FACTS_PER_TURN,
  renderMemoryContext,
  validateExtraction,
} from './memory-extraction';
