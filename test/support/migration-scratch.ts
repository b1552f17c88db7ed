import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { buildDataSourceOptions, EmbeddedPostgres } from '@agent/database';
import { ALL_MIGRATIONS } from '@agent/migrations';
import { scratchDatabase } from './scratch-database';

/** A database of a migration test's own, migrated by nothing yet, whose data source knows `migrations`. */
export interface MigrationScratch {
  name: string;
  /** The embedded PGlite (one session behind every connection: no named statements). */
  embedded: boolean;
  open(): Promise<{ dataSource: DataSource; close(): Promise<void> }>;
}

/** The migrations up to and including `name`, so undoing the last one undoes it whatever comes after. */
export function migrationsUpTo(name: string): typeof ALL_MIGRATIONS {
  const last = ALL_MIGRATIONS.findIndex((migration) => migration.name === name);
  if (last < 0) throw new Error(`no migration ${name}`);
  return ALL_MIGRATIONS.slice(0, last + 1);
}

async function open(url: string, embedded: boolean, migrations: typeof ALL_MIGRATIONS): Promise<DataSource> {
  const options = buildDataSourceOptions({ url, poolSize: 1, embedded });
  return new DataSource({ ...options, migrations }).initialize();
}

/**
 * Where a migration test runs: the embedded PGlite always, and with DATABASE_URL a scratch database on the real
 * server as well.
 */
export function migrationScratches(prefix: string, migrations: typeof ALL_MIGRATIONS): MigrationScratch[] {
  const scratches: MigrationScratch[] = [
    {
      name: 'embedded PGlite',
      embedded: true,
      open: async () => {
        const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
        const embedded = await EmbeddedPostgres.start(dir, 170000);
        const dataSource = await open(embedded.url, true, migrations);
        return {
          dataSource,
          close: async () => {
            await dataSource.destroy();
            await embedded.stop();
            rmSync(dir, { recursive: true, force: true });
          },
        };
      },
    },
  ];
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl) {
    scratches.push({
      name: 'Postgres (DATABASE_URL)',
      embedded: false,
      open: async () => {
        const scratch = await scratchDatabase(serverUrl, prefix.replace(/-/g, '_'));
        const dataSource = await open(scratch.url, false, migrations);
        return {
          dataSource,
          close: async () => {
            await dataSource.destroy();
            await scratch.drop();
          },
        };
      },
    });
  }
  return scratches;
}

/**
 * Opens `scratch` before the suite's tests, with every migration its data source knows applied, and closes it
 * after them; `dataSource` is the open connection.
 */
export function migratedScratch(scratch: MigrationScratch): { readonly dataSource: DataSource } {
  let opened: { dataSource: DataSource; close(): Promise<void> } | undefined;
  beforeAll(async () => {
    opened = await scratch.open();
    await opened.dataSource.runMigrations({ transaction: 'each' });
  }, 180000);
  afterAll(async () => {
    await opened?.close();
  });
  return {
    get dataSource(): DataSource {
      if (!opened) throw new Error(`${scratch.name}: the scratch database is not open yet`);
      return opened.dataSource;
    },
  };
}
