import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The checkpoint state is stored as the exact JSON text its checksum covers (format 2), so a load verifies the
 * hash of the stored bytes instead of re-canonicalizing the state; rows written before keep format 1 (a checksum
 * over the canonical JSON of the parsed state) and are verified the old way. The idempotency record keeps a
 * fingerprint of the request body, so a reused message_id with another body is refused instead of replayed.
 */
export class SingleCommitTurn1764892800000 implements MigrationInterface {
  name = 'SingleCommitTurn1764892800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE checkpoints ALTER COLUMN state TYPE text USING state::text`);
    await queryRunner.query(`ALTER TABLE checkpoints ADD COLUMN format smallint NOT NULL DEFAULT 1`);
    await queryRunner.query(`ALTER TABLE checkpoints ALTER COLUMN format DROP DEFAULT`);
    await queryRunner.query(`ALTER TABLE processed_messages ADD COLUMN fingerprint text`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE processed_messages DROP COLUMN fingerprint`);
    // Format-2 rows fail the older release's integrity check (it then restores an older version or starts
    // clean); the NUL escapes jsonb rejects are replaced so the column converts.
    await queryRunner.query(
      `ALTER TABLE checkpoints ALTER COLUMN state TYPE jsonb USING replace(state, '\\u0000', '\\ufffd')::jsonb`,
    );
    await queryRunner.query(`ALTER TABLE checkpoints DROP COLUMN format`);
  }
}
