import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { MoreThanOrEqual, Repository } from 'typeorm';
import { memoryProvenanceSchema } from '@agent/contracts';
import { DatabaseService } from '@agent/database';
import { LongTermMemoryEntity } from './long-term-memory.entity';
import { LongTermMemoryStore } from './long-term-memory.store';
import type {
  LongTermMemoryItem,
  MemoryFact,
  MemorySource,
  MemorySubject,
  SessionPurge,
  SubjectPurge,
} from './memory.types';

/** Postgres adapter of the long-term memory store (table `long_term_memories`): a repository, one raw upsert. */
@Injectable()
export class PostgresLongTermMemoryStore extends LongTermMemoryStore {
  constructor(
    private readonly db: DatabaseService,
    @InjectRepository(LongTermMemoryEntity) private readonly memories: Repository<LongTermMemoryEntity>,
  ) {
    super();
  }

  async search(
    subject: MemorySubject,
    options: { limit: number; minConfidence: number },
  ): Promise<LongTermMemoryItem[]> {
    const rows = await this.memories.find({
      where: {
        tenant_id: subject.tenant_id,
        agent_id: subject.agent_id,
        subject_key: subject.subject_key,
        confidence: MoreThanOrEqual(options.minConfidence),
      },
      order: { confidence: 'DESC', updated_at: 'DESC', id: 'DESC' },
      take: options.limit,
    });
    // The jsonb column takes any JSON: what does not fit the provenance shape is not carried into a turn.
    return rows.map(({ id, metadata, ...item }) => ({
      memory_id: id,
      ...item,
      metadata: memoryProvenanceSchema.catch({}).parse(metadata),
    }));
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
    // Raw: a multi-row upsert in one statement that stamps updated_at with the statement's clock.
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
    const result = await this.memories.delete({
      tenant_id: subject.tenant_id,
      subject_key: subject.subject_key,
      ...(subject.agent_id === null ? {} : { agent_id: subject.agent_id }),
    });
    return result.affected ?? 0;
  }

  async purgeSession(session: SessionPurge): Promise<number> {
    const result = await this.memories.delete({
      tenant_id: session.tenant_id,
      agent_id: session.agent_id,
      source_session_id: session.session_id,
    });
    return result.affected ?? 0;
  }
}
