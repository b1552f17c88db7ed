import { MigrationInterface, QueryRunner } from 'typeorm';

/** The view over the turn log, one row per event of the JSON array `events` (an expression over `t`). */
const SESSION_EVENTS_VIEW = (events: string) => `
  CREATE VIEW session_events AS
  SELECT t.version::bigint * 65536 + e.seq AS id, t.conversation_key, t.tenant_id,
         substr(t.conversation_key, length(t.tenant_id) + 2) AS session_id, t.turn, e.seq::integer AS seq,
         e.event->>'name' AS name, e.event->'payload' AS payload, t.created_at
    FROM turn_log t CROSS JOIN LATERAL jsonb_array_elements(${events}) WITH ORDINALITY AS e(event, seq)`;

/**
 * The envelope every event payload carries (tenant_id, agent_id, session_id, conversation_key, turn) is the same
 * for all the events of a turn log row and is in the row's own columns, so a commit stores the payloads without it
 * (a third of the document's text, about 0.4 KB per turn compressed). `turn_log_events` puts it back for every
 * reader that hands payloads out: the session_events view (admin API, handoff desk) and the event relay. Rows
 * written before keep their envelope; the row's values are the same, so merging changes nothing for them.
 */
export class TurnLogEnvelope1765497600000 implements MigrationInterface {
  name = 'TurnLogEnvelope1765497600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE FUNCTION turn_log_events(events text, tenant_id text, agent_id text, conversation_key text, turn integer)
      RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT COALESCE(jsonb_agg(jsonb_build_object(
                 'name', e.event->'name',
                 'payload', jsonb_build_object(
                   'tenant_id', tenant_id, 'agent_id', agent_id,
                   'session_id', substr(conversation_key, length(tenant_id) + 2),
                   'conversation_key', conversation_key, 'turn', turn) || (e.event->'payload'))
                 ORDER BY e.seq), '[]'::jsonb)
          FROM jsonb_array_elements(events::jsonb) WITH ORDINALITY AS e(event, seq)
      $$`);
    await queryRunner.query(`DROP VIEW session_events`);
    await queryRunner.query(
      SESSION_EVENTS_VIEW('turn_log_events(t.events, t.tenant_id, t.agent_id, t.conversation_key, t.turn)'),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // Earlier releases read the payloads as stored: give every row its envelope back first.
    await queryRunner.query(
      `UPDATE turn_log SET events = turn_log_events(events, tenant_id, agent_id, conversation_key, turn)::text`,
    );
    await queryRunner.query(`DROP VIEW session_events`);
    await queryRunner.query(SESSION_EVENTS_VIEW('t.events::jsonb'));
    await queryRunner.query(`DROP FUNCTION turn_log_events(text, text, text, text, integer)`);
  }
}
