import type { MemoryProvenance } from '@agent/contracts';

/** Whose memory: the business identity inside one tenant and agent (never a session). */
export interface MemorySubject {
  tenant_id: string;
  agent_id: string;
  subject_key: string;
}

/** A privacy purge of a subject in a tenant: one agent's memory, or every agent's when agent_id is null. */
export interface SubjectPurge {
  tenant_id: string;
  agent_id: string | null;
  subject_key: string;
}

/** The memory one conversation contributed. */
export interface SessionPurge {
  tenant_id: string;
  agent_id: string;
  session_id: string;
}

/** One durable fact, normalized: category and key lower-case snake_case, value on one line. */
export interface MemoryFact {
  category: string;
  key: string;
  value: string;
  confidence: number;
}

export interface MemorySource {
  session_id: string | null;
  message_id: string | null;
  metadata: MemoryProvenance;
}

/** A stored item (table `long_term_memories`); unique on (tenant, agent, subject, category, key). */
export interface LongTermMemoryItem extends MemorySubject, MemoryFact {
  memory_id: string;
  source_session_id: string | null;
  source_message_id: string | null;
  metadata: MemoryProvenance;
  created_at: Date;
  updated_at: Date;
}
