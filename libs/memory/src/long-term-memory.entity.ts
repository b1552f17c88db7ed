import { Column, Entity, Index, PrimaryGeneratedColumn, Unique } from 'typeorm';

/**
 * The table of MemoryModule as migrations/ creates it (the schema-drift test fails when they disagree). The DESC
 * of long_term_memories_subject_idx lives in the migration: TypeORM compares index columns, not their order.
 */
@Entity({ name: 'long_term_memories' })
@Unique('long_term_memories_item_unique', ['tenant_id', 'agent_id', 'subject_key', 'category', 'key'])
@Index('long_term_memories_subject_idx', ['tenant_id', 'agent_id', 'subject_key', 'confidence', 'updated_at'])
export class LongTermMemoryEntity {
  @PrimaryGeneratedColumn('increment', {
    type: 'bigint',
    primaryKeyConstraintName: 'long_term_memories_pkey',
  })
  id!: string;

  @Column({ type: 'text' })
  tenant_id!: string;

  @Column({ type: 'text' })
  agent_id!: string;

  @Column({ type: 'text' })
  subject_key!: string;

  @Column({ type: 'text' })
  category!: string;

  @Column({ type: 'text' })
  key!: string;

  @Column({ type: 'text' })
  value!: string;

  @Column({ type: 'real' })
  confidence!: number;

  @Column({ type: 'text', nullable: true })
  source_session_id!: string | null;

  @Column({ type: 'text', nullable: true })
  source_message_id!: string | null;

  @Column({ type: 'jsonb', default: {} })
  metadata!: Record<string, unknown>;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  created_at!: Date;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  updated_at!: Date;
}
export const MEMORY_ENTITIES = [LongTermMemoryEntity];
