/**
 * npm run bench:overhead — what production pays per turn for the runtime itself. The service runs as in
 * production (`node dist/apps/agent-runtime/src/main.js`, NODE_ENV=production, API keys, the default pipeline
 * with route stickiness on) against a scripted OpenAI-compatible model in its own process that answers every
 * call instantly, and the reference MCP server the shipped config names (its tool lists). Per turn: Node CPU of the service, CPU of its Postgres backends, SQL statements, transactions,
 * commit records and bytes of WAL, retained bytes, latency at 1 in flight and throughput at 16; beside it, in
 * the same run, the raw `pg` floor (one statement writing the same checkpoint and turn row). Growth: turn 1, 50
 * and 500 of one conversation, and 1,000 new conversations.
 *
 * Needs DATABASE_URL (a Postgres server; the bench creates its own database there and drops it afterwards when
 * the role may create databases; WAL is attributed to that database with pg_walinspect when the role may
 * create the extension). Options (env): BENCH_WARMUP_TURNS (default 2000), BENCH_TURNS (1 in flight, default
 * 500), BENCH_LOAD_TURNS (default 1600), BENCH_CONCURRENCY (default 16), BENCH_GROWTH_TURNS (default 500),
 * BENCH_CONVERSATIONS (default 1000), BENCH_EVENTS_NATS_URL (unset: no event destination, the default; set: the
 * service relays every event to a JetStream stream of its own on that server, and each phase waits for the relay to
 * catch up before it is measured, so the relay's CPU is in the figures; the stream is deleted afterwards).
 * Writes bench/results/overhead.md (untracked); `-- --update-report` rewrites bench/reports/overhead.md.
 */
import { ChildProcess, fork, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, NatsConnection } from '@nats-io/transport-node';
import { Client } from 'pg';
import { z } from 'zod';
import { capacityInputLines, CapacityInputs, capacityTable, DEFAULT_ASSUMPTIONS } from './capacity';
import {
  BenchFailure,
  consoleTable,
  ensureDatabase,
  mean,
  percentile,
  pool,
  REPO_ROOT,
  reportDirectory,
  round,
  runBench,
  writeReport,
} from './lib';
import {
  ask,
  CpuArea,
  DatabaseProbe,
  processCpuMs,
  profileCpu,
  queryCounts,
  WalUsage,
} from './overhead-probes';
import type { QueryCounts } from './query-counter';

const SPLIT_HEADING = "## Where the service's CPU goes (V8 sampling profile, 1 in flight)";
const CAPACITY_HEADING = '## Capacity model';
/** The rates the capacity model is worked out for, turns per second. */
const CAPACITY_RATES = [100, 1000, 10000];
/** Tables whose rows age out (TURN_LOG_RETENTION_DAYS, PROCESSED_MESSAGES_RETENTION_DAYS) and that stay. */
const AGED_TABLES = ['turn_log', 'processed_messages', 'turn_failures'];
const KEPT_TABLES = ['sessions', 'checkpoints'];
const GROWTH_HEADING = '## Growth';
const TENANT = 'bench';
const AGENT_ID = 'telecom_contas';
const CHANNEL_KEY = 'bench-overhead-channel-key';
const SERVICE_APP_NAME = 'agent-runtime';

const settings = {
  eventsNatsUrl: process.env.BENCH_EVENTS_NATS_URL || null,
  warmupTurns: Number(process.env.BENCH_WARMUP_TURNS ?? '2000'),
  turns: Number(process.env.BENCH_TURNS ?? '500'),
  loadTurns: Number(process.env.BENCH_LOAD_TURNS ?? '1600'),
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? '16'),
  growthTurns: Math.max(60, Number(process.env.BENCH_GROWTH_TURNS ?? '500')),
  conversations: Math.max(60, Number(process.env.BENCH_CONVERSATIONS ?? '1000')),
};

interface Processes {
  service: ChildProcess;
  model: ChildProcess;
}

interface Snapshot {
  serviceCpu: number;
  modelCpu: number;
  modelRequests: number;
  backendCpu: Map<number, number>;
  counts: QueryCounts;
  lsn: string;
  databaseBytes: number;
}

interface Phase {
  name: string;
  turns: number;
  seconds: number;
  latencies: number[];
  nodeCpuMs: number;
  postgresCpuMs: number;
  modelCpuMs: number;
  modelCalls: number;
  statements: number;
  transactions: number;
  wal: WalUsage;
  /** WAL flushes of the server during the phase (null: not counted). */
  walFlushes: number | null;
  diskBytes: number;
}

