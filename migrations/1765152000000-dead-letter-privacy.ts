import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Dead letters carry event payloads (what customers wrote, their ids), so they go with their conversation when
 * it is purged and age out with the turn log. The conversation key is the event id without its `:<version>:<seq>`
 * tail; the created_at index serves the retention sweep.
 */
export class DeadLetterPrivacy1765152000000 implements MigrationInterface {
  name = 'DeadLetterPrivacy1765152000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE event_dead_letters ADD COLUMN conversation_key text`);
    await queryRunner.query(
      `UPDATE event_dead_letters SET conversation_key = regexp_replace(event_id, ':[0-9]+:[0-9]+$', '')`,
    );
    await queryRunner.query(`ALTER TABLE event_dead_letters ALTER COLUMN conversation_key SET NOT NULL`);
    await queryRunner.query(
      `CREATE INDEX event_dead_letters_conversation_idx ON event_dead_letters (conversation_key)`,
    );
    await queryRunner.query(`CREATE INDEX event_dead_letters_created_idx ON event_dead_letters (created_at)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX event_dead_letters_created_idx`);
    await queryRunner.query(`DROP INDEX event_dead_letters_conversation_idx`);
    await queryRunner.query(`ALTER TABLE event_dead_letters DROP COLUMN conversation_key`);
  }
}
