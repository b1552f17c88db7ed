import 'reflect-metadata';
import { EnvValidationError, parseEnvNamespace } from '@agent/config';
import { openDatabase, runMigrationsExclusively } from '@agent/database';
import { MigrationExecutor } from 'typeorm';

const COMMANDS = ['run', 'revert', 'show'] as const;
type Command = (typeof COMMANDS)[number];

const USAGE = `usage: npm run migration:run | migration:revert | migration:show

  run     applies every pending migration (what start-up does)
  revert  reverts the last applied migration (its down)
  show    lists the migrations, [X] applied and [ ] pending

On DATABASE_URL, or on the embedded Postgres in DATA_DIR when it is unset (stop the app first then).`;

function isCommand(value: string | undefined): value is Command {
  return COMMANDS.some((command) => command === value);
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!isCommand(command) || rest.length > 0) {
    console.error(`migration: expected one of ${COMMANDS.join(', ')}\n\n${USAGE}`);
    return 2;
  }
  const config = parseEnvNamespace('database');
  const database = await openDatabase(config);
  try {
    const { dataSource } = database;
    if (command === 'run') {
      const applied = await runMigrationsExclusively(dataSource, config.DATABASE_MIGRATION_LOCK_TIMEOUT_MS);
      console.log(
        applied.length === 0 ? 'no pending migration' : applied.map((m) => `applied ${m.name}`).join('\n'),
      );
    } else if (command === 'revert') {
      const executed = await new MigrationExecutor(dataSource).getExecutedMigrations();
      if (executed.length === 0) {
        console.log('no applied migration to revert');
      } else {
        await dataSource.undoLastMigration({ transaction: 'each' });
        console.log(`reverted ${executed[0].name}`);
      }
    } else {
      const executed = new Set(
        (await new MigrationExecutor(dataSource).getExecutedMigrations()).map((m) => m.name),
      );
      for (const migration of dataSource.migrations) {
        const name = migration.name ?? migration.constructor.name;
        console.log(`${executed.has(name) ? '[X]' : '[ ]'} ${name}`);
      }
    }
    return 0;
  } finally {
    await database.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const reason =
      error instanceof EnvValidationError
        ? error.message
        : String(error instanceof Error ? error.message : error);
    console.error(`migration failed: ${reason}`);
    process.exit(1);
  },
);
