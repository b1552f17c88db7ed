import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The lease upsert (INSERT … ON CONFLICT (conversation_key)) must have a single unique index to arbitrate on:
 * with a second one on (tenant_id, session_id), two replicas opening the same new conversation at once could
 * hit a unique violation on the non-arbiter index instead of the conflict path. conversation_key is
 * `tenant_id:session_id` with a tenant id that cannot contain ':', so the primary key already guarantees it.
 */
export class SessionLeaseSingleArbiter1764633600000 implements MigrationInterface {
  name = 'SessionLeaseSingleArbiter1764633600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE sessions DROP CONSTRAINT IF EXISTS sessions_tenant_session_unique');
    await queryRunner.query(
      'CREATE INDEX IF NOT EXISTS sessions_tenant_session_idx ON sessions (tenant_id, session_id)',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX IF EXISTS sessions_tenant_session_idx');
    await queryRunner.query(
      'ALTER TABLE sessions ADD CONSTRAINT sessions_tenant_session_unique UNIQUE (tenant_id, session_id)',
    );
  }
}
