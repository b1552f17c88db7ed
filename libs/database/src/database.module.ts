import { DynamicModule, Global, Logger, Module } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { DataSource } from 'typeorm';
import { databaseConfig } from '@agent/config';
import { createDataSource } from './data-source.factory';
import { DatabaseService } from './database.service';
import { EmbeddedPostgres } from './embedded-postgres';
import { registerEntities } from './entity-registry';

const EMBEDDED_POSTGRES = Symbol('EMBEDDED_POSTGRES');

/** Replicas starting together must not race on migrations: a Postgres advisory lock serializes them. */
export async function runMigrationsExclusively(dataSource: DataSource, embedded: boolean) {
  // PGlite is single-process and has one pooled connection: holding a lock connection would deadlock.
  if (embedded) return dataSource.runMigrations({ transaction: 'each' });
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock(727073690)');
    return await dataSource.runMigrations({ transaction: 'each' });
  } finally {
    await runner.query('SELECT pg_advisory_unlock(727073690)').catch(() => undefined);
    await runner.release();
  }
}

@Global()
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
    {
      provide: DataSource,
      inject: [databaseConfig.KEY, EMBEDDED_POSTGRES],
      useFactory: async (
        config: ConfigType<typeof databaseConfig>,
        embedded: EmbeddedPostgres | null,
      ): Promise<DataSource> => {
        const dataSource = await createDataSource({
          url: embedded?.url ?? (config.DATABASE_URL as string),
          poolSize: config.DATABASE_POOL_SIZE,
          embedded: embedded !== null,
        });
        const applied = await runMigrationsExclusively(dataSource, embedded !== null);
        if (applied.length > 0) {
          new Logger('Database').log(`applied migrations: ${applied.map((m) => m.name).join(', ')}`);
        }
        return dataSource;
      },
    },
    {
      provide: DatabaseService,
      inject: [DataSource, EMBEDDED_POSTGRES],
      useFactory: (dataSource: DataSource, embedded: EmbeddedPostgres | null) =>
        new DatabaseService(dataSource, embedded),
    },
  ],
  exports: [DataSource, DatabaseService],
})
export class DatabaseModule {
  /** Declares the entities a feature module owns; call it in that module's `imports`. */
  static forFeature(entities: readonly unknown[]): DynamicModule {
    registerEntities(entities);
    return { module: DatabaseFeatureModule };
  }
}

@Module({})
class DatabaseFeatureModule {}
