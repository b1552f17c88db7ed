import { EventEmitter2 } from '@nestjs/event-emitter';
import { DataSource, QueryRunner } from 'typeorm';
import {
  CHECKPOINT_ENTITIES,
  PostgresCheckpointStore,
  serializeCheckpoint,
  TurnCommit,
} from '@agent/checkpoint';
import { parseEnvNamespace } from '@agent/config';
import { conversationKeyOf, type AgentState } from '@agent/contracts';
import { createDataSource, DatabaseService, runMigrationsExclusively } from '@agent/database';
import { EventDestination, EventRelayService, EventRelayStore, OutboundEvent } from '@agent/events';
import { EventBusService, MetricsService } from '@agent/observability';
import { ownEmbeddedServer } from '../support/embedded-servers';
import { partitionByConversation } from '../support/partitioned-schema';
import { postgresCheckpointStore } from '../support/postgres-checkpoint-store';
import { scratchDatabase } from '../support/scratch-database';
import { eventually } from '../support/webhook-receiver';

/**
 * The event relay with two replicas relaying one destination, on the plain schema and on the per-conversation
 * tables hash-partitioned by conversation_key (the layout of a distributed Postgres): while conversations commit
 * turns and record failed runs, every event arrives once by id and in each conversation's order, a commit that stays
 * in flight while later ones of other conversations are delivered is delivered once it lands, a rolled back one
 * never is, both replicas deliver, and no claim is left held.
 */
interface Layout {
  name: string;
  open(): Promise<{ url: string; embedded: boolean; close(): Promise<void> }>;
}

const url = process.env.DATABASE_URL;
const layouts: Layout[] = [
  { name: 'embedded PGlite, plain tables', open: () => ownEmbeddedServer('relay-') },
];
if (url) {
  for (const partitions of [0, 8]) {
    layouts.push({
      name:
        partitions === 0
          ? 'Postgres, plain tables'
          : `Postgres, ${partitions} partitions by conversation_key`,
      open: async () => {
        const scratch = await scratchDatabase(url, partitions === 0 ? 'relay_plain' : 'relay_partitioned');
        if (partitions > 0) {
          const dataSource = await createDataSource({ url: scratch.url, poolSize: 1, embedded: false });
          await runMigrationsExclusively(dataSource, 0);
          await partitionByConversation(dataSource, partitions);
          await dataSource.destroy();
        }
        return { url: scratch.url, embedded: false, close: () => scratch.drop() };
      },
    });
  }
} else {
  describe('the event relay on Postgres', () => {
    it.skip('needs DATABASE_URL (CI sets it); only the embedded backend ran', () => undefined);
  });
}

/** A destination that appends what it receives to a log the replicas share, as one stream would. */
class RecordingDestination implements EventDestination {
  readonly tenant = null;

  constructor(
    readonly name: string,
    private readonly log: { event: OutboundEvent; replica: number }[],
    private readonly replica: number,
  ) {}

