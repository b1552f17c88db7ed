/**
 * What bench:overhead reads around each phase: CPU of processes (the service, the model, Postgres backends)
 * from /proc, WAL from the server, statement counts and CPU profiles from the service over IPC.
 */
import { ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { Client } from 'pg';
import { z } from 'zod';
import type { QueryCounts } from './query-counter';

/** CPU time of a process, all threads, in ms (from the scheduler's nanosecond accounting); 0 once it is gone. */
export function processCpuMs(pid: number): number {
  try {
    let ns = 0;
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    }
    return ns / 1e6;
  } catch {
    return 0;
  }
}

/**
 * Sends `request` to a child over IPC and resolves with the first answer `answer` accepts; rejects when the child
 * is gone or goes before it answers, so the bench reports it instead of dying on an unhandled error.
 */
export function ask<T>(child: ChildProcess, request: string | null, answer: z.ZodType<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    const fail = (error: Error) => {
      done();
      reject(error);
    };
    const timer = setTimeout(() => fail(new Error(`no answer to ${request} from ${child.pid}`)), 60000);
    const onMessage = (message: unknown) => {
      const parsed = answer.safeParse(message);
      if (!parsed.success) return;
      done();
      resolve(parsed.data);
    };
    const onExit = (code: number | null, signal: string | null) =>
      fail(
        new Error(`process ${child.pid} exited (${signal ?? `code ${code}`}) before answering ${request}`),
      );
    child.on('message', onMessage);
    child.on('exit', onExit);
    if (request === null) return;
    if (!child.connected) {
      fail(new Error(`process ${child.pid} is gone: cannot ask ${request}`));
      return;
    }
    child.send(request, (error) => {
      if (error) fail(error);
    });
  });
}

const queryCountsAnswer = z.object({
  queryCounts: z.object({
    statements: z.number(),
    explicitCommits: z.number(),
    autocommits: z.number(),
    rollbacks: z.number(),
  }),
});

export async function queryCounts(service: ChildProcess): Promise<QueryCounts> {
  return (await ask(service, 'query-counts', queryCountsAnswer)).queryCounts;
}

const cpuProfile = z.object({
  nodes: z.array(
    z.object({
      id: z.number(),
      callFrame: z.object({ functionName: z.string(), url: z.string() }),
      children: z.array(z.number()).optional(),
    }),
  ),
  samples: z.array(z.number()),
  timeDeltas: z.array(z.number()),
});

/** Samples the service's CPU while `work` runs. */
export async function profileCpu(
  service: ChildProcess,
  work: () => Promise<void>,
  savePath?: string,
): Promise<Map<CpuArea, number>> {
  await ask(service, 'profile-start', z.object({ profiling: z.literal(true) }));
  await work();
  const { profile } = await ask(service, 'profile-stop', z.object({ profile: cpuProfile.passthrough() }));
  // The whole profile, for Chrome DevTools or `node --cpu-prof`-style tools, when the split is not enough.
  if (savePath) {
    mkdirSync(dirname(savePath), { recursive: true });
    writeFileSync(savePath, JSON.stringify(profile));
  }
  return cpuSplit(profile);
}

export interface WalUsage {
  /** pg_current_wal_lsn() delta: every database of the server. */
  clusterBytes: number;
  /** Records of the bench database's transactions and pages (pg_walinspect), null without it. */
  databaseBytes: number | null;
  /** Full-page images among them. */
  fullPageBytes: number | null;
  /** Commit records of the bench database's transactions. */
  commits: number | null;
}

/** Reads from the bench database: WAL position and attribution, Postgres backends of the service, sizes. */
export class DatabaseProbe {
  private walInspect = false;
  private databaseOid = '';
  /** Why WAL stopped being attributed to the bench database during the run (null: it never did). */
  private walInspectLost: string | null = null;

  private constructor(readonly client: Client) {}

