import { DataSource, DataSourceOptions } from 'typeorm';
import { ALL_MIGRATIONS } from '@agent/migrations';
import { registeredEntities } from './entity-registry';

export interface DataSourceSettings {
  url: string;
  poolSize: number;
  embedded: boolean;
  /** Extra entities (the CLI passes them all explicitly). */
  entities?: DataSourceOptions['entities'];
}

export function buildDataSourceOptions(settings: DataSourceSettings): DataSourceOptions {
  return {
    type: 'postgres',
    url: settings.url,
    entities: settings.entities ?? registeredEntities(),
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
    },
  };
}

export async function createDataSource(settings: DataSourceSettings): Promise<DataSource> {
  const dataSource = new DataSource(buildDataSourceOptions(settings));
  await dataSource.initialize();
  return dataSource;
}
