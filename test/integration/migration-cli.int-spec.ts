import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ALL_MIGRATIONS } from '@agent/migrations';
import { compiledEntry, REPO_ROOT } from '../support/repo-root';
import { scratchDatabase } from '../support/scratch-database';

/**
 * npm run migration:run|revert|show on a database of their own: a fresh database on DATABASE_URL's server, or a
 * fresh embedded data directory. They read the migration list the app runs at start-up.
 */
const CLI = compiledEntry('apps/agent-runtime/src/cli/migrate.ts');
const NAMES = ALL_MIGRATIONS.map((migration) => migration.name);

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

function migrate(args: string[], database: Record<string, string>): Promise<Outcome> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && key !== 'DATABASE_URL' && key !== 'DATA_DIR') env[key] = value;
  }
  Object.assign(env, database);
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { cwd: REPO_ROOT, env, timeout: 120000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

/** The lines `show` prints when the first `applied` migrations are applied. */
function listing(applied: number): string {
  return NAMES.map((name, index) => `${index < applied ? '[X]' : '[ ]'} ${name}`).join('\n') + '\n';
}

describe('migration CLI', () => {
  let database: Record<string, string>;
  let cleanup: () => Promise<void>;

  beforeAll(async () => {
    const serverUrl = process.env.DATABASE_URL;
    if (serverUrl) {
      const scratch = await scratchDatabase(serverUrl, 'migration_cli');
      database = { DATABASE_URL: scratch.url };
      cleanup = () => scratch.drop();
    } else {
      const dataDir = mkdtempSync(join(tmpdir(), 'migration-cli-'));
      database = { DATA_DIR: dataDir };
      cleanup = () => Promise.resolve(rmSync(dataDir, { recursive: true, force: true }));
    }
  });
  afterAll(() => cleanup());

  // Each call starts a process (and, on the embedded default, a database): a few calls, a generous budget.
  it('shows, applies and reverts the migrations the app runs', async () => {
    expect(await migrate(['show'], database)).toMatchObject({ code: 0, stdout: listing(0) });

    const run = await migrate(['run'], database);
    expect(run).toMatchObject({ code: 0, stdout: NAMES.map((name) => `applied ${name}`).join('\n') + '\n' });

    const last = NAMES[NAMES.length - 1];
    expect(await migrate(['revert'], database)).toMatchObject({ code: 0, stdout: `reverted ${last}\n` });
    expect(await migrate(['show'], database)).toMatchObject({ code: 0, stdout: listing(NAMES.length - 1) });

    expect(await migrate(['run'], database)).toMatchObject({ code: 0, stdout: `applied ${last}\n` });
  }, 240_000);

  it('refuses an unknown command with its usage, and says why a database is unreachable', async () => {
    const unknown = await migrate(['generate'], database);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('usage: npm run migration:run | migration:revert | migration:show');

    const unreachable = await migrate(['show'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/^migration failed: .*ECONNREFUSED/m);
  });
});