  async deliver(event: OutboundEvent): Promise<void> {
    // A delivery takes a moment, so the replicas' passes overlap.
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
    this.log.push({ event, replica: this.replica });
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** `<version>` or `<version>.<attempt>` and the event's place: the conversation's order. */
function orderOf(event: OutboundEvent): [number, number, number] {
  const [, at, seq] = /:([0-9.]+):(\d+)$/.exec(event.id) ?? [];
  const [version, attempt] = at.split('.').map(Number);
  return [version, attempt ?? 0, Number(seq)];
}

function later(a: [number, number, number], b: [number, number, number]): boolean {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] > b[i];
  return false;
}

describe.each(layouts)('the event relay on $name', (layout) => {
  let database: { url: string; embedded: boolean; close(): Promise<void> };
  let dataSource: DataSource;
  let db: DatabaseService;
  let store: PostgresCheckpointStore;
  const replicas: { relay: EventRelayService; db: DatabaseService }[] = [];
  const log: { event: OutboundEvent; replica: number }[] = [];
  const destination = `recording-${process.pid}`;

  beforeAll(async () => {
    database = await layout.open();
    dataSource = await createDataSource({
      url: database.url,
      poolSize: database.embedded ? 1 : 4,
      embedded: database.embedded,
      entities: CHECKPOINT_ENTITIES,
    });
    await runMigrationsExclusively(dataSource, 0);
    db = new DatabaseService(dataSource, null, !database.embedded);
    store = postgresCheckpointStore(db);
    for (const replica of [1, 2]) {
      const own = await createDataSource({
        url: database.url,
        poolSize: database.embedded ? 1 : 2,
        embedded: database.embedded,
      });
      const replicaDb = new DatabaseService(own, null, !database.embedded);
      const relay = new EventRelayService(
        new EventRelayStore(replicaDb),
        new MetricsService(),
        new EventBusService(new EventEmitter2()),
        parseEnvNamespace('events', {
          EVENTS_RELAY_POLL_MS: '20',
          EVENTS_RELAY_BATCH_SIZE: '4',
          EVENTS_RELAY_LEASE_MS: '5000',
        }),
        parseEnvNamespace('checkpoint', {}),
        [new RecordingDestination(destination, log, replica)],
      );
      replicas.push({ relay, db: replicaDb });
    }
    // Registered before the first commit, as a replica does before it serves.
    for (const { relay } of replicas) await relay.onApplicationBootstrap();
  }, 180000);

  afterAll(async () => {
    for (const { relay, db: replicaDb } of replicas) {
      await relay.beforeApplicationShutdown();
      await replicaDb.onApplicationShutdown();
    }
    await db?.onApplicationShutdown();
    await database?.close();
  });

  /** A turn of `session`: lease and commit, with a failed run before it when `failFirst`. */
  async function turn(session: string, version: number, failFirst: boolean): Promise<void> {
    const identity = {
      conversation_key: conversationKeyOf('acme', session),
      tenant_id: 'acme',
      session_id: session,
      agent_id: 'telecom_contas',
    };
    const token = `writer:${session}`;
    const event = (name: string) => ({ name, payload: { version }, at: new Date().toISOString() });
    if (failFirst) {
      await store.acquireLease(identity, { token, leaseMs: 60000 });
      await store.releaseFailed(identity.conversation_key, token, {
        turn: version,
        events: [event('NOC.005'), event('workflow_telemetry.failed')],
      });
    }
    await store.acquireLease(identity, { token, leaseMs: 60000 });
    const state: AgentState = { user_text: `turn ${version}` };
    const { text, checksum } = serializeCheckpoint(state, version > 1 ? version - 1 : null);
    const commit: TurnCommit = {
      identity,
      leaseToken: token,
      parentVersion: version > 1 ? version - 1 : null,
      turn: version,
      state,
      status: 'active',
      events: [event('NOC.001'), event('AGENT_STARTED'), event('AGENT_COMPLETED')],
    };
    await store.commitTurn(commit, { expectedHead: version - 1, serializedState: text, checksum, keep: 3 });
  }

  it('delivers every event once and in order per conversation, shared by two replicas', async () => {
    const sessions = Array.from({ length: 12 }, (_, index) => `relay-${process.pid}-${index}`);
    // A commit of its own conversation held in flight, then landing after later commits were delivered; and one
    // rolled back (its trigger's backlog row goes with it). Not on PGlite, whose connections share one session.
    const late = `relay-${process.pid}-late`;
    const rolledBack = `relay-${process.pid}-rolled-back`;
    const runner = database.embedded ? null : dataSource.createQueryRunner();
    const insertRow = (on: QueryRunner, session: string) =>
      on.query(
        `INSERT INTO turn_log (conversation_key, version, turn, tenant_id, agent_id, events)
         VALUES ($1, 1, 1, 'acme', 'telecom_contas', '[{"name":"NOC.001","payload":{}}]')`,
        [`acme:${session}`],
      );
    if (runner) {
      await runner.connect();
      await runner.startTransaction();
      await insertRow(runner, late);
    }
    await Promise.all(
      sessions.map(async (session, index) => {
        for (let version = 1; version <= 5; version++) {
          await turn(session, version, (index + version) % 4 === 0);
        }
      }),
    );
    const expected = sessions.flatMap((session, index) =>
      [1, 2, 3, 4, 5].flatMap((version) => [
        ...((index + version) % 4 === 0
          ? [`acme:${session}:${version - 1}.1:1`, `acme:${session}:${version - 1}.1:2`]
          : []),
        ...[1, 2, 3].map((seq) => `acme:${session}:${version}:${seq}`),
      ]),
    );
    await eventually('the commits delivered', () =>
      Promise.resolve(log.length >= expected.length ? true : undefined),
    );
    if (runner) {
      // The held commit lands only now, after every later one was delivered; another is rolled back.
      await runner.commitTransaction();
      expected.push(`acme:${late}:1:1`);
      await runner.startTransaction();
      await insertRow(runner, rolledBack);
      await runner.rollbackTransaction();
      await runner.release();
    }
    await eventually('every event delivered', () =>
      Promise.resolve(log.length >= expected.length ? true : undefined),
    );
    // Time for a duplicate or a rolled back event to show up, were the relay to send one.
    await new Promise((resolve) => setTimeout(resolve, 300));

    const ids = log.map((entry) => entry.event.id);
    expect([...ids].sort()).toEqual([...expected].sort());
    const last = new Map<string, [number, number, number]>();
    for (const { event } of log) {
      const order = orderOf(event);
      const previous = last.get(event.conversation_key);
      if (previous) {
        expect({ id: event.id, inOrder: later(order, previous) }).toEqual({ id: event.id, inOrder: true });
      }
      last.set(event.conversation_key, order);
    }
    expect(new Set(log.map((entry) => entry.replica))).toEqual(new Set([1, 2]));
    await eventually('no claim held, nothing pending', async () => {
      const [row]: { held: number; pending: number }[] = await dataSource.query(
        `SELECT count(*) FILTER (WHERE lease_owner IS NOT NULL)::integer AS held,
                count(*) FILTER (WHERE next_position <= last_position)::integer AS pending
           FROM event_relay_backlog WHERE destination = $1`,
        [destination],
      );
      return row.held === 0 && row.pending === 0 ? true : undefined;
    });
  }, 120000);
});
