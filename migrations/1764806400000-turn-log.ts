import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One append-only row per commit (a turn or an operator action) instead of one row per event: the turn's events
 * become one JSON document beside its decision summary and node timings. `session_events` stays as a read-only
 * view over it, so SQL written against the old table keeps working. Existing event rows move over: each commit's
 * rows (same conversation, turn and transaction time) become one row, numbered in commit order, which never
 * exceeds the head version the conversation has reached.
 */
export class TurnLog1764806400000 implements MigrationInterface {
  name = 'TurnLog1764806400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE turn_log (
        conversation_key text NOT NULL,
        version integer NOT NULL,
        turn integer NOT NULL,
        tenant_id text NOT NULL,
        agent_id text NOT NULL,
        summary jsonb,
        nodes jsonb NOT NULL DEFAULT '[]'::jsonb,
        events jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (conversation_key, version)
      )`);
    await queryRunner.query(`CREATE INDEX turn_log_created_idx ON turn_log (created_at)`);
    await queryRunner.query(`
      INSERT INTO turn_log (conversation_key, version, turn, tenant_id, agent_id, events, created_at)
      SELECT conversation_key,
             row_number() OVER (PARTITION BY conversation_key ORDER BY first_id)::integer,
             turn, tenant_id, agent_id, events, created_at
        FROM (SELECT e.conversation_key, e.turn, e.created_at, min(e.id) AS first_id, min(e.tenant_id) AS tenant_id,
                     COALESCE(min(s.agent_id), '') AS agent_id,
                     jsonb_agg(jsonb_build_object('name', e.name, 'payload', e.payload) ORDER BY e.seq) AS events
                FROM session_events e LEFT JOIN sessions s ON s.conversation_key = e.conversation_key
               GROUP BY e.conversation_key, e.turn, e.created_at) commits`);
    await queryRunner.query(`DROP TABLE session_events`);
    await queryRunner.query(`
      CREATE VIEW session_events AS
      SELECT t.version::bigint * 65536 + e.seq AS id, t.conversation_key, t.tenant_id,
             substr(t.conversation_key, length(t.tenant_id) + 2) AS session_id, t.turn, e.seq::integer AS seq,
             e.event->>'name' AS name, e.event->'payload' AS payload, t.created_at
        FROM turn_log t CROSS JOIN LATERAL jsonb_array_elements(t.events) WITH ORDINALITY AS e(event, seq)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER VIEW session_events RENAME TO session_events_view`);
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
      INSERT INTO session_events (conversation_key, tenant_id, session_id, turn, seq, name, payload, created_at)
      SELECT conversation_key, tenant_id, session_id, turn, seq, name, payload, created_at
        FROM session_events_view ORDER BY created_at, conversation_key, id`);
    await queryRunner.query(`DROP VIEW session_events_view`);
    await queryRunner.query(`DROP TABLE turn_log`);
  }
}
