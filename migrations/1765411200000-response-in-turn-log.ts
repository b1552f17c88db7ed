import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A processed message's response moves from its idempotency record into the turn log row of the same commit.
 * There pglz compresses it with the row (about 1.1 KB of JSON to 0.6 KB); alone in `processed_messages` it
 * stayed uncompressed, because Postgres only compresses a row above about 2 KB whatever `toast_tuple_target`
 * says. The record keeps the message id, the fingerprint and the turn log row's version. Only columns are added
 * and a constraint relaxed, so nothing is rewritten: records written before keep their `response` and still
 * replay from it until the retention sweep deletes them.
 */
export class ResponseInTurnLog1765411200000 implements MigrationInterface {
  name = 'ResponseInTurnLog1765411200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE turn_log ADD COLUMN response text`);
    await queryRunner.query(`ALTER TABLE turn_log ALTER COLUMN response SET STORAGE MAIN`);
    await queryRunner.query(`ALTER TABLE processed_messages ADD COLUMN version integer`);
    await queryRunner.query(`ALTER TABLE processed_messages ALTER COLUMN response DROP NOT NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `UPDATE processed_messages p SET response = t.response::jsonb FROM turn_log t
        WHERE p.response IS NULL AND t.conversation_key = p.conversation_key AND t.version = p.version`,
    );
    // A record whose turn log row is gone has nothing left to replay.
    await queryRunner.query(`DELETE FROM processed_messages WHERE response IS NULL`);
    await queryRunner.query(`ALTER TABLE processed_messages ALTER COLUMN response SET NOT NULL`);
    await queryRunner.query(`ALTER TABLE processed_messages DROP COLUMN version`);
    await queryRunner.query(`ALTER TABLE turn_log DROP COLUMN response`);
  }
}
