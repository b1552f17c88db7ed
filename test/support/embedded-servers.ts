import {
  closeSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedPostgres, LOCK_FILE } from '@agent/database';

/** A migrated embedded database a test holds alone until it releases it. */
export interface EmbeddedLease {
  url: string;
  release(): void;
}

interface ServerEntry {
  port: number;
  pid: number;
}

/**
 * A copy of the run's migrated template (jest-embedded-template.ts) in a new temporary folder, or an empty folder
 * when the run made none: what a test that needs a data directory of its own starts from.
 */
export function embeddedDataDir(prefix = 'agent-runtime-test-'): string {
  const dataDir = mkdtempSync(join(tmpdir(), prefix));
  const template = process.env.TEST_EMBEDDED_TEMPLATE;
  if (template) cpSync(template, dataDir, { recursive: true });
  return dataDir;
}

/** An embedded server of a test's own, on a copy of the migrated template (see `embeddedDataDir`). */
export async function ownEmbeddedServer(
  prefix: string,
): Promise<{ url: string; embedded: true; close(): Promise<void> }> {
  const dir = embeddedDataDir(prefix);
  const embedded = await EmbeddedPostgres.start(dir, 170000);
  return {
    url: embedded.url,
    embedded: true,
    close: async () => {
      await embedded.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The servers this jest worker started; the folder lives in the run's folder, which the teardown removes. */
function registry(): string {
  const dir = join(process.env.TEST_RUN_DIR ?? tmpdir(), 'embedded-servers', String(process.pid));
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Whether a process of this pid exists on this machine. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Creates the file only if it does not exist: the one atomic test-and-set the file system offers. */
function claim(path: string): boolean {
  try {
    closeSync(openSync(path, 'wx'));
    return true;
  } catch {
    return false;
  }
}

function lease(dir: string, port: number): EmbeddedLease {
  const held = join(dir, `${port}.held`);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    release: () => rmSync(held, { force: true }),
  };
}

/**
 * On the embedded default, starting PGlite (WebAssembly Postgres in a child process) was most of a test app's
 * start. A jest worker keeps the servers it started (they are its children, and stop with it) and hands a free one
 * to the next test that asks, so the test files of a worker share their databases as the files of a CI run share
 * the Postgres server. One holder at a time: PGlite is a single session, and two clients' statements interleaving
 * there would corrupt each other's unnamed prepared statements. The holder connects with a pool of one, as the
 * embedded default does.
 */
export async function leaseEmbeddedServer(): Promise<EmbeddedLease> {
  const dir = registry();
  for (const name of readdirSync(dir).filter((file) => file.endsWith('.json'))) {
    const entry = JSON.parse(readFileSync(join(dir, name), 'utf8')) as ServerEntry;
    if (!processAlive(entry.pid)) {
      rmSync(join(dir, name), { force: true });
      continue;
    }
    if (claim(join(dir, `${entry.port}.held`))) return lease(dir, entry.port);
  }
  const dataDir = embeddedDataDir('embedded-server-');
  const server = await EmbeddedPostgres.start(dataDir, 170000);
  // The data directory's lock names the server process (see DataDirectoryLock.recordServer).
  const { server_pid: pid } = JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8')) as {
    server_pid: number;
  };
  const entry: ServerEntry = { port: server.port, pid };
  claim(join(dir, `${entry.port}.held`));
  writeFileSync(join(dir, `${entry.port}.json`), JSON.stringify(entry));
  return lease(dir, entry.port);
}
