import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A webhook event's failed attempts so far and when the next one is due, so a replica that restarts (or takes
 * the conversation over) continues the backoff and dead-letters the event after the configured total instead of
 * starting the count again. A row lives only while an event is being retried.
 */
export class WebhookAttempts1765238400000 implements MigrationInterface {
  name = 'WebhookAttempts1765238400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE event_delivery_attempts (
        destination text NOT NULL,
        event_id text NOT NULL,
        conversation_key text NOT NULL,
        attempts integer NOT NULL,
        next_attempt_at timestamptz NOT NULL,
        last_error text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (destination, event_id)
      )`);
    await queryRunner.query(
      `CREATE INDEX event_delivery_attempts_conversation_idx ON event_delivery_attempts (conversation_key)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE event_delivery_attempts`);
  }
}
