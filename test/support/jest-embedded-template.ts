import 'tsconfig-paths/register';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { createDataSource, EmbeddedPostgres } from '@agent/database';
import { createRunDir } from './jest-run-dir';
import { REPO_ROOT } from './repo-root';
import { ensureTestDatabase } from './test-database';

const CACHE_DIR = join(REPO_ROOT, 'node_modules', '.cache', 'agent-runtime');
const PREFIX = 'embedded-template-';

/** What the template depends on: the migrations, the embedded server and the PGlite release. */
function templateKey(): string {
  const hash = createHash('sha256');
  const migrations = join(REPO_ROOT, 'migrations');
  for (const file of readdirSync(migrations).sort()) hash.update(readFileSync(join(migrations, file)));
  hash.update(readFileSync(join(REPO_ROOT, 'libs', 'database', 'pglite-server.cjs')));
  hash.update(readFileSync(join(REPO_ROOT, 'node_modules', '@electric-sql', 'pglite', 'package.json')));
  return hash.digest('hex').slice(0, 16);
}

async function buildTemplate(dir: string): Promise<void> {
  const embedded = await EmbeddedPostgres.start(dir, 170000);
  try {
    const dataSource = await createDataSource({ url: embedded.url, poolSize: 1, embedded: true });
    await dataSource.runMigrations({ transaction: 'each' });
    await dataSource.destroy();
  } finally {
    await embedded.stop();
  }
}

/**
 * On the embedded default, initialising a PGlite database and running the migrations took seconds per test. The
 * migrated database is built once and kept in node_modules/.cache until the migrations change; the embedded servers
 * the tests share and every data directory a test makes start from a copy of it (embedded-servers.ts).
 */
export default async function prepareEmbeddedTemplate(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL;
  if (databaseUrl) {
    // Before anything is made: a database the suites cannot use stops the run with one line, not a stack per file.
    const outcome = await ensureTestDatabase(databaseUrl).catch((error: Error) => {
      process.stderr.write(`\n${error.message}\n`);
      process.exit(1);
    });
    if (outcome === 'created') process.stderr.write(`\ncreated the test database of DATABASE_URL\n`);
  }
  createRunDir();
  // The processes the tests start run the compiled entry points (compiledEntry).
  execFileSync(process.execPath, ['-e', "require('./scripts/build-if-needed').buildServerIfNeeded()"], {
    cwd: REPO_ROOT,
    stdio: 'inherit',
  });
  // Also with DATABASE_URL: the integration tests run each store on the embedded backend as well.
  const template = join(CACHE_DIR, PREFIX + templateKey());
  if (!existsSync(template)) {
    mkdirSync(CACHE_DIR, { recursive: true });
    const stale = readdirSync(CACHE_DIR).filter(
      (name) => name.startsWith(PREFIX) && !name.startsWith(basename(template)),
    );
    for (const name of stale) rmSync(join(CACHE_DIR, name), { recursive: true, force: true });
    const building = `${template}.building-${process.pid}`;
    try {
      await buildTemplate(building);
      // Another run may have finished the same template meanwhile; either copy is good.
      if (!existsSync(template)) renameSync(building, template);
    } finally {
      rmSync(building, { recursive: true, force: true });
    }
  }
  process.env.TEST_EMBEDDED_TEMPLATE = template;
}
