import type {
  LongTermMemoryItem,
  MemoryFact,
  MemorySource,
  MemorySubject,
  SessionPurge,
  SubjectPurge,
} from './memory.types';

/** Port of the long-term memory store. */
export abstract class LongTermMemoryStore {
  /** The subject's items with confidence >= minConfidence, by confidence then recency, at most `limit`. */
  abstract search(
    subject: MemorySubject,
    options: { limit: number; minConfidence: number },
  ): Promise<LongTermMemoryItem[]>;
  /**
   * Inserts or replaces facts by (tenant, agent, subject, category, key): a replaced item keeps its id and
   * created_at and takes the new value, confidence, source and updated_at. Returns how many were written.
   */
  abstract upsert(subject: MemorySubject, facts: MemoryFact[], source: MemorySource): Promise<number>;
  /** Deletes the subject's items in the tenant, of one agent or (agent_id null) of every agent; returns how many. */
  abstract purgeSubject(subject: SubjectPurge): Promise<number>;
  /** Deletes the items a session produced (their latest source is that session); returns how many went. */
  abstract purgeSession(session: SessionPurge): Promise<number>;
}
