import { MigrationInterface, QueryRunner } from 'typeorm';

/** The session_events view as the TurnLogEnvelope migration defines it, and the turn log columns it adds. */
const SESSION_EVENTS_VIEW = (turnColumns: string) => `
  CREATE VIEW session_events AS
  SELECT t.version::bigint * 65536 + e.seq AS id, t.conversation_key, t.tenant_id,
         substr(t.conversation_key, length(t.tenant_id) + 2) AS session_id, t.turn, e.seq::integer AS seq,
         e.event->>'name' AS name, e.event->'payload' AS payload, t.created_at${turnColumns}
    FROM turn_log t CROSS JOIN LATERAL jsonb_array_elements(
           turn_log_events(t.events, t.tenant_id, t.agent_id, t.conversation_key, t.turn)) WITH ORDINALITY AS e(event, seq)`;

/**
 * Time to the first released answer text of a streamed turn, in ms from the turn's start (as the row's
 * `latency_ms`); null for a turn that was not streamed or released no text before it completed. A column, not
 * only AGENT_COMPLETED's `first_text_ms`, so the session_events view serves it with each turn's events.
 */
export class FirstTextInTurnLog1765929600000 implements MigrationInterface {
  name = 'FirstTextInTurnLog1765929600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE turn_log ADD COLUMN first_text_ms integer`);
    await queryRunner.query(`DROP VIEW session_events`);
    await queryRunner.query(SESSION_EVENTS_VIEW(', t.first_text_ms'));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP VIEW session_events`);
    await queryRunner.query(SESSION_EVENTS_VIEW(''));
    await queryRunner.query(`ALTER TABLE turn_log DROP COLUMN first_text_ms`);
  }
}
