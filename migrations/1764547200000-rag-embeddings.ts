import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Vector search for RAG, only where pgvector is available: a Postgres without the extension keeps full-text
 * search alone, so this migration is a no-op there. The column has no fixed dimension: the size comes from
 * the `embedding` LLM profile, and retrieval compares only vectors of the query's model and size.
 */
export class RagEmbeddings1764547200000 implements MigrationInterface {
  name = 'RagEmbeddings1764547200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const available = (await queryRunner.query(
      `SELECT 1 FROM pg_available_extensions WHERE name = 'vector'`,
    )) as unknown[];
    if (available.length === 0) return;
    // A role that may not create extensions keeps full-text search instead of failing the deployment.
    await queryRunner.query(`
      DO $$ BEGIN
        CREATE EXTENSION IF NOT EXISTS vector;
      EXCEPTION WHEN insufficient_privilege THEN
        RAISE NOTICE 'pgvector not installed (insufficient privilege): RAG keeps full-text search';
      END $$`);
    const installed = (await queryRunner.query(
      `SELECT 1 FROM pg_extension WHERE extname = 'vector'`,
    )) as unknown[];
    if (installed.length === 0) return;
    await queryRunner.query(`
      CREATE TABLE IF NOT EXISTS rag_chunk_embeddings (
        chunk_id bigint PRIMARY KEY REFERENCES rag_chunks (id) ON DELETE CASCADE,
        model text NOT NULL,
        embedding vector NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // The extension stays: other objects of the database may use it.
    await queryRunner.query(`DROP TABLE IF EXISTS rag_chunk_embeddings`);
  }
}
