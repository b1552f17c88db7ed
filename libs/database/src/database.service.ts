import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Pool, type QueryConfig, type QueryResult, type QueryResultRow } from 'pg';
import {
  DataSource,
  EntityManager,
  QueryRunnerAlreadyReleasedError,
  QueryRunnerProviderAlreadyReleasedError,
} from 'typeorm';
import { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { parseEnvNamespace } from '@agent/config';
import { DatabaseUnavailableError } from './database.errors';
import { EmbeddedPostgres } from './embedded-postgres';
import { NamedStatement, Statement, statement } from './statement';

const APPLIED_MIGRATIONS = statement<[], { name: string }>(
  'applied_migrations',
  'SELECT name FROM typeorm_migrations',
);

const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  '53300', // too_many_connections
  '57P01', // admin_shutdown (pg_terminate_backend)
  '57P02',
  '57P03', // cannot_connect_now
  '08000',
  '08001',
  '08003',
  '08006',
]);

/** The error and those it wraps (`cause`, TypeORM's `driverError`), outermost first. */
function* causeChain(error: unknown): Generator<object> {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    yield current;
    const cause = 'cause' in current ? current.cause : undefined;
    current = cause ?? ('driverError' in current ? current.driverError : undefined);
  }
}

function messageOf(error: object): string {
  const message = 'message' in error ? error.message : '';
  return typeof message === 'string' ? message : '';
}

const CONNECTION_FAILURE =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|terminating connection|Client was closed and is not queryable|Query read timeout/i;

/** True for failures of the connection itself (as opposed to a bad query). */
export function isConnectionError(error: unknown): boolean {
  for (const current of causeChain(error)) {
    if (current instanceof DatabaseUnavailableError) return true;
    // The client emitted 'error' between two statements of a transaction (or at its COMMIT), so TypeORM released
    // the query runner under it; the server rolled the transaction back.
    if (
      current instanceof QueryRunnerProviderAlreadyReleasedError ||
      current instanceof QueryRunnerAlreadyReleasedError
    ) {
      return true;
    }
    const code = errorCode(current);
    if (code !== null && (CONNECTION_ERROR_CODES.has(code) || code.startsWith('08'))) return true;
    if (CONNECTION_FAILURE.test(messageOf(current))) return true;
  }
  return false;
}

const HUNG_SERVER =
  /Query read timeout|timeout exceeded when trying to connect|Connection terminated due to connection timeout/;

/**
 * True when the server did not answer in time (a statement's read timeout, or no connection within the connect
 * timeout): a hung server, where trying again would only wait as long once more.
 */
export function isTimeoutError(error: unknown): boolean {
  for (const current of causeChain(error)) if (HUNG_SERVER.test(messageOf(current))) return true;
  return false;
}

/** The server could not be reached at all: nothing listens there, or the name does not resolve. */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * A connection the server ended, or refused while it starts up (57P03): it was there a moment ago, so a new
 * connection is worth a try. Not an unreachable server, nor one that does not answer (a timeout).
 */
export function isLostConnection(error: unknown): boolean {
  if (!isConnectionError(error) || isTimeoutError(error)) return false;
  for (const current of causeChain(error)) if (UNREACHABLE_CODES.has(errorCode(current) ?? '')) return false;
  return true;
}

/**
 * A prepared statement the server no longer has (26000) or already has under that name (42P05): what a pooler in
 * transaction mode does to them, by handing the client's statements to another server connection.
 */
const PREPARED_STATEMENT_LOST = new Set(['26000', '42P05']);

/**
 * A migration changed the type of a column a prepared statement returns (a rolling deploy): the connection's plan
 * is stale, and the server refuses it before running it.
 */
const STALE_PLAN = /cached plan must not change result type/;

function errorCode(error: unknown): string | null {
  const code = typeof error === 'object' && error !== null && 'code' in error ? error.code : null;
  return typeof code === 'string' ? code : null;
}

/** pg reads a per-statement `query_timeout` (ms to wait for the answer) that its typings do not declare. */
interface BoundedQuery extends QueryConfig {
  query_timeout: number;
}

@Injectable()
export class DatabaseService implements OnApplicationShutdown {
  private readonly logger = new Logger(DatabaseService.name);

