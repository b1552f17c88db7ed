import { DatabaseService } from '@agent/database';
import { EventRelayStore, outboundEvents } from '@agent/events';
import { ALL_MIGRATIONS } from '@agent/migrations';
import { migratedScratch, migrationScratches } from '../support/migration-scratch';

/**
 * The relay puts the envelope back into stored payloads itself; the session_events view does it with the SQL
 * function turn_log_events. Both must hand out the same payloads for the same rows.
 */
describe.each(migrationScratches('relay-envelope', ALL_MIGRATIONS))(
  'relayed payloads on $name',
  (scratch) => {
    const database = migratedScratch(scratch);
    let store: EventRelayStore;

    beforeAll(() => {
      store = new EventRelayStore(new DatabaseService(database.dataSource, null, !scratch.embedded));
    });

    it('are the payloads the session_events view lists', async () => {
      const envelope = {
        tenant_id: 'acme',
        agent_id: 'telecom_contas',
        session_id: 's-1',
        conversation_key: 'acme:s-1',
      };
      // Registered first: the rows inserted after it are queued for it.
      await store.register('test', null, 30);
      const insertRow = (version: number, events: unknown[]) =>
        database.dataSource.query(
          `INSERT INTO turn_log (conversation_key, version, turn, tenant_id, agent_id, events)
         VALUES ('acme:s-1', $1, $1, 'acme', 'telecom_contas', $2)`,
          [version, JSON.stringify(events)],
        );
      // As this release stores them: without the envelope, except a field whose value differs from the row's.
      await insertRow(1, [
        { name: 'NOC.001', payload: { channel: 'web', at: '2026-12-01T00:00:00.000Z' } },
        {
          name: 'session.ended',
          payload: { agent_id: 'billing_agent', reason: 'done', nested: { turn: 9 } },
        },
      ]);
      // As a release before stored them: whole.
      await insertRow(2, [{ name: 'NOC.001', payload: { ...envelope, turn: 2, channel: 'web' } }]);

      const claimed = await store.claim('test', 'relay-1', 60000, 10);
      expect(claimed).toEqual([
        { conversation_key: 'acme:s-1', next_position: 1 * 65536, last_position: 2 * 65536 },
      ]);
      const pending = await store.read(claimed, null, 10);
      const relayed = pending.flatMap(outboundEvents).map((event) => [event.name, event.payload]);
      const listed: { name: string; payload: unknown }[] = await database.dataSource.query(
        `SELECT name, payload FROM session_events WHERE conversation_key = 'acme:s-1' ORDER BY id`,
      );
      expect(relayed).toEqual(listed.map((event) => [event.name, event.payload]));
      expect(relayed).toEqual([
        ['NOC.001', { ...envelope, turn: 1, channel: 'web', at: '2026-12-01T00:00:00.000Z' }],
        [
          'session.ended',
          { ...envelope, turn: 1, agent_id: 'billing_agent', reason: 'done', nested: { turn: 9 } },
        ],
        ['NOC.001', { ...envelope, turn: 2, channel: 'web' }],
      ]);
    });
  },
);

/**
 * A destination's registration: only its tenant's commits are queued for it, nothing once no replica has relayed it
 * for as long as the turn log keeps rows, and it starts afresh when it comes back.
 */
describe.each(migrationScratches('relay-registration', ALL_MIGRATIONS))(
  'relay destinations on $name',
  (scratch) => {
    const database = migratedScratch(scratch);
    let store: EventRelayStore;
    const query = <T>(sql: string, params: unknown[] = []): Promise<T[]> =>
      database.dataSource.query(sql, params);
    const commit = (key: string, tenant: string, version = 1) =>
      query(
        `INSERT INTO turn_log (conversation_key, version, turn, tenant_id, agent_id, events)
         VALUES ($1, $2, $2, $3, 'telecom_contas', '[]')`,
        [key, version, tenant],
      );
    const queued = async (destination: string) =>
      (
        await query<{ conversation_key: string }>(
          `SELECT conversation_key FROM event_relay_backlog WHERE destination = $1 ORDER BY conversation_key`,
          [destination],
        )
      ).map((row) => row.conversation_key);

    beforeAll(() => {
      store = new EventRelayStore(new DatabaseService(database.dataSource, null, !scratch.embedded));
    });

    it("queue only their tenant's commits, or every tenant's", async () => {
      await store.register('webhook:acme', 'acme', 30);
      await store.register('nats:all', null, 30);
      await commit('acme:r-1', 'acme');
      await commit('globex:r-1', 'globex');
      expect(await queued('webhook:acme')).toEqual(['acme:r-1']);
      expect(await queued('nats:all')).toEqual(['acme:r-1', 'globex:r-1']);
    });

    it('get nothing queued once expired, and start afresh when a replica registers them again', async () => {
      await store.register('webhook:gone', null, 30);
      await commit('acme:e-1', 'acme');
      expect(await queued('webhook:gone')).toEqual(['acme:e-1']);
      // No replica relayed it for the whole retention period.
      await query(
        `UPDATE event_relay_destinations SET expires_at = now() - interval '1 day' WHERE destination = $1`,
        ['webhook:gone'],
      );
      await commit('acme:e-2', 'acme');
      expect(await queued('webhook:gone')).toEqual(['acme:e-1']);
      await store.register('webhook:gone', null, 30);
      expect(await queued('webhook:gone')).toEqual([]);
      await commit('acme:e-3', 'acme');
      expect(await queued('webhook:gone')).toEqual(['acme:e-3']);
      // Kept for ever when the turn log is (retention 0): the relay renews nothing then.
      await store.register('webhook:forever', null, null);
      const [forever] = await query<{ infinite: boolean }>(
        `SELECT expires_at = 'infinity' AS infinite FROM event_relay_destinations WHERE destination = 'webhook:forever'`,
      );
      expect(forever.infinite).toBe(true);
    });
  },
);