interface TurnSpec {
  session: string;
  index: number;
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

function postTurn(port: number, spec: TurnSpec): Promise<number> {
  const payload = JSON.stringify({
    tenant_id: TENANT,
    agent_id: AGENT_ID,
    session_id: spec.session,
    message_id: `${spec.session}-m${spec.index}`,
    user_id: `${spec.session}-user`,
    text: `Quero entender a cobrança da minha fatura deste mês (${spec.index})`,
  });
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/v1/channels/web/messages',
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          authorization: `Bearer ${CHANNEL_KEY}`,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          if (res.statusCode === 200) resolve(performance.now() - started);
          else reject(new Error(`turn answered ${res.statusCode}: ${Buffer.concat(chunks).toString()}`));
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function startModel(): Promise<{ model: ChildProcess; baseUrl: string }> {
  const model = fork(join(__dirname, 'overhead-model.js'), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const { port } = await ask(model, null, z.object({ port: z.number() }));
  return { model, baseUrl: `http://127.0.0.1:${port}/v1` };
}

/**
 * The reference MCP server the shipped config names, on the bench database (its own schema): the agents' tool
 * lists come from it as in production, rather than from the fallback path of a server that is down.
 */
async function startToolServer(databaseUrl: string): Promise<{ tools: ChildProcess; url: string }> {
  const port = await freePort();
  const tools = spawn(
    process.execPath,
    [join(REPO_ROOT, 'dist', 'apps', 'reference-mcp-server', 'src', 'main.js')],
    {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: {
        PATH: process.env.PATH,
        MCP_HOST: '127.0.0.1',
        MCP_PORT: String(port),
        DATABASE_URL: databaseUrl,
      },
    },
  );
  let stderr = '';
  tools.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const url = `http://127.0.0.1:${port}/mcp`;
  const deadline = Date.now() + 60000;
  for (;;) {
    if (tools.exitCode !== null) throw new Error(`reference MCP server exited during start:\n${stderr}`);
    // Any HTTP answer (a GET without a session is refused) means it listens.
    const listening = await fetch(url).then(
      () => true,
      () => false,
    );
    if (listening) return { tools, url };
    if (Date.now() > deadline) throw new Error(`reference MCP server not listening within 60 s:\n${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function startService(
  databaseUrl: string,
  modelUrl: string,
  toolsUrl: string,
  events: EventsSink | null,
): Promise<{ service: ChildProcess; port: number }> {
  const port = await freePort();
  const service = spawn(
    process.execPath,
    [
      '-r',
      join(__dirname, 'query-counter.js'),
      join(REPO_ROOT, 'dist', 'apps', 'agent-runtime', 'src', 'main.js'),
    ],
    {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env: {
        PATH: process.env.PATH,
        NODE_ENV: 'production',
        PORT: String(port),
        DATABASE_URL: databaseUrl,
        CONFIG_DIR: join(REPO_ROOT, 'config'),
        LLM_BASE_URL: modelUrl,
        LLM_API_KEY: 'bench',
        LLM_PROFILES_PATH: join(REPO_ROOT, 'bench', 'config', 'llm_profiles.yaml'),
        MCP_SERVER_TELECOM_URL: toolsUrl,
        MCP_SERVER_RETAIL_URL: toolsUrl,
        CHANNEL_API_KEYS: `${TENANT}:${CHANNEL_KEY}`,
        ENABLE_ROUTE_STICKINESS: 'true',
        // The bench is one client sending as fast as it can; per-key limits would measure the limiter.
        RATE_LIMIT_PER_MINUTE: '100000000',
        TURN_LOCK_TIMEOUT_MS: '60000',
        ...(events
          ? {
              EVENTS_NATS_URL: events.url,
              EVENTS_NATS_STREAM: events.stream,
              EVENTS_NATS_SUBJECT_PREFIX: events.subjectPrefix,
            }
          : {}),
      },
    },
  );
  let stderr = '';
  service.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const deadline = Date.now() + 120000;
  for (;;) {
    if (service.exitCode !== null) throw new Error(`service exited during start:\n${stderr}`);
    const ready = await fetch(`http://127.0.0.1:${port}/health/ready`).then(
      (res) => res.status === 200,
      () => false,
    );
    if (ready) return { service, port };
    if (Date.now() > deadline) throw new Error(`service not ready within 120 s:\n${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function stop(child: ChildProcess): Promise<void> {
  // Gone already, whether it exited or was killed (a killed process has a signal and no exit code).
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 15000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** A database of its own on the same server when the role may create one, else the given one. */
async function benchDatabase(url: string): Promise<{ url: string; name: string; created: boolean }> {
  const admin = new Client({ connectionString: url });
  await admin.connect();
  try {
    const current = (await admin.query<{ name: string }>('SELECT current_database() AS name')).rows[0].name;
    const name = `${current}_overhead_${Date.now().toString(36)}`;
    try {
      await admin.query(`CREATE DATABASE "${name}"`);
    } catch (error) {
      console.log(`could not create a database of its own (${String(error)}): using ${current}`);
      return { url, name: current, created: false };
    }
    const own = new URL(url);
    own.pathname = `/${name}`;
    return { url: own.toString(), name, created: true };
  } finally {
    await admin.end();
  }
}

async function dropDatabase(url: string, name: string): Promise<void> {
  const admin = new Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

/** The bench's own JetStream stream the service relays to (BENCH_EVENTS_NATS_URL), and how far it is filled. */
class EventsSink {
  private constructor(
    readonly url: string,
    readonly stream: string,
    readonly subjectPrefix: string,
    private readonly connection: NatsConnection,
  ) {}

  static async open(url: string): Promise<EventsSink> {
    const tag = Date.now().toString(36);
    const connection = await connect({ servers: url, timeout: 2000 });
    return new EventsSink(url, `BENCH_OVERHEAD_${tag}`, `bench.overhead.${tag}`, connection);
  }

  /** Waits until the stream holds every event the turn log holds (the relay creates it with its first one). */
  async caughtUp(probe: DatabaseProbe): Promise<void> {
    const manager = await jetstreamManager(this.connection);
    const deadline = Date.now() + 120000;
    const expected = Number(
      (
        await probe.client.query<{ events: string }>(
          'SELECT COALESCE(sum(jsonb_array_length(events::jsonb)), 0)::text AS events FROM turn_log',
        )
      ).rows[0].events,
    );
    for (;;) {
      const stored = await manager.streams
        .info(this.stream)
        .then((info) => info.state.messages)
        .catch(() => 0);
      if (stored >= expected) return;
      if (Date.now() > deadline) {
        throw new Error(`relay behind: ${stored} of ${expected} events in ${this.stream}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async close(): Promise<void> {
    const manager = await jetstreamManager(this.connection);
    await manager.streams.delete(this.stream).catch(() => false);
    await this.connection.close();
  }
}

class Meter {
  /** The WAL flush count read at the end of the last phase, reused by a phase that follows it at once. */
  private flushesAtLastPhaseEnd: number | null = null;
  /** Every phase measured so far: what a run that stops early still reports. */
  readonly phases: Phase[] = [];

  constructor(
    private readonly processes: Processes,
    private readonly probe: DatabaseProbe,
    private readonly events: EventsSink | null,
  ) {}

  async snapshot(): Promise<Snapshot> {
    const pids = await this.probe.backendPids(SERVICE_APP_NAME);
    return {
      serviceCpu: processCpuMs(this.processes.service.pid ?? 0),
      modelCpu: processCpuMs(this.processes.model.pid ?? 0),
      modelRequests: await ask(
        this.processes.model,
        'model-requests',
        z.object({ modelRequests: z.number() }),
      ).then((answer) => answer.modelRequests),
      backendCpu: new Map(pids.map((pid) => [pid, processCpuMs(pid)])),
      counts: await queryCounts(this.processes.service),
      lsn: await this.probe.lsn(),
      databaseBytes: await this.probe.databaseBytes(),
    };
  }

  /**
   * Runs `work` (which returns one latency per turn) and measures everything around it; `countFlushes` adds the
   * server's WAL flushes (eleven seconds' wait on each side, or only after when the previous phase counted them
   * and nothing ran since: pass `'after previous'`).
   */
  async phase(
    name: string,
    work: () => Promise<number[]>,
    countFlushes: 'no' | 'yes' | 'after previous' = 'no',
  ): Promise<Phase> {
    // The waits for the flush count stay outside the CPU readings.
    const flushesBefore =
      countFlushes === 'yes'
        ? await this.probe.walFlushes()
        : countFlushes === 'after previous'
          ? this.flushesAtLastPhaseEnd
          : null;
    const before = await this.snapshot();
    const started = performance.now();
    const latencies = await work();
    const seconds = (performance.now() - started) / 1000;
    // The relay delivers after the commits: its work for this phase's turns belongs in this phase's figures.
    await this.events?.caughtUp(this.probe);
    const after = await this.snapshot();
    const flushesAfter = countFlushes === 'no' ? null : await this.probe.walFlushes();
    this.flushesAtLastPhaseEnd = flushesAfter;
    let postgresCpuMs = 0;
    for (const [pid, cpu] of after.backendCpu) postgresCpuMs += cpu - (before.backendCpu.get(pid) ?? 0);
    const phase: Phase = {
      name,
      turns: latencies.length,
      seconds,
      latencies,
      nodeCpuMs: after.serviceCpu - before.serviceCpu,
      postgresCpuMs,
      modelCpuMs: after.modelCpu - before.modelCpu,
      modelCalls: after.modelRequests - before.modelRequests,
      statements: after.counts.statements - before.counts.statements,
      transactions:
        after.counts.explicitCommits +
        after.counts.autocommits -
        before.counts.explicitCommits -
        before.counts.autocommits,
      wal: await this.probe.walBetween(before.lsn, after.lsn),
      walFlushes: flushesBefore === null || flushesAfter === null ? null : flushesAfter - flushesBefore,
      diskBytes: after.databaseBytes - before.databaseBytes,
    };
    this.phases.push(phase);
    return phase;
  }
}

function sessionsOf(tag: string, prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${tag}-${prefix}-${i}`);
}

/** `perConversation` turns on each session, interleaved so consecutive turns hit different conversations. */
function interleaved(sessions: string[], perConversation: number): TurnSpec[] {
  const specs: TurnSpec[] = [];
  for (let index = 1; index <= perConversation; index++) {
    for (const session of sessions) specs.push({ session, index });
  }
  return specs;
}

function run(port: number, specs: TurnSpec[], concurrency: number): Promise<number[]> {
  return pool(specs, concurrency, (spec) => postTurn(port, spec));
}

/** Live bytes (as stored, compressed) of the rows a set of conversations keeps, per table keyed by them. */
async function liveBytesByTable(probe: DatabaseProbe, keyPattern: string): Promise<Map<string, number>> {
  const tables = await probe.client.query<{ table: string }>(
    `SELECT c.relname AS table FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
        AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'conversation_key')`,
  );
  const bytes = new Map<string, number>();
  for (const { table } of tables.rows) {
    const rows = await probe.client.query<{ bytes: string | null }>(
      `SELECT sum(pg_column_size(t.*))::text AS bytes FROM "${table}" t WHERE conversation_key LIKE $1`,
      [keyPattern],
    );
    const stored = Number(rows.rows[0].bytes ?? 0);
    if (stored > 0) bytes.set(table, stored);
  }
  return bytes;
}

async function liveBytes(probe: DatabaseProbe, keyPattern: string): Promise<number> {
  return [...(await liveBytesByTable(probe, keyPattern)).values()].reduce((sum, bytes) => sum + bytes, 0);
}

interface Floor {
  oneInFlight: {
    latencies: number[];
    nodeCpuMs: number;
    postgresCpuMs: number;
    wal: WalUsage;
    walFlushes: number | null;
    diskBytes: number;
  };
  loaded: { seconds: number; iterations: number; nodeCpuMs: number; postgresCpuMs: number };
}

/**
 * The raw floor: one `pg` statement (one round trip, one commit) writing the checkpoint and the turn row a real
 * turn wrote, taken from the run, into two plain tables with the same keys.
 */
async function measureFloor(
  probe: DatabaseProbe,
  url: string,
  sampleKey: string,
  iterations: number,
  loadIterations: number,
  concurrency: number,
): Promise<Floor> {
  // The head checkpoint and its own turn log row (events and the stored response) of a sample conversation.
  const sample = await probe.client.query<{ state: string; events: string; response: string | null }>(
    `SELECT c.state::text AS state, t.events, t.response
       FROM checkpoints c JOIN turn_log t ON t.conversation_key = c.conversation_key AND t.version = c.version
      WHERE c.conversation_key = $1 ORDER BY c.version DESC LIMIT 1`,
    [sampleKey],
  );
  const { state, events, response } = sample.rows[0];
  await probe.client.query(`CREATE TABLE bench_floor_checkpoints (conversation_key text, version integer,
    state jsonb NOT NULL, checksum text NOT NULL, PRIMARY KEY (conversation_key, version))`);
  await probe.client.query(`CREATE TABLE bench_floor_turns (conversation_key text, version integer,
    events jsonb NOT NULL, response jsonb, PRIMARY KEY (conversation_key, version))`);
  const statement = `WITH checkpoint AS (
      INSERT INTO bench_floor_checkpoints (conversation_key, version, state, checksum) VALUES ($1, $2, $3::jsonb, $4))
    INSERT INTO bench_floor_turns (conversation_key, version, events, response) VALUES ($1, $2, $5::jsonb, $6::jsonb)`;
  const checksum = 'f'.repeat(64);
  const clients = await Promise.all(
    Array.from({ length: concurrency }, async () => {
      const client = new Client({ connectionString: url, application_name: 'bench-floor' });
      await client.connect();
      return client;
    }),
  );
  try {
    const write = (client: Client, i: number) =>
      client.query(statement, [`floor-${i % 50}`, Math.floor(i / 50) + 1, state, checksum, events, response]);
    for (let i = 0; i < 20; i++) await write(clients[0], 1_000_000 + i);
    const pids = await probe.backendPids('bench-floor');
    const backendCpu = () => pids.reduce((sum, pid) => sum + processCpuMs(pid), 0);
    const startFlushes = await probe.walFlushes();
    const startLsn = await probe.lsn();
    const startDisk = await probe.databaseBytes();
    const cpu0 = process.cpuUsage();
    const pg0 = backendCpu();
    const latencies: number[] = [];
    for (let i = 0; i < iterations; i++) {
      const t0 = performance.now();
      await write(clients[0], i);
      latencies.push(performance.now() - t0);
    }
    const cpu1 = process.cpuUsage(cpu0);
    const pg1 = backendCpu();
    const endLsn = await probe.lsn();
    const endDisk = await probe.databaseBytes();
    const endFlushes = await probe.walFlushes();
    const pgLoadStart = backendCpu();
    const load0 = process.cpuUsage();
    const loadStarted = performance.now();
    let next = 0;
    await Promise.all(
      clients.map(async (client) => {
        while (next < loadIterations) await write(client, 2_000_000 + next++);
      }),
    );
    const seconds = (performance.now() - loadStarted) / 1000;
    const load1 = process.cpuUsage(load0);
    const pg2 = backendCpu();
    return {
      oneInFlight: {
        latencies,
        nodeCpuMs: (cpu1.user + cpu1.system) / 1000,
        postgresCpuMs: pg1 - pg0,
        wal: await probe.walBetween(startLsn, endLsn),
        walFlushes: startFlushes === null || endFlushes === null ? null : endFlushes - startFlushes,
        diskBytes: endDisk - startDisk,
      },
      loaded: {
        seconds,
        iterations: loadIterations,
        nodeCpuMs: (load1.user + load1.system) / 1000,
        postgresCpuMs: pg2 - pgLoadStart,
      },
    };
  } finally {
    await Promise.all(clients.map((client) => client.end()));
  }
}

/** Per-node durations recorded by the turns of the given conversations (AGENT_COMPLETED in their turn log rows). */
async function nodeDurations(probe: DatabaseProbe, keyPattern: string): Promise<Map<string, number[]>> {
  const rows = await probe.client.query<{ node: string; duration_ms: number }>(
    `SELECT n->>'node' AS node, (n->>'duration_ms')::float8 AS duration_ms
       FROM turn_log t, jsonb_array_elements(t.events::jsonb) e, jsonb_array_elements(e->'payload'->'nodes') n
      WHERE t.conversation_key LIKE $1 AND e->>'name' = 'AGENT_COMPLETED'`,
    [keyPattern],
  );
  const byNode = new Map<string, number[]>();
  for (const row of rows.rows) byNode.set(row.node, [...(byNode.get(row.node) ?? []), row.duration_ms]);
  return byNode;
}

/**
 * Events the given conversations' turns published, and the mean size of one as a destination receives it (the
 * event document around the payload, envelope included; jsonb's text is a little wider than the relay's JSON).
 */
async function publishedEvents(
  probe: DatabaseProbe,
  keyPattern: string,
): Promise<{ events: number; bytes: number }> {
  const rows = await probe.client.query<{ events: string; bytes: string | null }>(
    `SELECT count(*)::text AS events,
            avg(octet_length(jsonb_build_object(
              'id', e.conversation_key || ':' || (e.id / 65536) || ':' || e.seq, 'type', e.name,
              'timestamp', e.payload->>'at', 'data', e.payload)::text))::text AS bytes
       FROM session_events e WHERE e.conversation_key LIKE $1`,
    [keyPattern],
  );
  return { events: Number(rows.rows[0].events), bytes: Number(rows.rows[0].bytes ?? 0) };
}

/** The per-turn inputs of the capacity model, from the loaded phase and the rows the 1-in-flight turns left. */
function capacityInputs(
  loaded: Phase,
  liveByTable: Map<string, number>,
  turns: number,
  conversations: number,
  published: { events: number; bytes: number },
): CapacityInputs {
  const sum = (tables: string[]) => tables.reduce((total, table) => total + (liveByTable.get(table) ?? 0), 0);
  return {
    nodeCpuMs: loaded.nodeCpuMs / loaded.turns,
    postgresCpuMs: loaded.postgresCpuMs / loaded.turns,
    walBytes: (loaded.wal.databaseBytes ?? loaded.wal.clusterBytes) / loaded.turns,
    walFlushes: loaded.walFlushes === null ? null : loaded.walFlushes / loaded.turns,
    agedBytesPerTurn: sum(AGED_TABLES) / turns,
    keptBytesPerConversation: sum(KEPT_TABLES) / conversations,
    turnsPerConversation: turns / conversations,
    eventsPerTurn: published.events / turns,
    eventBytes: published.bytes,
  };
}

/** What a run that stopped early still knows: each phase it measured, and why it stopped. */
function partialReport(phases: Phase[], error: unknown, header: string): string[] {
  return [
    '# Overhead benchmark (incomplete)',
    '',
    header,
    '',
    `Stopped early: ${error instanceof Error ? error.message : String(error)}`,
    '',
    '| phase | turns | p50 | Node CPU/turn | Postgres CPU/turn | statements/turn | WAL/turn |',
    '|---|---|---|---|---|---|---|',
    ...phases.map(
      (phase) =>
        `| ${phase.name} | ${phase.turns} | ${round(percentile(phase.latencies, 50), 2)} ms | ${perTurn(phase.nodeCpuMs, phase.turns)} ms | ${perTurn(phase.postgresCpuMs, phase.turns)} ms | ${perTurn(phase.statements, phase.turns)} | ${walCell(phase.wal, phase.turns)} |`,
    ),
    '',
  ];
}

const perTurn = (value: number, turns: number, digits = 2) => round(value / Math.max(1, turns), digits);
const kb = (bytes: number) => `${round(bytes / 1024, 1)} KB`;

function walCell(wal: WalUsage, turns: number): string {
  const own = wal.databaseBytes === null ? '' : `${kb(wal.databaseBytes / turns)} (this database) / `;
  return `${own}${kb(wal.clusterBytes / turns)} (server)`;
}

function flushesCell(flushes: number | null, turns: number): string {
  return flushes === null ? 'n/a' : String(perTurn(flushes, turns));
}

function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

async function main(): Promise<void> {
  const baseUrl = process.env.DATABASE_URL;
  if (!baseUrl) throw new BenchFailure('it measures the runtime against a Postgres server: set DATABASE_URL');
  await ensureDatabase(baseUrl);
  const loadAtStart = loadAverage();
  const database = await benchDatabase(baseUrl);
  const { model, baseUrl: modelUrl } = await startModel();
  let service: ChildProcess | null = null;
  let tools: ChildProcess | null = null;
  let probe: DatabaseProbe | null = null;
  let events: EventsSink | null = null;
  let meter: Meter | null = null;
  let header = `Node ${process.version} · load average ${loadAtStart} at start`;
  try {
    const toolServer = await startToolServer(database.url);
    tools = toolServer.tools;
    events = settings.eventsNatsUrl ? await EventsSink.open(settings.eventsNatsUrl) : null;
    const started = await startService(database.url, modelUrl, toolServer.url, events);
    service = started.service;
    const port = started.port;
    probe = await DatabaseProbe.connect(database.url);
    const serverVersion = (await probe.client.query<{ server_version: string }>('SHOW server_version'))
      .rows[0].server_version;
    meter = new Meter({ service, model }, probe, events);
    const tag = `ovh${Date.now().toString(36)}`;
    header = `Postgres ${serverVersion} on the same machine · Node ${process.version} · ${cpus().length} cores · load average ${loadAtStart} at start`;
    console.log(
      `bench:overhead — database ${database.name} (Postgres ${serverVersion}), WAL attribution: ${probe.attributesWal ? 'pg_walinspect' : 'server-wide LSN only'}; load average ${loadAtStart}`,
    );

    // Warm-up: connections, caches, and enough turns for V8 to optimise the hot functions (a production process
    // is warm; a cold one spends several ms per turn in the compiler threads, and after 400 turns the figures
    // were still 10% above those after 2,000).
    await run(port, interleaved(sessionsOf(tag, 'warm', 40), Math.ceil(settings.warmupTurns / 40)), 8);

    const oneSessions = sessionsOf(tag, 'one', Math.max(1, Math.round(settings.turns / 10)));
    const one = await meter.phase('1 in flight', () => run(port, interleaved(oneSessions, 10), 1), 'yes');
    console.log(`1 in flight: ${one.turns} turns, p50 ${round(percentile(one.latencies, 50), 2)} ms`);
    const loadSessions = sessionsOf(tag, 'load', settings.concurrency * 10);
    const loaded = await meter.phase(
      `${settings.concurrency} in flight`,
      () =>
        run(
          port,
          interleaved(loadSessions, Math.ceil(settings.loadTurns / loadSessions.length)),
          settings.concurrency,
        ),
      'after previous',
    );
    console.log(`${settings.concurrency} in flight: ${round(loaded.turns / loaded.seconds, 1)} turns/s`);

    const profileSessions = sessionsOf(tag, 'profile', 30);
    const split = await profileCpu(
      service,
      async () => {
        await run(port, interleaved(profileSessions, 10), 1);
      },
      join(reportDirectory('bench', false), 'overhead.cpuprofile'),
    );

    // Growth with conversation length: one conversation, windows ending at turn 10, 50 and the last.
    const growthSession = `${tag}-growth`;
    const growth: { label: string; phase: Phase; checkpointBytes: number }[] = [];
    const windows: [number, number, string][] = [
      [1, 10, 'turns 1–10'],
      [41, 50, 'turns 41–50'],
      [
        settings.growthTurns - 9,
        settings.growthTurns,
        `turns ${settings.growthTurns - 9}–${settings.growthTurns}`,
      ],
    ];
    let nextTurn = 1;
    for (const [from, to, label] of windows) {
      if (nextTurn < from) {
        await run(
          port,
          Array.from({ length: from - nextTurn }, (_, i) => ({
            session: growthSession,
            index: nextTurn + i,
          })),
          1,
        );
      }
      const phase = await meter.phase(label, () =>
        run(
          port,
          Array.from({ length: to - from + 1 }, (_, i) => ({ session: growthSession, index: from + i })),
          1,
        ),
      );
      nextTurn = to + 1;
      const size = await probe.client.query<{ size: number }>(
        'SELECT size_bytes AS size FROM checkpoints WHERE conversation_key = $1 ORDER BY version DESC LIMIT 1',
        [`${TENANT}:${growthSession}`],
      );
      growth.push({ label, phase, checkpointBytes: size.rows[0]?.size ?? 0 });
    }
    const growthLive = await liveBytes(probe, `${TENANT}:${growthSession}`);

    // Growth with the number of conversations: new conversations, one turn each.
    const total = settings.conversations;
    const manySessions = sessionsOf(tag, 'many', total);
    const spread: { label: string; phase: Phase }[] = [];
    const conversationWindows: [number, number][] = [
      [0, 20],
      [Math.floor(total / 2) - 10, Math.floor(total / 2) + 10],
      [total - 20, total],
    ];
    let nextConversation = 0;
    for (const [from, to] of conversationWindows) {
      if (nextConversation < from) {
        await run(
          port,
          manySessions.slice(nextConversation, from).map((session) => ({ session, index: 1 })),
          1,
        );
      }
      const phase = await meter.phase(`conversations ${from + 1}–${to}`, () =>
        run(
          port,
          manySessions.slice(from, to).map((session) => ({ session, index: 1 })),
          1,
        ),
      );
      spread.push({ label: `conversations ${from + 1}–${to}`, phase });
      nextConversation = to;
    }
    const manyLive = await liveBytes(probe, `${TENANT}:${tag}-many-%`);
    const oneLiveByTable = await liveBytesByTable(probe, `${TENANT}:${tag}-one-%`);
    const oneLive = [...oneLiveByTable.values()].reduce((sum, bytes) => sum + bytes, 0);
    const nodes = await nodeDurations(probe, `${TENANT}:${tag}-one-%`);
    const capacity = capacityInputs(
      loaded,
      oneLiveByTable,
      one.turns,
      oneSessions.length,
      await publishedEvents(probe, `${TENANT}:${tag}-one-%`),
    );

    await stop(service);
    const floor = await measureFloor(
      probe,
      database.url,
      `${TENANT}:${oneSessions[0]}`,
      settings.turns,
      settings.loadTurns,
      settings.concurrency,
    );
    const loadAtEnd = loadAverage();

    const f1 = floor.oneInFlight;
    const floorThroughput = floor.loaded.iterations / floor.loaded.seconds;
    const ratio = (value: number, base: number) => (base > 0 ? `${round(value / base, 1)}×` : '—');
    const p = (values: number[], q: number) => round(percentile(values, q), 2);
    const oneNode = one.nodeCpuMs / one.turns;
    const floorNode = f1.nodeCpuMs / f1.latencies.length;
    const onePg = one.postgresCpuMs / one.turns;
    const floorPg = f1.postgresCpuMs / f1.latencies.length;
    const summary = [
      '| per turn | 1 in flight | ' +
        `${settings.concurrency} in flight` +
        ' | raw `pg` floor | runtime ÷ floor |',
      '|---|---|---|---|---|',
      `| Node CPU (service process) | ${perTurn(one.nodeCpuMs, one.turns)} ms | ${perTurn(loaded.nodeCpuMs, loaded.turns)} ms | ${round(floorNode, 3)} ms | ${ratio(oneNode, floorNode)} |`,
      `| Postgres CPU (its backends) | ${perTurn(one.postgresCpuMs, one.turns)} ms | ${perTurn(loaded.postgresCpuMs, loaded.turns)} ms | ${round(floorPg, 3)} ms | ${ratio(onePg, floorPg)} |`,
      `| SQL statements (round trips) | ${perTurn(one.statements, one.turns)} | ${perTurn(loaded.statements, loaded.turns)} | 1 | ${ratio(one.statements / one.turns, 1)} |`,
      `| transactions | ${perTurn(one.transactions, one.turns)} | ${perTurn(loaded.transactions, loaded.turns)} | 1 | |`,
      `| commit records in WAL | ${one.wal.commits === null ? 'n/a' : perTurn(one.wal.commits, one.turns)} | ${loaded.wal.commits === null ? 'n/a' : perTurn(loaded.wal.commits, loaded.turns)} | ${f1.wal.commits === null ? 'n/a' : perTurn(f1.wal.commits, f1.latencies.length)} | |`,
      `| WAL flushes (fsyncs, whole server) | ${flushesCell(one.walFlushes, one.turns)} | ${flushesCell(loaded.walFlushes, loaded.turns)} | ${flushesCell(f1.walFlushes, f1.latencies.length)} | |`,
      `| WAL | ${walCell(one.wal, one.turns)} | ${walCell(loaded.wal, loaded.turns)} | ${walCell(f1.wal, f1.latencies.length)} | ${f1.wal.databaseBytes && one.wal.databaseBytes !== null ? ratio(one.wal.databaseBytes / one.turns, f1.wal.databaseBytes / f1.latencies.length) : ''} |`,
      `| of which full-page images | ${one.wal.fullPageBytes === null ? 'n/a' : kb(one.wal.fullPageBytes / one.turns)} | ${loaded.wal.fullPageBytes === null ? 'n/a' : kb(loaded.wal.fullPageBytes / loaded.turns)} | ${f1.wal.fullPageBytes === null ? 'n/a' : kb(f1.wal.fullPageBytes / f1.latencies.length)} | |`,
      `| retained: database growth | ${kb(one.diskBytes / one.turns)} | ${kb(loaded.diskBytes / loaded.turns)} | ${kb(f1.diskBytes / f1.latencies.length)} | |`,
      `| retained: live rows (10-turn conversations) | ${kb(oneLive / one.turns)}: ${[...oneLiveByTable]
        .sort((a, b) => b[1] - a[1])
        .map(([table, bytes]) => `${table} ${round(bytes / one.turns / 1024, 2)} KB`)
        .join(', ')} | | | |`,
      `| latency p50 / p99 | ${p(one.latencies, 50)} / ${p(one.latencies, 99)} ms | ${p(loaded.latencies, 50)} / ${p(loaded.latencies, 99)} ms | ${p(f1.latencies, 50)} / ${p(f1.latencies, 99)} ms | ${ratio(percentile(one.latencies, 50), percentile(f1.latencies, 50))} |`,
      `| throughput | ${round(one.turns / one.seconds, 1)} turns/s | ${round(loaded.turns / loaded.seconds, 1)} turns/s | ${round(floorThroughput, 1)} /s at ${settings.concurrency} | ${ratio(floorThroughput, loaded.turns / loaded.seconds)} slower |`,
      `| model calls (scripted model's own CPU, not counted above) | ${perTurn(one.modelCalls, one.turns)} (${perTurn(one.modelCpuMs, one.turns)} ms) | ${perTurn(loaded.modelCalls, loaded.turns)} (${perTurn(loaded.modelCpuMs, loaded.turns)} ms) | | |`,
    ];
    const areas: CpuArea[] = [
      'HTTP layer',
      'model transport',
      'store',
      'graph',
      'observability',
      'garbage collection',
      'Node runtime (sockets, microtasks, native)',
    ];
    const splitTable = [
      '| area | share of sampled CPU | ≈ ms per turn (of the 1-in-flight Node CPU) |',
      '|---|---|---|',
      ...areas.map(
        (area) =>
          `| ${area} | ${round((split.get(area) ?? 0) * 100, 1)}% | ${round((split.get(area) ?? 0) * oneNode, 2)} |`,
      ),
    ];
    const growthRow = (label: string, phase: Phase, extra: string) =>
      `| ${label} | ${p(phase.latencies, 50)} ms | ${perTurn(phase.nodeCpuMs, phase.turns)} ms | ${perTurn(phase.postgresCpuMs, phase.turns)} ms | ${perTurn(phase.statements, phase.turns)} | ${phase.wal.commits === null ? 'n/a' : perTurn(phase.wal.commits, phase.turns)} | ${kb((phase.wal.databaseBytes ?? phase.wal.clusterBytes) / phase.turns)} | ${extra} |`;
    const growthTable = [
      '| window (1 in flight) | p50 | Node CPU | Postgres CPU | statements | commits | WAL | note |',
      '|---|---|---|---|---|---|---|---|',
      ...growth.map(({ label, phase, checkpointBytes }) =>
        growthRow(`one conversation, ${label}`, phase, `checkpoint ${kb(checkpointBytes)}`),
      ),
      ...spread.map(({ label, phase }) =>
        growthRow(`new ${label} of ${total}`, phase, `database +${kb(phase.diskBytes / phase.turns)}/turn`),
      ),
    ];
    const nodeTable = [
      '| node | p50 ms | p99 ms | mean ms |',
      '|---|---|---|---|',
      ...[...nodes.entries()].map(
        ([node, values]) => `| ${node} | ${p(values, 50)} | ${p(values, 99)} | ${round(mean(values), 3)} |`,
      ),
    ];
    const perTurnHeading = `## Per turn (${one.turns} turns at 1 in flight, ${loaded.turns} at ${settings.concurrency} in flight)`;
    const lines = [
      '# Overhead benchmark',
      '',
      `Run: ${new Date().toISOString()} · Postgres ${serverVersion} on the same machine · Node ${process.version} · ${cpus().length} cores shared by the service, Postgres, the scripted model and the load · load average ${loadAtStart} at start, ${loadAtEnd} at the end.`,
      '',
      'The model is a scripted OpenAI-compatible server in its own process that answers every call at once: what remains is the runtime itself (HTTP, auth, validation, lease, checkpoint load, the graph with the input guardrail verdict, the continuity classifier and the agent, events, the commit). The service runs as in production (`NODE_ENV=production`, API keys, `ENABLE_ROUTE_STICKINESS=true`) with the reference MCP server the shipped configuration names. Each turn carries a `message_id`.' +
        (settings.eventsNatsUrl
          ? ' Every event is relayed to a NATS JetStream stream of its own (`BENCH_EVENTS_NATS_URL`); each phase is measured once the relay has caught up, so its work is in the figures.'
          : ' No event destination is configured (the default; `BENCH_EVENTS_NATS_URL` adds one).'),
      '',
      perTurnHeading,
      '',
      ...summary,
      '',
      'Node CPU is the service process (all threads); Postgres CPU is the backends serving it; the floor\'s Node CPU is the bench process running the raw `pg` client. WAL "this database" counts the records of the bench database\'s pages and transactions (pg_walinspect); "server" is the `pg_current_wal_lsn()` delta, which includes whatever else the server was doing. WAL flushes: `pg_stat_wal.wal_sync` of the whole server, the WAL writer\'s background flushes included (a commit that does not wait for its flush leaves it to the next commit that does, or to the WAL writer). Retained: growth of the database size per turn (tables, indexes, not yet reusable space) and the live rows the turns left behind (as stored, compressed; without indexes).',
      '',
      ...(probe.walAttributionLost
        ? [
            `WAL of some phases could not be attributed to this database (${probe.walAttributionLost}): they show the server's WAL, which includes whatever else the server was doing.`,
            '',
          ]
        : []),
      CAPACITY_HEADING,
      '',
      `What a deployment needs at ${CAPACITY_RATES.map((rate) => rate.toLocaleString('en-US')).join(', ')} turns/s, worked out from this run's figures (the model's own latency and cost aside: a model endpoint is sized on its own). Inputs:`,
      '',
      ...capacityInputLines(capacity),
      '',
      ...capacityTable(capacity, CAPACITY_RATES),
      '',
      `Assumptions: replicas and Postgres cores planned at ${DEFAULT_ASSUMPTIONS.utilization * 100}% busy (headroom for peaks and a failed node); a replica runs its JavaScript on one core; Postgres nodes of ${DEFAULT_ASSUMPTIONS.coresPerPostgresNode} cores (one node up to that, then a distributed layout: docs/operations.md#scaling-out); aged rows are the turn log, idempotency records and failed runs, kept ${DEFAULT_ASSUMPTIONS.retentionDays} days (the default retention), as stored without indexes; kept rows are each conversation's session row and last checkpoint versions, which do not age out; every event goes to NATS once and to each webhook endpoint subscribed to it. Turns in flight at once are the rate times the turn's duration, mostly the model's: memory and connections for those are not in this table.`,
      '',
      SPLIT_HEADING,
      '',
      ...splitTable,
      '',
      GROWTH_HEADING,
      '',
      ...growthTable,
      '',
      `Live rows kept by the ${settings.growthTurns}-turn conversation: ${kb(growthLive)} (${kb(growthLive / settings.growthTurns)} per turn); by the ${total} one-turn conversations: ${kb(manyLive / total)} per conversation.`,
      '',
      '## Per node (1 in flight)',
      '',
      ...nodeTable,
      '',
      'Reproduce: `DATABASE_URL=postgres://user@host:5432/db npm run bench:overhead` (add `-- --update-report` to rewrite this file).',
      '',
    ];
    const path = writeReport('overhead.md', lines.join('\n'));
    for (const heading of [perTurnHeading, SPLIT_HEADING, GROWTH_HEADING]) {
      console.log(`\n${heading.replace(/^## /, '')}\n${consoleTable(lines, heading)}`);
    }
    console.log(
      `\nCapacity model inputs\n${capacityInputLines(capacity).join('\n')}\n\n${consoleTable(lines, CAPACITY_HEADING)}`,
    );
    console.log(`report: ${path}`);
  } catch (error) {
    const path = writeReport('overhead.md', partialReport(meter?.phases ?? [], error, header).join('\n'));
    throw new BenchFailure(
      `stopped early: ${error instanceof Error ? error.message : String(error)} (partial report: ${path})`,
      1,
    );
  } finally {
    if (service) await stop(service);
    if (tools) await stop(tools);
    await events?.close();
    await stop(model);
    await probe?.close();
    agent.destroy();
    if (database.created) await dropDatabase(baseUrl, database.name);
  }
}

runBench('bench:overhead', main);