  /**
   * @param preparedStatements whether `run` prepares its statements on a real server. Embedded PGlite never does:
   *   all its connections share one session, so a reconnecting pool client would find its names taken.
   * @param queryTimeoutMs how long `run`'s statements and `ping` wait for the server's answer
   *   (DATABASE_QUERY_TIMEOUT_MS).
   */
  constructor(
    readonly dataSource: DataSource,
    private readonly embedded: EmbeddedPostgres | null,
    private preparedStatements = true,
    private readonly queryTimeoutMs = parseEnvNamespace('database').DATABASE_QUERY_TIMEOUT_MS,
  ) {}

  get isEmbedded(): boolean {
    return this.embedded !== null;
  }

  /**
   * Runs a statement of the turn path and returns its rows, waiting at most DATABASE_QUERY_TIMEOUT_MS for them.
   * Named, it is parsed and planned once per connection instead of on every turn (planning the lease statement
   * cost Postgres more than executing it). It goes to TypeORM's pg pool directly, as TypeORM's query runner only
   * sends unnamed statements, sets no time limit of its own, and answers an UPDATE with [rows, count].
   */
  async run<Params extends readonly unknown[], Row extends QueryResultRow>(
    statement: Statement<Params, Row>,
    params: Params,
  ): Promise<Row[]> {
    return (await this.execute<Row>(statement, params)).rows;
  }

  /** Runs an UPDATE or a DELETE of the catalogue like `run`, and returns how many rows it changed. */
  async count<Params extends readonly unknown[]>(
    statement: Statement<Params, QueryResultRow>,
    params: Params,
  ): Promise<number> {
    return (await this.execute(statement, params)).rowCount ?? 0;
  }

  private async execute<T extends QueryResultRow>(
    statement: NamedStatement,
    params: readonly unknown[],
  ): Promise<QueryResult<T>> {
    const pool = this.pool();
    const query: BoundedQuery = {
      text: statement.text,
      values: [...params],
      query_timeout: this.queryTimeoutMs,
    };
    if (this.preparedStatements && !this.embedded) {
      try {
        return await this.prepared<T>(pool, { ...query, name: statement.name });
      } catch (error) {
        // Refused before it ran, so sending it again unnamed is safe; so are the statements after it.
        if (!PREPARED_STATEMENT_LOST.has(errorCode(error) ?? '')) throw error;
        this.preparedStatements = false;
        this.logger.warn(
          `prepared statement ${statement.name} lost (${String(error)}): a pooler in transaction mode? ` +
            'Statements are sent unnamed from now on; set DATABASE_PREPARED_STATEMENTS=false to start that way.',
        );
      }
    }
    return pool.query<T>(query);
  }

  /**
   * A named statement. After a migration made the plans of the pool's connections stale, each such connection
   * fails it once and the pool drops it, so it runs again until a connection prepares it afresh.
   */
  private async prepared<T extends QueryResultRow>(pool: Pool, query: QueryConfig): Promise<QueryResult<T>> {
    const connections = pool.totalCount;
    for (let attempt = 0; ; attempt++) {
      try {
        return await pool.query<T>(query);
      } catch (error) {
        const stale = errorCode(error) === '0A000' && STALE_PLAN.test(String(error));
        if (!stale || attempt >= connections) throw error;
      }
    }
  }

  /** TypeORM's pg pool, which every statement of the process shares. */
  private pool(): Pool {
    const driver = this.dataSource.driver;
    // TypeORM types its pg pool as `any`: checked, not assumed.
    const master: unknown = driver instanceof PostgresDriver ? driver.master : null;
    if (!(master instanceof Pool)) throw new Error('the data source has no pg pool (not initialized?)');
    return master;
  }

  /** One round trip, bounded like the turn's statements: what readiness asks of the database. */
  async ping(): Promise<void> {
    const query: BoundedQuery = { text: 'SELECT 1', query_timeout: this.queryTimeoutMs };
    await this.pool().query(query);
  }

  /** Names of migrations that exist in code but are not applied. */
  async pendingMigrations(): Promise<string[]> {
    const applied = await this.run(APPLIED_MIGRATIONS, []);
    const appliedNames = new Set(applied.map((row) => row.name));
    return this.dataSource.migrations
      .map((m) => m.name ?? m.constructor.name)
      .filter((name) => !appliedNames.has(name));
  }

  /** Runs `work` in one transaction; connection failures surface as DatabaseUnavailableError. */
  async transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    try {
      return await this.dataSource.transaction(work);
    } catch (error) {
      if (isConnectionError(error)) throw new DatabaseUnavailableError(error);
      throw error;
    }
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
    if (this.embedded) {
      await this.embedded.stop();
      this.logger.log('embedded Postgres stopped');
    }
  }
}
