import { Client, escapeLiteral, Pool, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import { DataSource, QueryRunner } from 'typeorm';
import { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { DatabaseService } from '@agent/database';
import { CONVERSATION_TABLES } from './partitioned-schema';

/** Which partitions of each per-conversation table one statement touched, and how that was seen. */
export interface StatementObservation {
  /** What the test was doing when the statement ran. */
  label: string;
  sql: string;
  /** table → partitions its generic plan scans (initial pruning applied), as EXPLAIN shows them. */
  planned: Map<string, Set<string>>;
  /** table → partitions the statement scanned or wrote (its transaction's table statistics), triggers included. */
  touched: Map<string, Set<string>>;
}

/** A JS value as the SQL literal EXECUTE takes (arrays in Postgres's array text form). */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value instanceof Date) return escapeLiteral(value.toISOString());
  if (Array.isArray(value)) {
    const items = value.map((item: unknown) =>
      item === null
        ? 'NULL'
        : `"${(typeof item === 'string' ? item : JSON.stringify(item)).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`,
    );
    return escapeLiteral(`{${items.join(',')}}`);
  }
  return escapeLiteral(typeof value === 'string' ? value : JSON.stringify(value));
}

/** `<table>_p<n>` → `<table>`, for the per-conversation tables' partitions. */
function tableOf(partition: string): string | null {
  const match = /^(.*)_p\d+$/.exec(partition);
  return match && (CONVERSATION_TABLES as readonly string[]).includes(match[1]) ? match[1] : null;
}

function byTable(partitions: Iterable<string>): Map<string, Set<string>> {
  const tables = new Map<string, Set<string>>();
  for (const partition of partitions) {
    const table = tableOf(partition);
    if (table) tables.set(table, new Set([...(tables.get(table) ?? []), partition]));
  }
  return tables;
}

/** The relations a plan's nodes scan (not a ModifyTable's list of target tables, which is never pruned). */
function scannedRelations(node: unknown, into: Set<string>): Set<string> {
  if (typeof node !== 'object' || node === null) return into;
  if (Array.isArray(node)) {
    for (const item of node) scannedRelations(item, into);
    return into;
  }
  const fields = new Map(Object.entries(node));
  const relation = fields.get('Relation Name');
  if (typeof relation === 'string' && fields.get('Node Type') !== 'ModifyTable') into.add(relation);
  scannedRelations(fields.get('Plan'), into);
  scannedRelations(fields.get('Plans'), into);
  return into;
}

/** Scans and row writes per table so far, as the connection's transaction statistics count them. */
async function accesses(client: Client): Promise<Map<string, number>> {
  const { rows } = await client.query<{ relname: string; count: string }>(
    `SELECT relname, (COALESCE(seq_scan, 0) + COALESCE(idx_scan, 0) + n_tup_ins + n_tup_upd + n_tup_del)::text AS count
       FROM pg_stat_xact_user_tables`,
  );
  return new Map(rows.map((row) => [row.relname, Number(row.count)]));
}

let prepared = 0;

/** EXPLAIN of the statement's generic plan: how a named statement runs once Postgres stopped re-planning it. */
async function genericPlan(client: Client, sql: string, params: unknown[]): Promise<Set<string>> {
  const name = `observed_${process.pid}_${prepared++}`;
  await client.query(`PREPARE ${name} AS ${sql}`);
  try {
    await client.query('SET plan_cache_mode = force_generic_plan');
    const args = params.length > 0 ? `(${params.map(literal).join(', ')})` : '';
    const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(
      `EXPLAIN (FORMAT JSON) EXECUTE ${name}${args}`,
    );
    return scannedRelations(rows[0]['QUERY PLAN'], new Set());
  } finally {
    await client.query('RESET plan_cache_mode');
    await client.query(`DEALLOCATE ${name}`);
  }
}

/**
 * A DatabaseService on `dataSource` that runs every statement sent through it (all of the turn path's and the
 * relay's, which go to the data source's pg pool) in a transaction of its own, after EXPLAIN of its generic plan,
 * and records which partitions each one touched. Statements go unnamed (the plan checked is the generic one a
 * named statement ends up with).
 */
export class PartitionObserver {
  readonly observations: StatementObservation[] = [];
  readonly database: DatabaseService;
  private label = '';

  constructor(private readonly dataSource: DataSource) {
    const driver = dataSource.driver;
    const master: unknown = driver instanceof PostgresDriver ? driver.master : null;
    if (!(master instanceof Pool)) throw new Error('the data source has no pg pool');
    // The turn path's statements go to the pool (DatabaseService.run), the store's others through TypeORM's
    // `query`, whose answer (rows, or [rows, count] for an UPDATE) the observer keeps by running them through it.
    const poolQuery = <T extends QueryResultRow>(config: QueryConfig): Promise<QueryResult<T>> =>
      this.observe(config.text, config.values ?? [], (client) =>
        client.query<T>({ text: config.text, values: config.values ?? [] }),
      );
    const typeormQuery = (sql: string, params: unknown[] = []): Promise<unknown> =>
      this.observe(sql, params, (_client, runner) => runner.query(sql, params));
    const observedPool = new Proxy(master, {
      get: (target, property, receiver) =>
        property === 'query' ? poolQuery : (Reflect.get(target, property, receiver) as unknown),
    });
    const observedDriver = new Proxy(driver, {
      get: (target, property, receiver) =>
        property === 'master' ? observedPool : (Reflect.get(target, property, receiver) as unknown),
    });
    const observed = new Proxy(dataSource, {
      get: (target, property, receiver) =>
        property === 'driver'
          ? observedDriver
          : property === 'query'
            ? typeormQuery
            : (Reflect.get(target, property, receiver) as unknown),
    });
    this.database = new DatabaseService(observed, null, false);
  }

  /** Runs `work`, labelling the statements it sends; returns what they touched. */
  async during<T>(label: string, work: () => Promise<T>): Promise<StatementObservation[]> {
    this.label = label;
    const from = this.observations.length;
    await work();
    return this.observations.slice(from);
  }

  private async observe<R>(
    sql: string,
    params: unknown[],
    execute: (client: Client, runner: QueryRunner) => Promise<R>,
  ): Promise<R> {
    const runner = this.dataSource.createQueryRunner();
    const client: unknown = await runner.connect();
    if (!(client instanceof Client)) throw new Error('the query runner has no pg client');
    try {
      const planned = byTable(await genericPlan(client, sql, params));
      await runner.startTransaction();
      try {
        // The counters also hold what earlier transactions of the connection did until they are flushed (at most
        // once a second, never inside a transaction): what this statement did is the difference.
        const before = await accesses(client);
        const result = await execute(client, runner);
        const after = await accesses(client);
        await runner.commitTransaction();
        const touched = byTable(
          [...after]
            .filter(([relation, count]) => count > (before.get(relation) ?? 0))
            .map(([relation]) => relation),
        );
        this.observations.push({ label: this.label, sql, planned, touched });
        return result;
      } catch (error) {
        await runner.rollbackTransaction();
        throw error;
      }
    } finally {
      await runner.release();
    }
  }
}
