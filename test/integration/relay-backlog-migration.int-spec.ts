import { migratedScratch, migrationScratches, migrationsUpTo } from '../support/migration-scratch';

/**
 * The relay backlog migration on a database the earlier relay (transaction-id watermark, per-conversation
 * positions) was delivering from: what that relay had not delivered is queued, from each conversation's first
 * undelivered commit, and from then on every turn log row and failed run is queued by the trigger, whichever
 * release writes it. Undone, the earlier relay's schema is whole again.
 */
const scratches = migrationScratches('relay-backlog-migration', migrationsUpTo('RelayBacklog1765670400000'));

describe.each(scratches)('relay backlog migration on $name', (scratch) => {
  const database = migratedScratch(scratch);
  const query = <T>(sql: string, params: unknown[] = []): Promise<T[]> =>
    database.dataSource.query(sql, params);
  const commit = (key: string, version: number) =>
    query(
      `INSERT INTO turn_log (conversation_key, version, turn, tenant_id, agent_id, events)
       VALUES ($1, $2, $2, 'acme', 'telecom_contas', '[]')`,
      [key, version],
    );
  const backlog = () =>
    query<{ conversation_key: string; next: string; last: string }>(
      `SELECT conversation_key, next_position::text AS next, last_position::text AS last
         FROM event_relay_backlog WHERE destination = 'nats:old' ORDER BY conversation_key`,
    );
  const at = (version: number, attempt = 0) => String(version * 65536 + attempt);

  it('queues what the earlier relay had not delivered, then every record through the trigger', async () => {
    await database.dataSource.undoLastMigration({ transaction: 'each' });
    // Before the destination existed: never its.
    await commit('acme:before', 1);
    // As the earlier release registered a destination and delivered (acme:a up to version 1). Its watermark was the
    // oldest transaction still running anywhere on the server: here, exactly after the commit above.
    await query(
      `INSERT INTO event_relay_destinations (destination, watermark) VALUES ('nats:old', pg_current_xact_id())`,
    );
    for (const version of [1, 2, 3]) await commit('acme:a', version);
    for (const version of [1, 2]) await commit('acme:b', version);
    await query(
      `INSERT INTO event_relay_positions (destination, conversation_key, delivered_xid, delivered_version)
       SELECT 'nats:old', conversation_key, commit_xid, version FROM turn_log WHERE conversation_key = 'acme:a' AND version = 1`,
    );

    await database.dataSource.runMigrations({ transaction: 'each' });
    expect(await backlog()).toEqual([
      { conversation_key: 'acme:a', next: at(2), last: at(3) },
      { conversation_key: 'acme:b', next: at(1), last: at(2) },
    ]);

    // A replica of either release commits: the trigger queues it; a failed run goes after its head.
    await commit('acme:b', 3);
    await query(
      `INSERT INTO turn_failures (conversation_key, version, attempt, turn, tenant_id, agent_id, events)
       VALUES ('acme:b', 3, 1, 4, 'acme', 'telecom_contas', '[]')`,
    );
    await commit('acme:c', 1);
    expect(await backlog()).toEqual([
      { conversation_key: 'acme:a', next: at(2), last: at(3) },
      { conversation_key: 'acme:b', next: at(1), last: at(3, 1) },
      { conversation_key: 'acme:c', next: at(1), last: at(1) },
    ]);
    // The earlier release still registers the way it did.
    await query(
      `INSERT INTO event_relay_destinations (destination, watermark) VALUES ('nats:older', pg_snapshot_xmin(pg_current_snapshot()))`,
    );

    await database.dataSource.undoLastMigration({ transaction: 'each' });
    const [relay] = await query<{ backlog: string | null; failures: string | null }>(
      `SELECT to_regclass('event_relay_backlog')::text AS backlog, to_regclass('turn_failures')::text AS failures`,
    );
    expect(relay).toEqual({ backlog: null, failures: null });
    await commit('acme:c', 2);
    await database.dataSource.runMigrations({ transaction: 'each' });
  });
});
