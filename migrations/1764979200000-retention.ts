import { MigrationInterface, QueryRunner } from 'typeorm';

/** The retention sweeper deletes idempotency records by age, oldest first, through this index. */
export class Retention1764979200000 implements MigrationInterface {
  name = 'Retention1764979200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX IF NOT EXISTS processed_messages_created_idx ON processed_messages (created_at)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX IF EXISTS processed_messages_created_idx`);
  }
}
