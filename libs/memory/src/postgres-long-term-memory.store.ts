import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { MoreThanOrEqual, Repository } from 'typeorm';
import { memoryProvenanceSchema } from '@agent/contracts';
import { DatabaseService, statement } from '@agent/database';
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

/**
 * The facts of one subject from one source, upserted in one statement that stamps updated_at with the statement's
 * clock; the facts go as parallel arrays, so the statement's text is the same for any number of them.
 */
const UPSERT = statement<
  [
    tenantId: string,
    agentId: string,
    subjectKey: string,
    categories: string[],
    keys: string[],
    values: string[],
    confidences: number[],
    sourceSessionId: string | null,
    sourceMessageId: string | null,
    metadata: string,
  ],
  { id: string }
>(
  'long_term_memory_upsert',
  `INSERT INTO long_term_memories
     (tenant_id, agent_id, subject_key, category, key, value, confidence, source_session_id, source_message_id, metadata)
   SELECT $1::text, $2::text, $3::text, f.category, f.key, f.value, f.confidence, $8::text, $9::text, $10::jsonb
     FROM unnest($4::text[], $5::text[], $6::text[], $7::real[]) AS f(category, key, value, confidence)
   ON CONFLICT (tenant_id, agent_id, subject_key, category, key) DO UPDATE
     SET value = EXCLUDED.value, confidence = EXCLUDED.confidence,
         source_session_id = EXCLUDED.source_session_id, source_message_id = EXCLUDED.source_message_id,
         metadata = EXCLUDED.metadata, updated_at = clock_timestamp()
   RETURNING id::text AS id`,
);

/** Postgres adapter of the long-term memory store (table `long_term_memories`): a repository, one upsert statement. */
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
    const written = await this.db.run(UPSERT, [
      subject.tenant_id,
      subject.agent_id,
      subject.subject_key,
      unique.map((fact) => fact.category),
      unique.map((fact) => fact.key),
      unique.map((fact) => fact.value),
      unique.map((fact) => fact.confidence),
      source.session_id,
      source.message_id,
      JSON.stringify(source.metadata),
    ]);
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
