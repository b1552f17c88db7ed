import { DataSource, EntityManager } from 'typeorm';

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

/** A type (not an interface) so it is assignable to the state's JSON records. */
export type RetrievedChunk = {
  chunk_id: number;
  document_id: number;
  source: string;
  title: string;
  chunk_index: number;
  content: string;
  score: number;
};

/**
 * rag_documents / rag_chunks with Postgres full-text search. Each document keeps its text search
 * configuration (`language`); a chunk's search_vector is built with it, and a query is parsed once per
 * configuration present in the namespace, so Portuguese and English documents each get their own stemming.
 */
export class RagStore {
  constructor(private readonly dataSource: DataSource) {}

  async languageExists(language: string): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query('SELECT 1 FROM pg_ts_config WHERE cfgname = $1', [
      language,
    ]);
    return rows.length > 0;
  }

  /**
   * Inserts or replaces a document and its chunks in one transaction. Returns false when the stored document
   * already has this content and language (nothing written).
   */
  async upsertDocument(input: DocumentInput): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query(
        `INSERT INTO rag_documents (namespace, source, title, content_hash, language, metadata)
         VALUES ($1, $2, $3, '', $4, $5::jsonb) ON CONFLICT (namespace, source) DO NOTHING`,
        [input.namespace, input.source, input.title, input.language, JSON.stringify(input.metadata)],
      );
      // The row lock serializes replicas ingesting the same document at start-up.
      const rows: { id: string; content_hash: string; language: string }[] = await manager.query(
        'SELECT id, content_hash, language FROM rag_documents WHERE namespace = $1 AND source = $2 FOR UPDATE',
        [input.namespace, input.source],
      );
      const current = rows[0];
      if (current.content_hash === input.contentHash && current.language === input.language) return false;
      await manager.query(
        `UPDATE rag_documents SET title = $2, content_hash = $3, language = $4, metadata = $5::jsonb, created_at = now()
          WHERE id = $1`,
        [current.id, input.title, input.contentHash, input.language, JSON.stringify(input.metadata)],
      );
      await manager.query('DELETE FROM rag_chunks WHERE document_id = $1', [current.id]);
      await this.insertChunks(manager, current.id, input);
      return true;
    });
  }

  /** Removes the documents of a namespace whose source is not in `keep` (files deleted from the directory). */
  async pruneNamespace(namespace: string, keep: string[]): Promise<number> {
    const rows: { removed: number }[] = await this.dataSource.query(
      `WITH removed AS (
         DELETE FROM rag_documents WHERE namespace = $1 AND NOT (source = ANY($2::text[])) RETURNING id
       )
       SELECT count(*)::int AS removed FROM removed`,
      [namespace, keep],
    );
    return rows[0]?.removed ?? 0;
  }

  /**
   * Top-k chunks of a namespace for a question. The query's words are OR-ed (a question rarely repeats every
   * word of the passage that answers it) and ranked with ts_rank_cd, normalized by document length.
   */
  async search(namespace: string, query: string, topK: number): Promise<RetrievedChunk[]> {
    const rows: {
      chunk_id: string;
      document_id: string;
      source: string;
      title: string;
      chunk_index: number;
      content: string;
      score: number;
    }[] = await this.dataSource.query(
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
      [namespace, query, topK],
    );
    return rows.map((row) => ({
      chunk_id: Number(row.chunk_id),
      document_id: Number(row.document_id),
      source: row.source,
      title: row.title,
      chunk_index: row.chunk_index,
      content: row.content,
      score: Math.round(Number(row.score) * 10000) / 10000,
    }));
  }

  private async insertChunks(
    manager: EntityManager,
    documentId: string,
    input: DocumentInput,
  ): Promise<void> {
    // Batches keep each statement well under the bind-parameter limit.
    const batchSize = 200;
    for (let offset = 0; offset < input.chunks.length; offset += batchSize) {
      const batch = input.chunks.slice(offset, offset + batchSize);
      const values: unknown[] = [documentId, input.namespace, input.language, input.title];
      // The title is indexed with every chunk at a higher weight: it names what the chunk is about.
      const tuples = batch.map((chunk, i) => {
        values.push(chunk.index, chunk.content, JSON.stringify(chunk.metadata));
        const base = 5 + i * 3;
        return (
          `($1, $2, $${base}, $${base + 1}, setweight(to_tsvector($3::regconfig, $4), 'A') || ` +
          `setweight(to_tsvector($3::regconfig, $${base + 1}), 'B'), $${base + 2}::jsonb)`
        );
      });
      await manager.query(
        `INSERT INTO rag_chunks (document_id, namespace, chunk_index, content, search_vector, metadata)
         VALUES ${tuples.join(', ')}`,
        values,
      );
    }
  }
}
