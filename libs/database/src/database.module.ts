import { Global, Logger, Module } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, DataSourceOptions, Migration, MigrationExecutor } from 'typeorm';
import { databaseConfig, parseEnvNamespace } from '@agent/config';
import { buildDataSourceOptions } from './data-source.factory';
import { DatabaseService, isLostConnection } from './database.service';
import { EmbeddedPostgres } from './embedded-postgres';

const EMBEDDED_POSTGRES = Symbol('EMBEDDED_POSTGRES');
const MIGRATION_LOCK = 727073690;

/**
 * Applies the pending migrations, each in its own transaction, under a Postgres advisory lock so replicas
 * starting together do not race. The lock and the migrations share one connection: PGlite serves only one. Once
 * the advisory lock is held (replicas wait for each other's migrations as long as they take), each migration waits
 * at most `lockTimeoutMs` for a table lock (DATABASE_MIGRATION_LOCK_TIMEOUT_MS; 0: no limit).
 */
export async function runMigrationsExclusively(
  dataSource: DataSource,
  lockTimeoutMs: number,
): Promise<Migration[]> {
  const runner = dataSource.createQueryRunner();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await runner.query(`SELECT set_config('lock_timeout', $1, false)`, [`${lockTimeoutMs}ms`]);
    const executor = new MigrationExecutor(dataSource, runner);
    executor.transaction = 'each';
    return await executor.executePendingMigrations();
  } finally {
    // The connection goes back to the pool that serves the turns.
    await runner.query('RESET lock_timeout').catch(() => undefined);
    await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    await runner.release();
  }
}

/** The embedded Postgres (PGlite) when DATABASE_URL is unset, else null. */
@Module({
  providers: [
    {
      provide: EMBEDDED_POSTGRES,
      inject: [databaseConfig.KEY],
      useFactory: async (config: ConfigType<typeof databaseConfig>): Promise<EmbeddedPostgres | null> => {
        if (config.DATABASE_URL) return null;
        const logger = new Logger('Database');
        logger.log(`DATABASE_URL is not set: starting embedded Postgres (PGlite) in ${config.DATA_DIR}`);
        const started = Date.now();
        const embedded = await EmbeddedPostgres.start(config.DATA_DIR);
        logger.warn(
          `embedded Postgres (PGlite) ready in ${Date.now() - started} ms in ${embedded.dataDir}. ` +
            'It is single-process and does not fsync; set DATABASE_URL in production.',
        );
        return embedded;
      },
    },
  ],
  exports: [EMBEDDED_POSTGRES],
})
class EmbeddedPostgresModule {}

/**
 * The DataSource (migrated before anything uses it) through @nestjs/typeorm: feature modules declare the
 * entities they own with `TypeOrmModule.forFeature` and inject their repositories; DatabaseService adds the
 * embedded server's lifecycle and connection-error handling.
 */
@Global()
@Module({
  imports: [
    EmbeddedPostgresModule,
    TypeOrmModule.forRootAsync({
      imports: [EmbeddedPostgresModule],
      inject: [databaseConfig.KEY, EMBEDDED_POSTGRES],
      useFactory: (config: ConfigType<typeof databaseConfig>, embedded: EmbeddedPostgres | null) => ({
        ...buildDataSourceOptions({
          url: embedded?.url ?? config.DATABASE_URL ?? '',
          poolSize: config.DATABASE_POOL_SIZE,
          embedded: embedded !== null,
          timeouts: config,
        }),
        autoLoadEntities: true,
        // An unreachable (or silent) database fails the start at once, with its error; the orchestrator restarts
        // the service. A connection the server ended while starting (a failover, a restart, a terminated
        // session during the migrations) is tried again a few times: each migration is its own transaction.
        retryAttempts: 5,
        retryDelay: 1000,
        verboseRetryLog: true,
        toRetry: (error: unknown) => isLostConnection(error),
      }),
      dataSourceFactory: async (options?: DataSourceOptions) => {
        if (!options) throw new Error('no DataSource options');
        const dataSource = await new DataSource(options).initialize();
        try {
          // A data source factory gets no injection: the same validated namespace databaseConfig registers.
          const { DATABASE_MIGRATION_LOCK_TIMEOUT_MS } = parseEnvNamespace('database');
          const applied = await runMigrationsExclusively(dataSource, DATABASE_MIGRATION_LOCK_TIMEOUT_MS);
          if (applied.length > 0) {
            new Logger('Database').log(`applied migrations: ${applied.map((m) => m.name).join(', ')}`);
          }
          return dataSource;
        } catch (error) {
          await dataSource.destroy().catch(() => undefined);
          throw error;
        }
      },
    }),
  ],
  providers: [
    {
      provide: DatabaseService,
      inject: [DataSource, EMBEDDED_POSTGRES, databaseConfig.KEY],
      useFactory: (
        dataSource: DataSource,
        embedded: EmbeddedPostgres | null,
        config: ConfigType<typeof databaseConfig>,
      ) =>
        new DatabaseService(
          dataSource,
          embedded,
          config.DATABASE_PREPARED_STATEMENTS,
          config.DATABASE_QUERY_TIMEOUT_MS,
        ),
    },
  ],
  exports: [DatabaseService],
})
export class DatabaseModule {}
