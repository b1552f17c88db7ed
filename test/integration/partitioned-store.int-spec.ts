import {
  CHECKPOINT_ENTITIES,
  ConversationIdentity,
  PostgresCheckpointStore,
  serializeCheckpoint,
  TurnCommit,
} from '@agent/checkpoint';
import type { AgentState } from '@agent/contracts';
import { createDataSource, DatabaseService, runMigrationsExclusively } from '@agent/database';
import { EventRelayStore } from '@agent/events';
import { DataSource } from 'typeorm';
import { describeCheckpointStoreContract } from '../support/checkpoint-store-contract';
import { conversationIdentity } from '../support/checkpoint-turns';
import { PartitionObserver, StatementObservation } from '../support/partition-observer';
import { partitionByConversation } from '../support/partitioned-schema';
import { postgresCheckpointStore, postgresStoreHarness } from '../support/postgres-checkpoint-store';
import { ScratchDatabase, scratchDatabase } from '../support/scratch-database';

/**
 * The store on the layout a distributed Postgres (Citus) gives it, built on one server: the per-conversation tables
 * hash-partitioned by conversation_key. Every statement of the turn path names one conversation and touches one
 * partition of each table it reads or writes, the same partition number in each (the tables are co-located): the
 * generic plan a named statement ends up with scans only that partition (EXPLAIN, initial pruning applied), and
 * the statement's own transaction scanned or wrote no other (its table statistics, a trigger's writes included).
 * The statements that must span conversations are listed with the reason. The store's contract holds on this
 * layout too.
 */
const url = process.env.DATABASE_URL;
const PARTITIONS = 8;

/** A scratch database migrated and partitioned, with a data source on it. */
async function partitionedDatabase(
  prefix: string,
): Promise<{ dataSource: DataSource; scratch: ScratchDatabase }> {
  const scratch = await scratchDatabase(url ?? '', prefix);
  const dataSource = await createDataSource({
    url: scratch.url,
    poolSize: 4,
    embedded: false,
    entities: CHECKPOINT_ENTITIES,
  });
  await runMigrationsExclusively(dataSource, 0);
  await partitionByConversation(dataSource, PARTITIONS);
  return { dataSource, scratch };
}

if (url) {
  describeCheckpointStoreContract(`Postgres, partitioned by conversation_key (${PARTITIONS})`, async () => {
    const { dataSource, scratch } = await partitionedDatabase('partitioned_contract');
    const db = new DatabaseService(dataSource, null);
    return postgresStoreHarness(db, async () => {
      await db.onApplicationShutdown();
      await scratch.drop();
    });
  });
}

