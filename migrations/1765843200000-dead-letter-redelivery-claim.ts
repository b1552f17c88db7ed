import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A dead letter's redelivery is claimed before its request is sent: until `redelivery_claimed_until` another
 * redelivery of the letter (from any replica) is refused instead of posting it again. The claim lapses, so a
 * replica that dies during the attempt does not hold the letter for ever. Null when no redelivery is in flight.
 */
export class DeadLetterRedeliveryClaim1765843200000 implements MigrationInterface {
  name = 'DeadLetterRedeliveryClaim1765843200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE event_dead_letters ADD COLUMN redelivery_claimed_until timestamptz`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE event_dead_letters DROP COLUMN redelivery_claimed_until`);
  }
}
