import { MigrationInterface, QueryRunner } from 'typeorm';

const KEY_INDEX = 'checkpoints_conversation_version_idx';

/**
 * Every per-conversation table is keyed by a primary key that leads with `conversation_key`, so each can be
 * hash-partitioned or distributed by it (a partitioned or distributed table's unique keys must include that
 * column). `checkpoints` was keyed by a serial `id` that nothing reads: (conversation_key, version), already unique,
 * becomes its primary key. The index is built concurrently, outside a transaction, so commits go on while it is
 * built; the swap itself only changes constraints. `id` stays, with its default, for replicas of the earlier release
 * (their ORM selects it); a later release drops it.
 */
export class CheckpointsKeyedByConversation1765756800000 implements MigrationInterface {
  name = 'CheckpointsKeyedByConversation1765756800000';
  transaction = false;

  async up(queryRunner: QueryRunner): Promise<void> {
    // An interrupted concurrent build leaves an invalid index behind: start that one again.
    await queryRunner.query(`
      DO $$ BEGIN
        IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                    WHERE c.relname = '${KEY_INDEX}' AND NOT i.indisvalid) THEN
          DROP INDEX ${KEY_INDEX};
        END IF;
      END $$`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS ${KEY_INDEX} ON checkpoints (conversation_key, version)`,
    );
    await queryRunner.query(`
      ALTER TABLE checkpoints
        DROP CONSTRAINT checkpoints_pkey,
        DROP CONSTRAINT checkpoints_version_unique,
        ADD CONSTRAINT checkpoints_pkey PRIMARY KEY USING INDEX ${KEY_INDEX}`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // TypeORM reverts inside a transaction whatever the migration says, so these indexes are built there, holding
    // the commits back while they are built: revert in a quiet hour.
    await queryRunner.query(`CREATE UNIQUE INDEX checkpoints_id_idx ON checkpoints (id)`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX checkpoints_version_idx ON checkpoints (conversation_key, version)`,
    );
    await queryRunner.query(`
      ALTER TABLE checkpoints
        DROP CONSTRAINT checkpoints_pkey,
        ADD CONSTRAINT checkpoints_pkey PRIMARY KEY USING INDEX checkpoints_id_idx,
        ADD CONSTRAINT checkpoints_version_unique UNIQUE USING INDEX checkpoints_version_idx`);
  }
}