(url ? describe : describe.skip)('the turn path on tables partitioned by conversation_key', () => {
  let dataSource: DataSource;
  let scratch: ScratchDatabase;
  let observer: PartitionObserver;
  let store: PostgresCheckpointStore;
  let relay: EventRelayStore;

  beforeAll(async () => {
    ({ dataSource, scratch } = await partitionedDatabase('partitioned_turns'));
    observer = new PartitionObserver(dataSource);
    store = postgresCheckpointStore(observer.database);
    relay = new EventRelayStore(observer.database);
    // A destination, so each commit also queues its conversation (the trigger's write is checked with it).
    await relay.register('observed', null, 30);
  }, 180000);

  afterAll(async () => {
    await dataSource?.destroy();
    await scratch?.drop();
  });

  /** The partition number of a conversation (the same in every table: they hash the same key the same way). */
  async function partitionOf(conversationKey: string): Promise<number> {
    const rows: { remainder: number }[] = await dataSource.query(
      `SELECT r AS remainder FROM generate_series(0, $2 - 1) AS r
        WHERE satisfies_hash_partition('sessions'::regclass, $2, r, $1::text)`,
      [conversationKey, PARTITIONS],
    );
    return rows[0].remainder;
  }

  /** Every statement touched only partition `n` of each table, and planned to. */
  function expectOnePartition(observations: StatementObservation[], partition: number): void {
    expect(observations.length).toBeGreaterThan(0);
    for (const observation of observations) {
      const tables = new Set([...observation.planned.keys(), ...observation.touched.keys()]);
      expect({ label: observation.label, touchesTables: tables.size > 0 }).toEqual({
        label: observation.label,
        touchesTables: true,
      });
      for (const table of tables) {
        const seen = [...(observation.planned.get(table) ?? []), ...(observation.touched.get(table) ?? [])];
        expect({ label: observation.label, table, partitions: [...new Set(seen)] }).toEqual({
          label: observation.label,
          table,
          partitions: [`${table}_p${partition}`],
        });
      }
    }
  }

  function commitOf(identity: ConversationIdentity, token: string, turn: number, messageId: string) {
    const state: AgentState = { user_text: `message ${turn}`, turn };
    const { text, checksum } = serializeCheckpoint(state, turn > 1 ? turn - 1 : null);
    const commit: TurnCommit = {
      identity,
      leaseToken: token,
      parentVersion: turn > 1 ? turn - 1 : null,
      turn,
      state,
      status: 'active',
      summary: {
        kind: 'turn',
        route: 'billing_agent',
        intent: null,
        method: 'llm',
        active_agent: null,
        route_bypassed: false,
        continuity: null,
        blocked: false,
        session_control: null,
        next_state: null,
        latency_ms: 5,
      },
      events: [{ name: 'NOC.001', payload: { channel: 'web' }, at: new Date().toISOString() }],
      idempotency: { message_id: messageId, response: { answer: `answer ${turn}` }, fingerprint: 'f' },
    };
    return store.commitTurn(commit, { expectedHead: turn - 1, serializedState: text, checksum, keep: 3 });
  }

  it('touches one partition per statement for taking the lease, the commit, idempotency, recovery reads, compaction, a failed run and a purge', async () => {
    const conversation = conversationIdentity('partitioned');
    const key = conversation.conversation_key;
    const partition = await partitionOf(key);
    const token = 'observer:1';
    const lease = (messageId: string) =>
      store.acquireLease(conversation, { token, leaseMs: 60000, reclaimPrefix: 'observer:', messageId });

    expectOnePartition(await observer.during('lease, new conversation', () => lease('m-1')), partition);
    expectOnePartition(
      await observer.during('commit', () => commitOf(conversation, token, 1, 'm-1')),
      partition,
    );
    expectOnePartition(await observer.during('lease, processed message', () => lease('m-1')), partition);
    expectOnePartition(await observer.during('lease and head', () => lease('m-2')), partition);
    expectOnePartition(
      await observer.during('lease renewal', () => store.renewLease(key, token, 60000)),
      partition,
    );
    for (let turn = 2; turn <= 4; turn++) {
      if (turn > 2) await lease(`m-${turn}`);
      // The commit of version 4 also deletes version 1 (three are kept).
      expectOnePartition(
        await observer.during(`commit ${turn}`, () => commitOf(conversation, token, turn, `m-${turn}`)),
        partition,
      );
    }
    expect((await store.listVersions(key)).map((version) => version.version)).toEqual([4, 3, 2]);
    await lease('m-5');
    expectOnePartition(
      await observer.during('lease release', () => store.releaseLease(key, token)),
      partition,
    );
    await lease('m-5');
    expectOnePartition(
      await observer.during('failed run', () =>
        store.releaseFailed(key, token, {
          turn: 5,
          events: [{ name: 'NOC.005', payload: { error: 'x' }, at: new Date().toISOString() }],
        }),
      ),
      partition,
    );
    expectOnePartition(
      await observer.during('idempotency lookup', () => store.findProcessedMessage(key, 'm-2')),
      partition,
    );
    expectOnePartition(
      await observer.during('recovery reads', async () => {
        await store.getVersion(key, 3);
        await store.latestVersions(key, 25, 4);
      }),
      partition,
    );
    expectOnePartition(await observer.during('relay: forget', () => relay.forget(key)), partition);
    expectOnePartition(await observer.during('purge', () => store.deleteConversation(key)), partition);
  });

  it('spans conversations only in the retention sweep, by age, each partition through its own index', async () => {
    const sweeps = await observer.during('retention sweep', async () => {
      await store.deleteExpired('turn_log', new Date(), 1000);
      await store.deleteExpired('processed_messages', new Date(), 1000);
      await store.deleteExpired('turn_failures', new Date(), 1000);
    });
    for (const sweep of sweeps) {
      // Every partition of the swept table is read by its created_at index: rows of every conversation age out.
      for (const partitions of sweep.planned.values()) expect(partitions.size).toBe(PARTITIONS);
      expect(sweep.sql).toMatch(/ORDER BY created_at LIMIT/);
    }
    expect(sweeps).toHaveLength(3);
  });

  it("reads a destination's backlog across partitions, and each claimed conversation's records in its own", async () => {
    const conversations = [1, 2, 3].map(() => conversationIdentity('relayed'));
    for (const conversation of conversations) {
      await store.acquireLease(conversation, { token: 'relay-test:1', leaseMs: 60000 });
      await commitOf(conversation, 'relay-test:1', 1, 'm-1');
    }
    const own = new Set(
      await Promise.all(conversations.map(async (c) => `_p${await partitionOf(c.conversation_key)}`)),
    );
    const claimed = (
      await observer.during('relay: claim', () => relay.claim('observed', 'r:1', 60000, 10))
    )[0];
    // Discovery scans the destination's backlog in every partition (each shard answers for its own).
    expect(claimed.planned.get('event_relay_backlog')?.size).toBe(PARTITIONS);
    const held = await relay.claim('observed', 'r:1', 60000, 10);
    let records: Awaited<ReturnType<EventRelayStore['read']>> = [];
    const [read] = await observer.during('relay: read', async () => {
      records = await relay.read(held, null, 10);
    });
    expect(records).toHaveLength(conversations.length);
    // One lookup per claimed conversation, each in that conversation's partition.
    for (const table of ['turn_log', 'turn_failures']) {
      for (const partition of read.touched.get(table) ?? []) {
        expect(own).toContain(partition.slice(partition.lastIndexOf('_')));
      }
    }
    expect(read.touched.get('turn_log')?.size).toBe(own.size);
    const [acknowledged] = await observer.during('relay: acknowledge', () =>
      relay.acknowledge(
        'observed',
        'r:1',
        60000,
        records.map((record) => ({
          conversation_key: record.conversation_key,
          next_position: record.version * 65536 + 1,
          release: true,
        })),
      ),
    );
    // A group of conversations is matched in the destination's backlog, which is small (only what is pending).
    expect([...acknowledged.touched.keys()]).toEqual(['event_relay_backlog']);
  });
});
