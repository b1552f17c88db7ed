import { Injectable } from '@nestjs/common';
import { DatabaseService } from '@agent/database';
import { LongTermMemoryStore } from './long-term-memory.store';
import type {
  LongTermMemoryItem,
  MemoryFact,
  MemorySource,
  MemorySubject,
  SessionPurge,
  SubjectPurge,
} from './memory.types';

const ITEM_COLUMNS = `id::text AS memory_id, tenant_id, agent_id, subject_key, category, key, value, confidence,
  source_session_id, source_message_id, metadata, created_at, updated_at`;

/** Postgres adapter of the long-term memory store (table `long_term_memories`). */
@Injectable()
export class PostgresLongTermMemoryStore extends LongTermMemoryStore {
  constructor(private readonly db: DatabaseService) {
    super();
  }

  async search(
    subject: MemorySubject,
    options: { limit: number; minConfidence: number },
  ): Promise<LongTermMemoryItem[]> {
    return this.db.dataSource.query(
      `SELECT ${ITEM_COLUMNS} FROM long_term_memories
        WHERE tenant_id = $1 AND agent_id = $2 AND subject_key = $3 AND confidence >= $4
        ORDER BY confidence DESC, updated_at DESC, id DESC LIMIT $5`,
      [subject.tenant_id, subject.agent_id, subject.subject_key, options.minConfidence, options.limit],
    );
  }

  async upsert(subject: MemorySubject, facts: MemoryFact[], source: MemorySource): Promise<number> {
    // One statement may not update the same row twice: the last fact for a (category, key) wins.
    const unique = [...new Map(facts.map((fact) => [`${fact.category}\u0000${fact.key}`, fact])).values()];
    if (unique.length === 0) return 0;
    const values: unknown[] = [];
    const tuples = unique.map((fact) => {
      values.push(
        subject.tenant_id,
        subject.agent_id,
        subject.subject_key,
        fact.category,
        fact.key,
        fact.value,
        fact.confidence,
        source.session_id,
        source.message_id,
        JSON.stringify(source.metadata),
      );
      const base = values.length - 10;
      const slots = Array.from({ length: 10 }, (_, i) => `$${base + i + 1}`);
      slots[9] = `${slots[9]}::jsonb`;
      return `(${slots.join(', ')})`;
    });
    const written: { id: string }[] = await this.db.dataSource.query(
      `INSERT INTO long_term_memories
         (tenant_id, agent_id, subject_key, category, key, value, confidence, source_session_id, source_message_id, metadata)
       VALUES ${tuples.join(', ')}
       ON CONFLICT (tenant_id, agent_id, subject_key, category, key) DO UPDATE
         SET value = EXCLUDED.value, confidence = EXCLUDED.confidence,
             source_session_id = EXCLUDED.source_session_id, source_message_id = EXCLUDED.source_message_id,
             metadata = EXCLUDED.metadata, updated_at = clock_timestamp()
       RETURNING id`,
      values,
    );
    return written.length;
  }

  async purgeSubject(subject: SubjectPurge): Promise<number> {
    const result: [unknown[], number] = await this.db.dataSource.query(
      `DELETE FROM long_term_memories
        WHERE tenant_id = $1 AND subject_key = $2 AND ($3::text IS NULL OR agent_id = $3)`,
      [subject.tenant_id, subject.subject_key, subject.agent_id],
    );
    return result[1];
  }

  async purgeSession(session: SessionPurge): Promise<number> {
    const result: [unknown[], number] = await this.db.dataSource.query(
      `DELETE FROM long_term_memories WHERE tenant_id = $1 AND agent_id = $2 AND source_session_id = $3`,
      [session.tenant_id, session.agent_id, session.session_id],
    );
    return result[1];
  }
}
