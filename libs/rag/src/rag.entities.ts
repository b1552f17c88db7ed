import {
  Column,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  OneToOne,
  PrimaryColumn,
  PrimaryGeneratedColumn,
  Unique,
} from 'typeorm';

/*
 * The tables of RagModule as migrations/ creates them (the schema-drift test fails when they disagree). The GIN
 * method of rag_chunks_search_idx lives in the migration: TypeORM compares index columns, not their method.
 */

@Entity({ name: 'rag_documents' })
@Unique('rag_documents_source_unique', ['namespace', 'source'])
export class RagDocumentEntity {
  @PrimaryGeneratedColumn('increment', { type: 'bigint', primaryKeyConstraintName: 'rag_documents_pkey' })
  id!: string;

  @Column({ type: 'text' })
  namespace!: string;

  @Column({ type: 'text' })
  source!: string;

  @Column({ type: 'text' })
  title!: string;

  @Column({ type: 'text' })
  content_hash!: string;

  /** The text search configuration of the document's language. */
  @Column({ type: 'text', default: 'simple' })
  language!: string;

  /** Written, never read through the entity. */
  @Column({ type: 'jsonb', default: {} })
  metadata!: object;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  created_at!: Date;
}

@Entity({ name: 'rag_chunks' })
@Unique('rag_chunks_position_unique', ['document_id', 'chunk_index'])
@Index('rag_chunks_search_idx', ['search_vector'])
@Index('rag_chunks_namespace_idx', ['namespace'])
export class RagChunkEntity {
  @PrimaryGeneratedColumn('increment', { type: 'bigint', primaryKeyConstraintName: 'rag_chunks_pkey' })
  id!: string;

  @Column({ type: 'bigint' })
  document_id!: string;

  @ManyToOne(() => RagDocumentEntity, { onDelete: 'CASCADE', nullable: false })
  @JoinColumn({ name: 'document_id', foreignKeyConstraintName: 'rag_chunks_document_id_fkey' })
  document?: RagDocumentEntity;

  @Column({ type: 'text' })
  namespace!: string;

  @Column({ type: 'integer' })
  chunk_index!: number;

  @Column({ type: 'text' })
  content!: string;

  @Column({ type: 'tsvector', select: false })
  search_vector!: string;

  /** Written, never read through the entity. */
  @Column({ type: 'jsonb', default: {} })
  metadata!: object;
}

/** Only where pgvector is available (the RagEmbeddings migration is a no-op elsewhere). */
@Entity({ name: 'rag_chunk_embeddings' })
export class RagChunkEmbeddingEntity {
  @PrimaryColumn({ type: 'bigint', primaryKeyConstraintName: 'rag_chunk_embeddings_pkey' })
  chunk_id!: string;

  @OneToOne(() => RagChunkEntity, { onDelete: 'CASCADE', nullable: false })
  @JoinColumn({ name: 'chunk_id', foreignKeyConstraintName: 'rag_chunk_embeddings_chunk_id_fkey' })
  chunk?: RagChunkEntity;

  @Column({ type: 'text' })
  model!: string;

  /** No fixed dimension: the size comes from the embedding profile's model. */
  @Column({ type: 'vector', select: false })
  embedding!: string;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  created_at!: Date;
}

export const RAG_ENTITIES = [RagDocumentEntity, RagChunkEntity, RagChunkEmbeddingEntity];
