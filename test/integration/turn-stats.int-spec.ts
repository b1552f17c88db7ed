import { rmSync } from 'node:fs';
import { CheckpointStore, CHECKPOINT_ENTITIES, serializeCheckpoint, TurnStatsQuery } from '@agent/checkpoint';
import { conversationKeyOf, type AgentState, type StoredEvent } from '@agent/contracts';
import { createDataSource, DatabaseService, EmbeddedPostgres } from '@agent/database';
import { embeddedDataDir } from '../support/embedded-servers';
import { postgresCheckpointStore } from '../support/postgres-checkpoint-store';

const MIGRATION_LOCK = 727073690;
const TENANT = `tst${Date.now().toString(36)}`;

/** Postgres when DATABASE_URL is set (CI), else the embedded default. */
async function open(): Promise<{ db: DatabaseService; close: () => Promise<void> }> {
  if (process.env.DATABASE_URL) {
    const dataSource = await createDataSource({
      url: process.env.DATABASE_URL,
      poolSize: 2,
      embedded: false,
      entities: CHECKPOINT_ENTITIES,
    });
    await dataSource.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await dataSource.runMigrations({ transaction: 'each' });
    } finally {
      await dataSource.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
    const db = new DatabaseService(dataSource, null);
    return { db, close: () => db.onApplicationShutdown() };
  }
  const dir = embeddedDataDir('turn-stats-');
  const embedded = await EmbeddedPostgres.start(dir, 170000);
  const dataSource = await createDataSource({
    url: embedded.url,
    poolSize: 1,
    embedded: true,
    entities: CHECKPOINT_ENTITIES,
  });
  await dataSource.runMigrations({ transaction: 'each' });
  const db = new DatabaseService(dataSource, embedded);
  return {
    db,
    close: async () => {
      await db.onApplicationShutdown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const event = (name: string, payload: Record<string, unknown> = {}): StoredEvent => ({
  name,
  payload,
  at: new Date().toISOString(),
});
const llmCall = (profile: string, prompt: number, latency: number, outcome = 'ok') =>
  event('llm.call', {
    profile,
    model: profile,
    prompt_tokens: prompt,
    // A tenth of each prompt from the provider's cache, so the sums show it apart.
    cached_prompt_tokens: prompt / 10,
    completion_tokens: 10,
    latency_ms: latency,
    outcome,
  });
const continuity = (decision: string, accepted: boolean, bypassed: boolean, fallback: string | null = null) =>
  event('router.continuity', {
    decision,
    confidence: accepted ? 0.95 : 0.4,
    accepted,
    route_bypassed: bypassed,
    fallback_reason: fallback,
    active_agent: 'billing_agent',
    profile_name: 'route_continuity',
    latency_ms: 5,
  });
const turnEvents = (latency: number, ...middle: StoredEvent[]) => [
  event('NOC.001'),
  event('AGENT_STARTED'),
  ...middle,
  event('AGENT_COMPLETED', { latency_ms: latency, answer_chars: 10 }),
];

describe('TurnStatsQuery', () => {
  let db: DatabaseService;
  let close: () => Promise<void>;
  let store: CheckpointStore;
  let query: TurnStatsQuery;
  let started: Date;

  /** Commits one conversation of the given turns through the store, as the turn service does. */
  async function conversation(tenant: string, turns: StoredEvent[][]): Promise<void> {
    const session = `s-${Math.random().toString(36).slice(2, 10)}`;
    const identity = {
      conversation_key: conversationKeyOf(tenant, session),
      tenant_id: tenant,
      session_id: session,
      agent_id: 'telecom_contas',
    };
    for (const [index, events] of turns.entries()) {
      const lease = { token: 'stats:1', leaseMs: 60_000 };
      expect((await store.acquireLease(identity, lease)).session).not.toBeNull();
      const turn = index + 1;
      const state: AgentState = { turn };
      const parent = turn > 1 ? turn - 1 : null;
      const { text, checksum } = serializeCheckpoint(state, parent);
      await store.commitTurn(
        { identity, leaseToken: 'stats:1', parentVersion: parent, turn, state, status: 'active', events },
        { expectedHead: turn - 1, serializedState: text, checksum, keep: 3 },
      );
    }
  }

  beforeAll(async () => {
    ({ db, close } = await open());
    store = postgresCheckpointStore(db);
    query = new TurnStatsQuery(db);
    started = new Date(Date.now() - 1000);
    await conversation(TENANT, [
      // A first turn: classified ROUTE, the router's model decides.
      turnEvents(
        100,
        continuity('ROUTE', true, false),
        llmCall('route_continuity', 300, 20),
        llmCall('router', 400, 30),
      ),
      // An accepted CONTINUE with no router call: a router call avoided.
      turnEvents(40, continuity('CONTINUE', true, true), llmCall('route_continuity', 300, 10)),
      // An accepted CONTINUE whose speculative router run was paid for and discarded: not avoided.
      turnEvents(
        60,
        continuity('CONTINUE', true, true),
        llmCall('route_continuity', 300, 12),
        llmCall('router', 400, 50),
      ),
      // Overruled: the router decides; its call failed.
      turnEvents(
        80,
        continuity('CONTINUE', false, false, 'below_threshold'),
        llmCall('route_continuity', 300, 14),
        llmCall('router', 400, 70, 'timeout'),
      ),
    ]);
    await conversation(TENANT, [
      // Two guardrail calls in one turn: the profile's time per turn is their sum.
      turnEvents(
        50,
        continuity('CONTINUE', false, false, 'invalid_output'),
        llmCall('guardrail', 100, 5),
        llmCall('guardrail', 100, 5),
      ),
      turnEvents(
        45,
        continuity('CONTINUE', true, true),
        event('router.continuity.shadow', { agreed: true }),
        llmCall('guardrail', 100, 7),
      ),
      turnEvents(
        55,
        continuity('CONTINUE', true, true),
        event('router.continuity.shadow', { agreed: false }),
      ),
    ]);
    // Another tenant's turn never counts for this one.
    await conversation(`${TENANT}-b`, [turnEvents(999, continuity('CONTINUE', true, true))]);
  }, 240_000);

  afterAll(async () => {
    await close?.();
  });

  const period = (overrides: Partial<Parameters<TurnStatsQuery['periodStats']>[0]> = {}) =>
    query.periodStats({
      tenant_id: TENANT,
      from: started,
      to: new Date(Date.now() + 1000),
      bucket: 'hour',
      router_profiles: { global: 'router', agents: {} },
      ...overrides,
    });

  it('counts turns, bypasses and only the router calls a bypass really avoided', async () => {
    const stats = await period();
    expect(stats).toMatchObject({
      turns: 7,
      continuity_evaluated: 7,
      bypassed_turns: 4,
      router_calls: 3,
      router_calls_avoided: 3,
      shadow_compared: 2,
      shadow_agreed: 1,
    });
    expect(stats.decisions).toEqual([
      { decision: 'CONTINUE', accepted: true, count: 4 },
      { decision: 'CONTINUE', accepted: false, count: 2 },
      { decision: 'ROUTE', accepted: true, count: 1 },
    ]);
    expect(stats.fallback_reasons).toEqual(
      expect.arrayContaining([
        { reason: 'below_threshold', count: 1 },
        { reason: 'invalid_output', count: 1 },
      ]),
    );
    expect(stats.turn_latency_ms.p50).toBe(55);
    expect(stats.profiles).toEqual([
      {
        profile: 'guardrail',
        calls: 3,
        failures: 0,
        prompt_tokens: 300,
        cached_prompt_tokens: 30,
        completion_tokens: 30,
        latency_p50_ms: 8.5,
        latency_p95_ms: expect.closeTo(9.85, 5),
      },
      {
        profile: 'route_continuity',
        calls: 4,
        failures: 0,
        prompt_tokens: 1200,
        cached_prompt_tokens: 120,
        completion_tokens: 40,
        latency_p50_ms: 13,
        latency_p95_ms: expect.closeTo(19.1, 5),
      },
      {
        profile: 'router',
        calls: 3,
        failures: 1,
        prompt_tokens: 1200,
        cached_prompt_tokens: 120,
        completion_tokens: 30,
        latency_p50_ms: 50,
        latency_p95_ms: expect.closeTo(68, 5),
      },
    ]);
    const buckets = stats.series.filter((bucket) => bucket.turns > 0);
    expect(buckets.reduce((sum, bucket) => sum + bucket.turns, 0)).toBe(7);
    expect(buckets.every((bucket) => /^\d{4}-\d\d-\d\dT\d\d:00:00Z$/.test(bucket.start))).toBe(true);
  });

  it('counts a profile other than "router" when routing names another one', async () => {
    expect(await period({ router_profiles: { global: 'route_continuity', agents: {} } })).toMatchObject({
      router_calls: 4,
      router_calls_avoided: 2,
    });
  });

  it("counts each agent's turns by its own routing file's profile, the others' by the global one", async () => {
    // These turns are telecom_contas': its own profile counts, another agent's does not.
    const own = { global: 'route_continuity', agents: { telecom_contas: 'router' } };
    expect(await period({ router_profiles: own })).toMatchObject({
      router_calls: 3,
      router_calls_avoided: 3,
    });
    const others = { global: 'router', agents: { retail_orders: 'route_continuity' } };
    expect(await period({ router_profiles: others })).toMatchObject({ router_calls: 3 });
    const swapped = { global: 'router', agents: { telecom_contas: 'route_continuity' } };
    expect(await period({ router_profiles: swapped })).toMatchObject({
      router_calls: 4,
      router_calls_avoided: 2,
    });
  });

  it('leaves out turns outside the period and other tenants', async () => {
    expect(
      await period({ from: new Date(Date.now() + 60_000), to: new Date(Date.now() + 120_000) }),
    ).toMatchObject({
      turns: 0,
      decisions: [],
      profiles: [],
      series: [],
      turn_latency_ms: { p50: null, p95: null },
    });
    const all = await period({ tenant_id: undefined });
    expect(all.turns).toBeGreaterThanOrEqual(8);
    expect((await period({ tenant_id: `${TENANT}-b` })).turns).toBe(1);
  });
});
