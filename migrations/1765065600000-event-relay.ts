import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The event relay reads the turn log as its outbox. `commit_xid` is the transaction id of the commit that wrote
 * a row: a conversation's commits follow each other under its lease, so their ids grow with its versions, and
 * every id below the oldest transaction still running belongs to a commit that is already visible. That makes
 * an exact watermark per destination: rows below it are delivered, so a poll reads only what lies above it
 * through the index. Existing rows take the migration's id, below every destination's first watermark.
 *
 * Per destination: its watermark, and per conversation the last delivered commit with the relaying replica's
 * expiring claim, so replicas share the work and a dead one's conversations are taken over from the last
 * acknowledged position. Dead letters are the webhook deliveries that failed every attempt.
 */
export class EventRelay1765065600000 implements MigrationInterface {
  name = 'EventRelay1765065600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE turn_log ADD COLUMN commit_xid xid8 NOT NULL DEFAULT pg_current_xact_id()`,
    );
    await queryRunner.query(`CREATE INDEX turn_log_commit_xid_idx ON turn_log (commit_xid)`);
    await queryRunner.query(`
      CREATE TABLE event_relay_destinations (
        destination text PRIMARY KEY,
        watermark xid8 NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`
      CREATE TABLE event_relay_positions (
        destination text NOT NULL,
        conversation_key text NOT NULL,
        delivered_xid xid8,
        delivered_version integer,
        lease_owner text,
        lease_expires_at timestamptz,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (destination, conversation_key)
      )`);
    await queryRunner.query(`
      CREATE TABLE event_dead_letters (
        id bigserial PRIMARY KEY,
        destination text NOT NULL,
        tenant_id text NOT NULL,
        event_id text NOT NULL,
        event_name text NOT NULL,
        body jsonb NOT NULL,
        attempts integer NOT NULL,
        last_error text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        redelivered_at timestamptz
      )`);
    await queryRunner.query(
      `CREATE INDEX event_dead_letters_tenant_idx ON event_dead_letters (tenant_id, id)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE event_dead_letters`);
    await queryRunner.query(`DROP TABLE event_relay_positions`);
    await queryRunner.query(`DROP TABLE event_relay_destinations`);
    await queryRunner.query(`DROP INDEX turn_log_commit_xid_idx`);
    await queryRunner.query(`ALTER TABLE turn_log DROP COLUMN commit_xid`);
  }
}
