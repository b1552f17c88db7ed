import { Logger } from '@nestjs/common';
import { Client, type ClientConfig } from 'pg';
import { DataSource, DataSourceOptions } from 'typeorm';
import { DatabaseEnv, parseEnvNamespace } from '@agent/config';
import { ALL_MIGRATIONS } from '@agent/migrations';
import { EmbeddedPostgres } from './embedded-postgres';

export type DatabaseTimeouts = Pick<
  DatabaseEnv,
  'DATABASE_CONNECT_TIMEOUT_MS' | 'DATABASE_STATEMENT_TIMEOUT_MS' | 'DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS'
>;

export interface DataSourceSettings {
  url: string;
  poolSize: number;
  embedded: boolean;
  /** Given outside the app (tests, tools); the app's come from each module's TypeOrmModule.forFeature. */
  entities?: DataSourceOptions['entities'];
  /** The environment's (validated) when not given. */
  timeouts?: DatabaseTimeouts;
}

/** How much longer than the server's statement_timeout the client waits: the server's cancel comes first. */
const STATEMENT_TIMEOUT_MARGIN_MS = 1000;

const connectionLog = new Logger('Database');

/**
 * The pg client of every pooled connection: it listens for its own errors from the moment it exists. The pool
 * stops listening when it hands a connection over and TypeORM starts only after a promise resolves, so a failure
 * read in between (the server's "ready for query" and its goodbye, 57P01 at a failover or a
 * pg_terminate_backend, in one packet) had no listener and ended the process. The holder learns of the failure
 * from its next statement, which fails as a connection error (retried, else a 503), and the pool drops it.
 */
export class ListeningClient extends Client {
  constructor(config?: string | ClientConfig) {
    super(config);
    let reported = false;
    this.on('error', (error: Error) => {
      // A dead connection reports twice (the server's message, then the socket's end): one line is enough.
      if (reported) return;
      reported = true;
      connectionLog.warn(`Postgres connection lost: ${error.message}`);
    });
  }
}

export function buildDataSourceOptions(settings: DataSourceSettings): DataSourceOptions {
  const timeouts = settings.timeouts ?? parseEnvNamespace('database');
  return {
    type: 'postgres',
    url: settings.url,
    entities: settings.entities ?? [],
    // Extensions (pgvector) are the migrations' to create, where the role may.
    installExtensions: false,
    migrations: ALL_MIGRATIONS,
    migrationsTableName: 'typeorm_migrations',
    synchronize: false,
    migrationsRun: false,
    logging: false,
    // PGlite serves one connection at a time; a real server gets a pool.
    poolSize: settings.embedded ? 1 : settings.poolSize,
    extra: {
      Client: ListeningClient,
      // Opening a connection, and waiting for one when all are busy.
      connectionTimeoutMillis: timeouts.DATABASE_CONNECT_TIMEOUT_MS,
      // Bounded statements: the server cancels a long one; the client stops waiting for a server that went
      // silent (the statements of a turn wait less: DatabaseService.run).
      statement_timeout: timeouts.DATABASE_STATEMENT_TIMEOUT_MS,
      query_timeout: timeouts.DATABASE_STATEMENT_TIMEOUT_MS + STATEMENT_TIMEOUT_MARGIN_MS,
      // A session stuck inside a transaction (a process frozen between two statements) gives its locks back.
      idle_in_transaction_session_timeout: timeouts.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS,
      // A peer that vanished without a reset (a failover, a dropped network path) is noticed by the socket.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10000,
      // A URL's application_name wins (pg reads the URL last), so a deployment can tell its replicas apart.
      application_name: 'agent-runtime',
      // Idle connections never keep the process alive: the server (or a tool's own work) does. A start that
      // fails after the pool opened (a bad policy file) cannot close it, and must still let the process end.
      allowExitOnIdle: true,
    },
  };
}

export async function createDataSource(settings: DataSourceSettings): Promise<DataSource> {
  const dataSource = new DataSource(buildDataSourceOptions(settings));
  await dataSource.initialize();
  return dataSource;
}

/** A database outside the app, for the command-line tools; `close` also stops the embedded server. */
export interface OpenDatabase {
  dataSource: DataSource;
  embedded: boolean;
  close(): Promise<void>;
}

/** DATABASE_URL's server, or the embedded Postgres in DATA_DIR when it is unset (the app must be stopped then). */
export async function openDatabase(
  config: { DATABASE_URL?: string; DATA_DIR: string },
  entities: DataSourceOptions['entities'] = [],
  poolSize = 2,
): Promise<OpenDatabase> {
  if (config.DATABASE_URL) {
    const dataSource = await createDataSource({
      url: config.DATABASE_URL,
      poolSize,
      embedded: false,
      entities,
    });
    return { dataSource, embedded: false, close: () => dataSource.destroy() };
  }
  const embedded = await EmbeddedPostgres.start(config.DATA_DIR);
  try {
    const dataSource = await createDataSource({ url: embedded.url, poolSize, embedded: true, entities });
    return {
      dataSource,
      embedded: true,
      close: async () => {
        await dataSource.destroy();
        await embedded.stop();
      },
    };
  } catch (error) {
    await embedded.stop();
    throw error;
  }
}
