import { DataSource, EntityManager, In, Not } from 'typeorm';
import type { RetrievedChunk } from '@agent/contracts';
import { runOn, statement } from '@agent/database';
import { RagChunkEntity, RagDocumentEntity } from './rag.entities';

export interface ChunkInput {
  index: number;
  content: string;
  metadata: Record<string, unknown>;
}

export interface DocumentInput {
  namespace: string;
  source: string;
  title: string;
  contentHash: string;
  language: string;
  metadata: Record<string, unknown>;
  chunks: ChunkInput[];
}

/** A chunk to embed: the title goes with the content, as in the full-text index. */
export interface ChunkToEmbed {
  chunk_id: string;
  title: string;
  content: string;
}

type ChunkRow = {
  chunk_id: string;
  document_id: string;
  source: string;
  title: string;
  chunk_index: number;
  content: string;
  score: number;
};

/** The store's SQL: full-text and pgvector operators, catalog reads and multi-row writes the repositories lack. */
const VECTOR_TABLE = statement<[], { present: boolean }>(
  'rag_vector_table',
  `SELECT to_regclass('rag_chunk_embeddings') IS NOT NULL AS present`,
);

/** An anti-join over three tables, one page of chunks. */
const CHUNKS_TO_EMBED = statement<[namespace: string, model: string, limit: number], ChunkToEmbed>(
  'rag_chunks_to_embed',
  `SELECT c.id AS chunk_id, d.title, c.content
     FROM rag_chunks c
     JOIN rag_documents d ON d.id = c.document_id
     LEFT JOIN rag_chunk_embeddings e ON e.chunk_id = c.id
    WHERE c.namespace = $1 AND (e.chunk_id IS NULL OR e.model <> $2)
    ORDER BY c.id
    LIMIT $3`,
);

/**
 * pgvector values cast from their text form, upserted together. A chunk deleted by a concurrent re-ingestion is
 * skipped (the join), not a foreign-key failure.
 */
const STORE_EMBEDDINGS = statement<[model: string, chunkIds: string[], vectors: string[]]>(
  'rag_store_embeddings',
  `INSERT INTO rag_chunk_embeddings (chunk_id, model, embedding)
   SELECT v.chunk_id, $1, v.embedding::vector
     FROM unnest($2::bigint[], $3::text[]) AS v (chunk_id, embedding)
     JOIN rag_chunks c ON c.id = v.chunk_id
   ON CONFLICT (chunk_id) DO UPDATE SET model = EXCLUDED.model, embedding = EXCLUDED.embedding,
                                        created_at = now()`,
);

/** Two counts in one aggregate. */
const EMBEDDED_COUNTS = statement<[namespace: string, model: string], { chunks: number; embedded: number }>(
  'rag_embedded_counts',
  `SELECT count(*)::int AS chunks, count(e.chunk_id)::int AS embedded
     FROM rag_chunks c
     LEFT JOIN rag_chunk_embeddings e ON e.chunk_id = c.id AND e.model = $2
    WHERE c.namespace = $1`,
);

/** pgvector's distance operator, on the turn path. */
const VECTOR_SEARCH = statement<
  [namespace: string, vector: string, model: string, dimensions: number, topK: number],
  ChunkRow
>(
  'rag_vector_search',
  `SELECT c.id AS chunk_id, d.id AS document_id, d.source, d.title, c.chunk_index, c.content,
          (1 - (e.embedding <=> $2::vector))::float8 AS score
     FROM rag_chunk_embeddings e
     JOIN rag_chunks c ON c.id = e.chunk_id
     JOIN rag_documents d ON d.id = c.document_id
    WHERE c.namespace = $1 AND e.model = $3 AND vector_dims(e.embedding) = $4
    ORDER BY e.embedding <=> $2::vector, c.id
    LIMIT $5`,
);

/** A system catalog, not a table of ours. */
const LANGUAGE_EXISTS = statement<[language: string], { present: number }>(
  'rag_language_exists',
  'SELECT 1 AS present FROM pg_ts_config WHERE cfgname = $1',
);

/** Full-text parsing and ranking per language, on the turn path. */
const SEARCH = statement<[namespace: string, query: string, topK: number], ChunkRow>(
  'rag_search',
  `WITH queries AS (
     SELECT language,
            replace(plainto_tsquery(language::regconfig, $2)::text, ' & ', ' | ')::tsquery AS q
       FROM (SELECT DISTINCT language FROM rag_documents WHERE namespace = $1) AS languages
   )
   SELECT c.id AS chunk_id, d.id AS document_id, d.source, d.title, c.chunk_index, c.content,
          ts_rank_cd(c.search_vector, queries.q, 1)::float8 AS score
     FROM rag_chunks c
     JOIN rag_documents d ON d.id = c.document_id
     JOIN queries ON queries.language = d.language
    WHERE c.namespace = $1 AND c.search_vector @@ queries.q
    ORDER BY score DESC, c.id
    LIMIT $3`,
);

/**
 * A document's chunks, with search_vector computed by to_tsvector in the INSERT. The title is indexed with every
 * chunk at a higher weight: it names what the chunk is about.
 */
const INSERT_CHUNKS = statement<
  [
    documentId: string,
    namespace: string,
    language: string,
    title: string,
    indexes: number[],
    contents: string[],
    metadata: string[],
  ]
>(
  'rag_insert_chunks',
  `INSERT INTO rag_chunks (document_id, namespace, chunk_index, content, search_vector, metadata)
   SELECT $1, $2, c.chunk_index, c.content,
          setweight(to_tsvector($3::regconfig, $4), 'A') || setweight(to_tsvector($3::regconfig, c.content), 'B'),
          c.metadata::jsonb
     FROM unnest($5::integer[], $6::text[], $7::text[]) AS c (chunk_index, content, metadata)`,
);

