import { MigrationInterface, QueryRunner } from 'typeorm';

const SESSION_EVENTS_VIEW = (events: string) => `
  CREATE VIEW session_events AS
  SELECT t.version::bigint * 65536 + e.seq AS id, t.conversation_key, t.tenant_id,
         substr(t.conversation_key, length(t.tenant_id) + 2) AS session_id, t.turn, e.seq::integer AS seq,
         e.event->>'name' AS name, e.event->'payload' AS payload, t.created_at
    FROM turn_log t CROSS JOIN LATERAL jsonb_array_elements(${events}) WITH ORDINALITY AS e(event, seq)`;

/** The rows each turn writes, and their variable-length columns. */
const DOCUMENTS: [table: string, columns: string[]][] = [
  ['turn_log', ['conversation_key', 'tenant_id', 'agent_id', 'summary', 'nodes', 'events']],
  ['checkpoints', ['conversation_key', 'state', 'checksum']],
  ['processed_messages', ['conversation_key', 'message_id', 'response', 'fingerprint']],
];

/**
 * Fewer bytes per turn, written and kept. The turn log's event document is stored as the JSON text the service
 * writes: pglz compresses text about 40% smaller than the same document as jsonb (its binary form repeats the
 * keys' offsets), and nothing filters inside it on the turn path (readers cast it). Every per-turn document is
 * compressed inline (storage MAIN, a 128-byte toast target): a compressed turn is a few KB, so moving it to the
 * TOAST table only added a second heap tuple and an index entry per chunk to the WAL and the disk. The short
 * columns are MAIN too: the toaster moves EXTENDED values out of line before it compresses MAIN ones, so a key or
 * a checksum would otherwise go to the TOAST table on its own. pglz stays:
 * lz4 is faster but left these documents about a quarter larger.
 */
export class CompactTurnStorage1765324800000 implements MigrationInterface {
  name = 'CompactTurnStorage1765324800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP VIEW session_events`);
    await queryRunner.query(`ALTER TABLE turn_log ALTER COLUMN events TYPE text USING events::text`);
    await queryRunner.query(SESSION_EVENTS_VIEW('t.events::jsonb'));
    for (const [table, columns] of DOCUMENTS) {
      for (const column of columns) {
        await queryRunner.query(`ALTER TABLE ${table} ALTER COLUMN ${column} SET STORAGE MAIN`);
      }
      await queryRunner.query(`ALTER TABLE ${table} SET (toast_tuple_target = 128)`);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const [table, columns] of DOCUMENTS) {
      await queryRunner.query(`ALTER TABLE ${table} RESET (toast_tuple_target)`);
      for (const column of columns) {
        await queryRunner.query(`ALTER TABLE ${table} ALTER COLUMN ${column} SET STORAGE EXTENDED`);
      }
    }
    await queryRunner.query(`DROP VIEW session_events`);
    await queryRunner.query(`ALTER TABLE turn_log ALTER COLUMN events TYPE jsonb USING events::jsonb`);
    await queryRunner.query(SESSION_EVENTS_VIEW('t.events'));
  }
}
