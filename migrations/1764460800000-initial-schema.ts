import { MigrationInterface, QueryRunner } from 'typeorm';

/** The tables of docs/architecture.md#data-model. */
export class InitialSchema1764460800000 implements MigrationInterface {
  name = 'InitialSchema1764460800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE sessions (
        conversation_key text PRIMARY KEY,
        tenant_id text NOT NULL,
        session_id text NOT NULL,
        agent_id text NOT NULL,
        user_id text,
        channel text,
        status text NOT NULL DEFAULT 'active',
        active_agent text,
        next_state text,
        last_route text,
        last_intent text,
        turn_count integer NOT NULL DEFAULT 0,
        head_version integer NOT NULL DEFAULT 0,
        lease_owner text,
        lease_expires_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT sessions_tenant_session_unique UNIQUE (tenant_id, session_id)
      )`);
    await queryRunner.query(
      `CREATE INDEX sessions_tenant_updated_idx ON sessions (tenant_id, updated_at DESC, conversation_key)`,
    );
    await queryRunner.query(`CREATE INDEX sessions_status_idx ON sessions (status)`);

    await queryRunner.query(`
      CREATE TABLE checkpoints (
        id bigserial PRIMARY KEY,
        conversation_key text NOT NULL,
        version integer NOT NULL,
        parent_version integer,
        state jsonb NOT NULL,
        checksum text NOT NULL,
        size_bytes integer NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT checkpoints_version_unique UNIQUE (conversation_key, version)
      )`);

    await queryRunner.query(`
      CREATE TABLE session_events (
        id bigserial PRIMARY KEY,
        conversation_key text NOT NULL,
        tenant_id text NOT NULL,
        session_id text NOT NULL,
        turn integer NOT NULL,
        seq integer NOT NULL,
        name text NOT NULL,
        payload jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(
      `CREATE INDEX session_events_conversation_idx ON session_events (conversation_key, turn, seq)`,
    );

    await queryRunner.query(`
      CREATE TABLE processed_messages (
        conversation_key text NOT NULL,
        message_id text NOT NULL,
        turn integer NOT NULL,
        response jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (conversation_key, message_id)
      )`);

    await queryRunner.query(`
      CREATE TABLE long_term_memories (
        id bigserial PRIMARY KEY,
        tenant_id text NOT NULL,
        agent_id text NOT NULL,
        subject_key text NOT NULL,
        category text NOT NULL,
        key text NOT NULL,
        value text NOT NULL,
        confidence real NOT NULL,
        source_session_id text,
        source_message_id text,
        metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT long_term_memories_item_unique UNIQUE (tenant_id, agent_id, subject_key, category, key)
      )`);
    await queryRunner.query(
      `CREATE INDEX long_term_memories_subject_idx ON long_term_memories (tenant_id, agent_id, subject_key, confidence DESC, updated_at DESC)`,
    );

    await queryRunner.query(`
      CREATE TABLE rag_documents (
        id bigserial PRIMARY KEY,
        namespace text NOT NULL,
        source text NOT NULL,
        title text NOT NULL,
        content_hash text NOT NULL,
        language text NOT NULL DEFAULT 'simple',
        metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT rag_documents_source_unique UNIQUE (namespace, source)
      )`);
    await queryRunner.query(`
      CREATE TABLE rag_chunks (
        id bigserial PRIMARY KEY,
        document_id bigint NOT NULL REFERENCES rag_documents (id) ON DELETE CASCADE,
        namespace text NOT NULL,
        chunk_index integer NOT NULL,
        content text NOT NULL,
        search_vector tsvector NOT NULL,
        metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
        CONSTRAINT rag_chunks_position_unique UNIQUE (document_id, chunk_index)
      )`);
    await queryRunner.query(`CREATE INDEX rag_chunks_search_idx ON rag_chunks USING gin (search_vector)`);
    await queryRunner.query(`CREATE INDEX rag_chunks_namespace_idx ON rag_chunks (namespace)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of [
      'rag_chunks',
      'rag_documents',
      'long_term_memories',
      'processed_messages',
      'session_events',
      'checkpoints',
      'sessions',
    ]) {
      await queryRunner.query(`DROP TABLE IF EXISTS ${table}`);
    }
  }
}