/**
 * rag_documents / rag_chunks with Postgres full-text search, and rag_chunk_embeddings (pgvector) where the
 * migration could create it. Each document keeps its text search
 * configuration (`language`); a chunk's search_vector is built with it, and a query is parsed once per
 * configuration present in the namespace, so Portuguese and English documents each get their own stemming.
 */
export class RagStore {
  private vectorTable: Promise<boolean> | null = null;

  constructor(private readonly dataSource: DataSource) {}

  /** Whether rag_chunk_embeddings exists (it does only where pgvector is installed); asked once. */
  async vectorAvailable(): Promise<boolean> {
    this.vectorTable ??= runOn(this.dataSource, VECTOR_TABLE, []).then((rows) => rows[0]?.present === true);
    try {
      return await this.vectorTable;
    } catch (error) {
      // A transient failure is not an answer: ask again next time.
      this.vectorTable = null;
      throw error;
    }
  }

  /** Chunks of a namespace without an embedding of `model` (new, re-chunked, or embedded with another model). */
  async chunksToEmbed(namespace: string, model: string, limit: number): Promise<ChunkToEmbed[]> {
    return runOn(this.dataSource, CHUNKS_TO_EMBED, [namespace, model, limit]);
  }

  async storeEmbeddings(model: string, rows: { chunkId: string; vector: number[] }[]): Promise<void> {
    if (rows.length === 0) return;
    await runOn(this.dataSource, STORE_EMBEDDINGS, [
      model,
      rows.map((row) => row.chunkId),
      rows.map((row) => toVectorLiteral(row.vector)),
    ]);
  }

  /**
   * Whether every chunk of a namespace has a vector of `model`: only then may vector search rank it, since a
   * chunk without one (ingested without the profile, or whose embedding failed) would never be found.
   */
  async fullyEmbedded(namespace: string, model: string): Promise<boolean> {
    const rows = await runOn(this.dataSource, EMBEDDED_COUNTS, [namespace, model]);
    return rows[0].chunks > 0 && rows[0].embedded === rows[0].chunks;
  }

  /** Top-k chunks by cosine similarity (1 - cosine distance) among those embedded with the query's model and size. */
  async vectorSearch(
    namespace: string,
    vector: number[],
    model: string,
    topK: number,
  ): Promise<RetrievedChunk[]> {
    const rows = await runOn(this.dataSource, VECTOR_SEARCH, [
      namespace,
      toVectorLiteral(vector),
      model,
      vector.length,
      topK,
    ]);
    return rows.map(toRetrievedChunk);
  }

  async languageExists(language: string): Promise<boolean> {
    const rows = await runOn(this.dataSource, LANGUAGE_EXISTS, [language]);
    return rows.length > 0;
  }

  /**
   * Inserts or replaces a document and its chunks in one transaction. Returns false when the stored document
   * already has this content and language (nothing written).
   */
  async upsertDocument(input: DocumentInput): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => {
      const documents = manager.getRepository(RagDocumentEntity);
      const fields = {
        title: input.title,
        content_hash: input.contentHash,
        language: input.language,
        metadata: input.metadata,
      };
      await documents
        .createQueryBuilder()
        .insert()
        .values({ namespace: input.namespace, source: input.source, ...fields, content_hash: '' })
        .orIgnore()
        .execute();
      // The row lock serializes replicas ingesting the same document at start-up.
      const current = await documents.findOneOrFail({
        where: { namespace: input.namespace, source: input.source },
        lock: { mode: 'pessimistic_write' },
      });
      if (current.content_hash === input.contentHash && current.language === input.language) return false;
      await documents.update(current.id, { ...fields, created_at: () => 'now()' });
      await manager.getRepository(RagChunkEntity).delete({ document_id: current.id });
      await this.insertChunks(manager, current.id, input);
      return true;
    });
  }

  /** Removes the documents of a namespace whose source is not in `keep` (files deleted from the directory). */
  async pruneNamespace(namespace: string, keep: string[]): Promise<number> {
    const result = await this.dataSource
      .getRepository(RagDocumentEntity)
      .delete(keep.length > 0 ? { namespace, source: Not(In(keep)) } : { namespace });
    return result.affected ?? 0;
  }

  /**
   * Top-k chunks of a namespace for a question. The query's words are OR-ed (a question rarely repeats every
   * word of the passage that answers it) and ranked with ts_rank_cd, normalized by document length.
   */
  async search(namespace: string, query: string, topK: number): Promise<RetrievedChunk[]> {
    const rows = await runOn(this.dataSource, SEARCH, [namespace, query, topK]);
    return rows.map(toRetrievedChunk);
  }

  private async insertChunks(
    manager: EntityManager,
    documentId: string,
    input: DocumentInput,
  ): Promise<void> {
    await runOn(manager, INSERT_CHUNKS, [
      documentId,
      input.namespace,
      input.language,
      input.title,
      input.chunks.map((chunk) => chunk.index),
      input.chunks.map((chunk) => chunk.content),
      input.chunks.map((chunk) => JSON.stringify(chunk.metadata)),
    ]);
  }
}

function toRetrievedChunk(row: ChunkRow): RetrievedChunk {
  return {
    chunk_id: Number(row.chunk_id),
    document_id: Number(row.document_id),
    source: row.source,
    title: row.title,
    chunk_index: row.chunk_index,
    content: row.content,
    score: Math.round(Number(row.score) * 10000) / 10000,
  };
}

/** pgvector's text input ('[1,2,3]'): bound as a parameter and cast, so no driver type is needed. */
function toVectorLiteral(vector: number[]): string {
  return `[${vector.join(',')}]`;
}
