import type { MemoryWriteResult } from '@agent/contracts';

/* The long-term memory nodes' events (docs/api.md#events), declared by the module that emits them. */
declare module '@agent/contracts' {
  interface EventPayloads {
    'long_term_memory.load.failed': { error: string };
    'long_term_memory.persist.completed': { saved: number };
    'long_term_memory.persist.failed': { error: string };
    /** A fact the memory rails blocked: not stored. */
    'long_term_memory.fact.rejected': NonNullable<MemoryWriteResult['rejected']>[number];
  }
}
