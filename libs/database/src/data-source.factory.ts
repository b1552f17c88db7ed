import { DataSource, DataSourceOptions } from 'typeorm';
import { ALL_MIGRATIONS } from '@agent/migrations';
import { EmbeddedPostgres } from './embedded-postgres';

export interface DataSourceSettings {
  url: string;
  poolSize: number;
  embedded: boolean;
  /** Given outside the app (tests, tools); the app's come from each module's TypeOrmModule.forFeature. */
  entities?: DataSourceOptions['entities'];
}

export function buildDataSourceOptions(settings: DataSourceSettings): DataSourceOptions {
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
      connectionTimeoutMillis: 5000,
      // Bounded statements: a hung query must not hold a turn forever.
      statement_timeout: 30000,
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