  static async connect(url: string): Promise<DatabaseProbe> {
    const client = new Client({ connectionString: url, application_name: 'bench-overhead' });
    // A connection the server ends (a restart, a terminated backend) fails the next query, which the bench reports;
    // the event itself must not end the process.
    client.on('error', () => undefined);
    await client.connect();
    const probe = new DatabaseProbe(client);
    const oid = await client.query<{ oid: string }>(
      'SELECT oid::text FROM pg_database WHERE datname = current_database()',
    );
    probe.databaseOid = oid.rows[0].oid;
    try {
      await client.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
      probe.walInspect = true;
    } catch {
      probe.walInspect = false;
    }
    return probe;
  }

  get attributesWal(): boolean {
    return this.walInspect;
  }

  /** Why per-database WAL figures fell back to the server's for some phase, or null. */
  get walAttributionLost(): string | null {
    return this.walInspectLost;
  }

  async lsn(): Promise<string> {
    return (await this.client.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn;
  }

  /** Backend pids serving the application `name` on this database. */
  async backendPids(name: string): Promise<number[]> {
    const rows = await this.client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
      [name],
    );
    return rows.rows.map((row) => row.pid);
  }

  /**
   * WAL flushes (fsyncs) of the whole server so far (`pg_stat_wal.wal_sync`, Postgres 14+; null before). A backend
   * that reported its statistics less than a second ago reports again only after ten idle seconds, so the count
   * is read eleven seconds after the work.
   */
  async walFlushes(): Promise<number | null> {
    await new Promise((resolve) => setTimeout(resolve, 11_000));
    try {
      const rows = await this.client.query<{ flushes: string }>(
        'SELECT wal_sync::text AS flushes FROM pg_stat_wal',
      );
      return Number(rows.rows[0].flushes);
    } catch {
      return null;
    }
  }

  async databaseBytes(): Promise<number> {
    const rows = await this.client.query<{ size: string }>(
      'SELECT pg_database_size(current_database())::text AS size',
    );
    return Number(rows.rows[0].size);
  }

