import { Client } from 'pg';
import { runMigrationsExclusively } from '@agent/database';
import { migratedScratch, migrationScratches, migrationsUpTo } from '../support/migration-scratch';

/**
 * Node timings once per turn log row: rows of the earlier release keep their `nodes`, rows written after have
 * none (the timings are AGENT_COMPLETED's), and undoing the migration gives them back from that event.
 */
const scratches = migrationScratches(
  'node-timings-migration',
  migrationsUpTo('NodeTimingsOnce1765584000000'),
);

const TIMINGS = [
  { node: 'routing_decision', duration_ms: 1.5, outcome: 'ok' },
  { node: 'persist', duration_ms: 0.2, outcome: 'ok' },
];

describe.each(scratches)('node timings migration on $name', (scratch) => {
  const database = migratedScratch(scratch);

  /** A turn log row as a release writes it: with `nodes` (the earlier one) or without (this one). */
  const insertRow = (version: number, events: unknown[], nodes?: unknown[]) =>
    nodes === undefined
      ? database.dataSource.query(
          `INSERT INTO turn_log (conversation_key, version, turn, tenant_id, agent_id, events)
           VALUES ('t:s', $1, $1, 't', 'a', $2)`,
          [version, JSON.stringify(events)],
        )
      : database.dataSource.query(
          `INSERT INTO turn_log (conversation_key, version, turn, tenant_id, agent_id, nodes, events)
           VALUES ('t:s', $1, $1, 't', 'a', $2::jsonb, $3)`,
          [version, JSON.stringify(nodes), JSON.stringify(events)],
        );
  const nodesByVersion = async () =>
    (
      await database.dataSource.query<{ version: number; nodes: unknown }[]>(
        `SELECT version, nodes FROM turn_log WHERE conversation_key = 't:s' ORDER BY version`,
      )
    ).map((row) => [row.version, row.nodes]);

  it('stops requiring node timings and gives them back from AGENT_COMPLETED when undone', async () => {
    const completed = { name: 'AGENT_COMPLETED', payload: { route: 'billing_agent', nodes: TIMINGS } };
    // Written by the earlier release, and by one of its replicas still running during a rolling deploy.
    await insertRow(1, [completed], TIMINGS);
    await insertRow(2, [completed], TIMINGS);
    // Written by this release: no timings besides the event's; an operator action has no AGENT_COMPLETED.
    await insertRow(3, [completed]);
    await insertRow(4, [{ name: 'session.ended', payload: { source: 'admin' } }]);
    expect(await nodesByVersion()).toEqual([
      [1, TIMINGS],
      [2, TIMINGS],
      [3, null],
      [4, null],
    ]);

    await database.dataSource.undoLastMigration({ transaction: 'each' });
    expect(await nodesByVersion()).toEqual([
      [1, TIMINGS],
      [2, TIMINGS],
      [3, TIMINGS],
      [4, []],
    ]);
    // The earlier release's schema again: a row without timings gets its default.
    await insertRow(5, []);
    expect((await nodesByVersion())[4]).toEqual([5, []]);

    await database.dataSource.runMigrations({ transaction: 'each' });
    await insertRow(6, [completed]);
    expect((await nodesByVersion())[5]).toEqual([6, null]);
  });

  // Only on a server: PGlite serves one session, so nothing else can hold a lock there.
  if (!scratch.embedded) {
    it('gives up behind a long read of the turn log instead of stalling the commits, and applies later', async () => {
      await database.dataSource.undoLastMigration({ transaction: 'each' });
      const url =
        database.dataSource.options.type === 'postgres' ? database.dataSource.options.url : undefined;
      const reader = new Client({ connectionString: url });
      await reader.connect();
      try {
        await reader.query('BEGIN');
        await reader.query('SELECT count(*) FROM turn_log');
        const started = Date.now();
        await expect(runMigrationsExclusively(database.dataSource, 300)).rejects.toThrow(/lock timeout/);
        expect(Date.now() - started).toBeLessThan(5000);
        const [column] = await database.dataSource.query<{ is_nullable: string }[]>(
          `SELECT is_nullable FROM information_schema.columns WHERE table_name = 'turn_log' AND column_name = 'nodes'`,
        );
        expect(column.is_nullable).toBe('NO');
        await reader.query('COMMIT');
        expect((await runMigrationsExclusively(database.dataSource, 300)).map((m) => m.name)).toEqual([
          'NodeTimingsOnce1765584000000',
        ]);
        // The connection went back to its pool without the limit.
        const [setting] = await database.dataSource.query<{ lock_timeout: string }[]>('SHOW lock_timeout');
        expect(setting.lock_timeout).toBe('0');
      } finally {
        await reader.end();
      }
    });
  }
});
