import { DataSource } from 'typeorm';

/**
 * The tables keyed by conversation: what a distributed Postgres (Citus) would distribute by `conversation_key`, all
 * co-located, so every statement about one conversation can run on the one node that holds it.
 */
export const CONVERSATION_TABLES = [
  'sessions',
  'checkpoints',
  'turn_log',
  'processed_messages',
  'turn_failures',
  'event_relay_backlog',
] as const;

/**
 * Rebuilds the migrated (and still empty) schema with the per-conversation tables hash-partitioned by
 * `conversation_key` into `partitions` partitions (`<table>_p<n>`), keeping their columns, defaults, storage, keys,
 * indexes and triggers, and the view over the turn log: the layout a distributed Postgres would give them, on one
 * server, so EXPLAIN can show which partitions a statement touches.
 */
export async function partitionByConversation(dataSource: DataSource, partitions: number): Promise<void> {
  await dataSource.transaction(async (manager) => {
    const query = <T>(sql: string, params: unknown[] = []): Promise<T[]> => manager.query(sql, params);
    const [view] = await query<{ definition: string }>(
      `SELECT pg_get_viewdef('session_events'::regclass) AS definition`,
    );
    const triggers = await query<{ definition: string }>(
      `SELECT pg_get_triggerdef(oid) AS definition FROM pg_trigger
        WHERE NOT tgisinternal AND tgrelid = ANY($1::regclass[])`,
      [CONVERSATION_TABLES],
    );
    const sequences = await query<{ sequence: string; table: string; column: string }>(
      `SELECT s.relname AS sequence, t.relname AS table, a.attname AS column
         FROM pg_depend d JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
         JOIN pg_class t ON t.oid = d.refobjid JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid
        WHERE d.deptype = 'a' AND t.oid = ANY($1::regclass[])`,
      [CONVERSATION_TABLES],
    );
    await query('DROP VIEW session_events');
    for (const { sequence } of sequences) await query(`ALTER SEQUENCE ${sequence} OWNED BY NONE`);
    for (const table of CONVERSATION_TABLES) {
      const [options] = await query<{ options: string[] | null }>(
        `SELECT reloptions AS options FROM pg_class WHERE oid = $1::regclass`,
        [table],
      );
      await query(`ALTER TABLE ${table} RENAME TO ${table}_unpartitioned`);
      await query(
        `CREATE TABLE ${table} (LIKE ${table}_unpartitioned INCLUDING ALL) PARTITION BY HASH (conversation_key)`,
      );
      for (let remainder = 0; remainder < partitions; remainder++) {
        await query(
          `CREATE TABLE ${table}_p${remainder} PARTITION OF ${table}
             FOR VALUES WITH (MODULUS ${partitions}, REMAINDER ${remainder})`,
        );
        // Storage parameters belong to the partitions, which hold the rows.
        if (options.options) {
          await query(`ALTER TABLE ${table}_p${remainder} SET (${options.options.join(', ')})`);
        }
      }
      await query(`INSERT INTO ${table} SELECT * FROM ${table}_unpartitioned`);
      await query(`DROP TABLE ${table}_unpartitioned`);
    }
    for (const { sequence, table, column } of sequences) {
      await query(`ALTER SEQUENCE ${sequence} OWNED BY ${table}.${column}`);
    }
    for (const { definition } of triggers) await query(definition);
    await query(`CREATE VIEW session_events AS ${view.definition}`);
  });
}