  /** WAL written between two positions; attributed to this database when pg_walinspect is available. */
  async walBetween(start: string, end: string): Promise<WalUsage> {
    const delta = await this.client.query<{ bytes: string }>(
      'SELECT pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn)::text AS bytes',
      [start, end],
    );
    const clusterBytes = Number(delta.rows[0].bytes);
    if (!this.walInspect || clusterBytes <= 0) {
      return { clusterBytes, databaseBytes: null, fullPageBytes: null, commits: null };
    }
    // The records must be flushed before they can be read.
    for (let i = 0; i < 50; i++) {
      const flushed = await this.client.query<{ ok: boolean }>(
        'SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn AS ok',
        [end],
      );
      if (flushed.rows[0].ok) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // A busy server may have recycled the phase's WAL segments already ("requested WAL segment … has already been
    // removed"): the phase keeps the server-wide figure, and the report says why.
    const rows = await this.client
      .query<{ bytes: string; fpi: string; commits: string }>(
        `WITH r AS (SELECT xid::text AS xid, resource_manager, record_type, record_length, fpi_length, block_ref
                    FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)),
            mine AS (SELECT DISTINCT xid FROM r WHERE block_ref LIKE '%/' || $3 || '/%' AND xid <> '0')
       SELECT COALESCE(sum(record_length), 0)::text AS bytes, COALESCE(sum(fpi_length), 0)::text AS fpi,
              count(*) FILTER (WHERE resource_manager = 'Transaction' AND record_type LIKE 'COMMIT%')::text AS commits
         FROM r WHERE block_ref LIKE '%/' || $3 || '/%' OR xid IN (SELECT xid FROM mine)`,
        [start, end, this.databaseOid],
      )
      .catch((error: unknown) => {
        this.walInspectLost = error instanceof Error ? error.message : String(error);
        return null;
      });
    if (rows === null) return { clusterBytes, databaseBytes: null, fullPageBytes: null, commits: null };
    return {
      clusterBytes,
      databaseBytes: Number(rows.rows[0].bytes),
      fullPageBytes: Number(rows.rows[0].fpi),
      commits: Number(rows.rows[0].commits),
    };
  }

  async close(): Promise<void> {
    await this.client.end();
  }
}

export type CpuArea =
  | 'HTTP layer'
  | 'model transport'
  | 'store'
  | 'graph'
  | 'observability'
  | 'garbage collection'
  | 'Node runtime (sockets, microtasks, native)';

const PACKAGE_AREAS: [RegExp, CpuArea][] = [
  [/^(pg|pg-protocol|pg-pool|pg-types|pgpass|postgres-.*|typeorm)$/, 'store'],
  [/^(openai|undici|agentkeepalive|formdata-node|node-fetch)$/, 'model transport'],
  [
    /^(fastify|@fastify\/.*|find-my-way|light-my-request|avvio|fast-json-stringify|secure-json-parse|fast-querystring|pino|pino-http|pino-std-serializers|sonic-boom|nestjs-pino|class-validator|validator|class-transformer|@nestjs\/core|@nestjs\/platform-fastify|@nestjs\/throttler|helmet|rxjs)$/,
    'HTTP layer',
  ],
  [/^(prom-client|@opentelemetry\/.*|eventemitter2|@nestjs\/event-emitter)$/, 'observability'],
];

/**
 * Node's http modules that serve the client and the server alike: a frame in them counts for the first caller
 * that tells which (the HTTP layer when none does).
 */
const SHARED_HTTP_MODULE = /^node:_http_(outgoing|incoming|common)$/;

function areaOf(url: string): CpuArea | null {
  // The model transport is the openai SDK over a node:http client (its Response and body are undici's).
  if (/deps\/undici|internal\/webstreams|^node:_http_(client|agent)$/.test(url)) return 'model transport';
  if (/^node:_http_server$/.test(url)) return 'HTTP layer';
  const pkg = /.*node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1];
  if (pkg) return PACKAGE_AREAS.find(([pattern]) => pattern.test(pkg))?.[1] ?? null;
  if (/\/apps\/agent-runtime\//.test(url)) return 'HTTP layer';
  const lib = /\/libs\/([^/]+)\//.exec(url)?.[1];
  if (!lib) return null;
  if (lib === 'checkpoint' || lib === 'database') return 'store';
  if (lib === 'llm') return 'model transport';
  if (lib === 'observability') return 'observability';
  return 'graph';
}

/**
 * Splits the sampled CPU by area: each sample goes to the area of the innermost frame that belongs to a
 * known package or to the project (utilities such as zod, JSON or Node internals count for their caller).
 * Returns the share of each area in the sampled (non-idle) time.
 */
function cpuSplit(profile: z.infer<typeof cpuProfile>): Map<CpuArea, number> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const areaOfNode = new Map<number, CpuArea | 'idle'>();
  const resolve = (id: number): CpuArea | 'idle' => {
    const cached = areaOfNode.get(id);
    if (cached) return cached;
    const node = byId.get(id);
    let area: CpuArea | 'idle' = 'Node runtime (sockets, microtasks, native)';
    if (node?.callFrame.functionName === '(idle)') area = 'idle';
    else if (node?.callFrame.functionName === '(garbage collector)') area = 'garbage collection';
    else {
      let found: CpuArea | null = null;
      let shared = false;
      for (
        let current: number | undefined = id;
        !found && current !== undefined;
        current = parent.get(current)
      ) {
        const url = byId.get(current)?.callFrame.url ?? '';
        shared ||= SHARED_HTTP_MODULE.test(url);
        found = areaOf(url);
      }
      area = found ?? (shared ? 'HTTP layer' : area);
    }
    areaOfNode.set(id, area);
    return area;
  };
  const totals = new Map<CpuArea, number>();
  let sum = 0;
  profile.samples.forEach((id, index) => {
    const area = resolve(id);
    const micros = profile.timeDeltas[index + 1] ?? 0;
    if (area === 'idle') return;
    totals.set(area, (totals.get(area) ?? 0) + micros);
    sum += micros;
  });
  for (const [area, micros] of totals) totals.set(area, sum > 0 ? micros / sum : 0);
  return totals;
}
