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
    // The earlier release reads `nodes` only for the rows it wrote; the timings come back from AGENT_COMPLETED.
    await queryRunner.query(
      `UPDATE turn_log t SET nodes = COALESCE(
         (SELECT e.event->'payload'->'nodes' FROM jsonb_array_elements(t.events::jsonb) AS e(event)
           WHERE e.event->>'name' = 'AGENT_COMPLETED' AND jsonb_typeof(e.event->'payload'->'nodes') = 'array'
           LIMIT 1),
         '[]'::jsonb)
        WHERE t.nodes IS NULL`,
    );
    await queryRunner.query(
      `ALTER TABLE turn_log ALTER COLUMN nodes SET DEFAULT '[]'::jsonb, ALTER COLUMN nodes SET NOT NULL`,
    );
  }
}
