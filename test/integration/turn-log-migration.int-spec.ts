import { migratedScratch, migrationScratches, migrationsUpTo } from '../support/migration-scratch';

/**
 * The turn log migration on a database that already holds event rows, on the embedded PGlite and (with
 * DATABASE_URL) on a scratch database of the real server: down to the per-event table, old rows in, up again.
 */
const scratches = migrationScratches('turn-log-migration', migrationsUpTo('TurnLog1764806400000'));

describe.each(scratches)('turn log migration on $name', (scratch) => {
  const database = migratedScratch(scratch);

  it('moves each commit of stored events into one turn log row and back', async () => {
    await database.dataSource.undoLastMigration({ transaction: 'each' });
    await database.dataSource.query(
      `INSERT INTO sessions (conversation_key, tenant_id, session_id, agent_id, turn_count, head_version)
       VALUES ('t:s', 't', 's', 'telecom_contas', 2, 3)`,
    );
    const insert = (turn: number, seq: number, name: string, at: string) =>
      database.dataSource.query(
        `INSERT INTO session_events (conversation_key, tenant_id, session_id, turn, seq, name, payload, created_at)
         VALUES ('t:s', 't', 's', $1, $2, $3, $4::jsonb, $5::timestamptz)`,
        [turn, seq, name, JSON.stringify({ turn, name }), at],
      );
    await insert(1, 1, 'NOC.001', '2025-01-01T00:00:01Z');
    await insert(1, 2, 'AGENT_COMPLETED', '2025-01-01T00:00:01Z');
    // An operator action after turn 1: same turn number, its own commit.
    await insert(1, 1, 'session.human_handoff.requested', '2025-01-01T00:00:02Z');
    await insert(2, 1, 'NOC.001', '2025-01-01T00:00:03Z');

    await database.dataSource.runMigrations({ transaction: 'each' });
    const rows: { version: number; turn: number; agent_id: string; names: string[] }[] =
      await database.dataSource.query(
        `SELECT version, turn, agent_id, ARRAY(SELECT e->>'name' FROM jsonb_array_elements(events) e) AS names
           FROM turn_log WHERE conversation_key = 't:s' ORDER BY version`,
      );
    expect(rows).toEqual([
      { version: 1, turn: 1, agent_id: 'telecom_contas', names: ['NOC.001', 'AGENT_COMPLETED'] },
      { version: 2, turn: 1, agent_id: 'telecom_contas', names: ['session.human_handoff.requested'] },
      { version: 3, turn: 2, agent_id: 'telecom_contas', names: ['NOC.001'] },
    ]);
    const viewed: { session_id: string; turn: number; seq: number; name: string; payload: unknown }[] =
      await database.dataSource.query(
        `SELECT session_id, turn, seq, name, payload FROM session_events WHERE conversation_key = 't:s' ORDER BY id`,
      );
    expect(viewed.map((e) => [e.session_id, e.turn, e.seq, e.name])).toEqual([
      ['s', 1, 1, 'NOC.001'],
      ['s', 1, 2, 'AGENT_COMPLETED'],
      ['s', 1, 1, 'session.human_handoff.requested'],
      ['s', 2, 1, 'NOC.001'],
    ]);
    expect(viewed[1].payload).toEqual({ turn: 1, name: 'AGENT_COMPLETED' });

    await database.dataSource.undoLastMigration({ transaction: 'each' });
    const back: { turn: number; seq: number; name: string }[] = await database.dataSource.query(
      `SELECT turn, seq, name FROM session_events WHERE conversation_key = 't:s' ORDER BY id`,
    );
    expect(back.map((e) => [e.turn, e.seq, e.name])).toEqual([
      [1, 1, 'NOC.001'],
      [1, 2, 'AGENT_COMPLETED'],
      [1, 1, 'session.human_handoff.requested'],
      [2, 1, 'NOC.001'],
    ]);
    await database.dataSource.runMigrations({ transaction: 'each' });
  });
});
