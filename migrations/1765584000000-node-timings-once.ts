import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A turn's node timings were stored twice in its turn log row: in the `nodes` column and in the AGENT_COMPLETED
 * event's `nodes` inside `events`, which is what the admin timeline and the statistics read. The column cost
 * about 0.34 KB per turn (jsonb that pglz hardly shrinks), so commits stop writing it. It becomes nullable and
 * loses its default instead of being dropped, so replicas of the earlier release can still insert during a
 * rolling deploy; rows written before keep their value.
 */
export class NodeTimingsOnce1765584000000 implements MigrationInterface {
  name = 'NodeTimingsOnce1765584000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE turn_log ALTER COLUMN nodes DROP NOT NULL, ALTER COLUMN nodes DROP DEFAULT`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // The table's lock first (the migration is one transaction): commits of replicas still running this release
    // wait until the column is whole again, then leave it out and get the default.
    await queryRunner.query(`ALTER TABLE turn_log ALTER COLUMN nodes SET DEFAULT '[]'::jsonb`);
    // The earlier release never reads the column either; the timings are copied back so its rows look as it wrote
    // them. This rewrites every row written since `up`: on a large turn log, revert in a quiet hour.
    await queryRunner.query(
      `UPDATE turn_log t SET nodes = COALESCE(
         (SELECT e.event->'payload'->'nodes' FROM jsonb_array_elements(t.events::jsonb) AS e(event)
           WHERE e.event->>'name' = 'AGENT_COMPLETED' AND jsonb_typeof(e.event->'payload'->'nodes') = 'array'
           LIMIT 1),
         '[]'::jsonb)
        WHERE t.nodes IS NULL`,
    );
    await queryRunner.query(`ALTER TABLE turn_log ALTER COLUMN nodes SET NOT NULL`);
  }
}
