import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { LOCK_FILE } from '@agent/database';
import {
  AppProcess,
  freePort,
  spawnAppProcess,
  stopAppProcess,
  waitUntilReady,
} from '../support/app-process';
import { embeddedDataDir, processAlive } from '../support/embedded-servers';
import { REPO_ROOT } from '../support/test-app';
import { waitUntil } from '../support/wait-for';

const MAIN = 'apps/agent-runtime/src/main.ts';
const INGEST = 'apps/agent-runtime/src/cli/rag-ingest.ts';

/** Every file of the directory with its size and modification time: equal snapshots mean nothing was written. */
function snapshot(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  const walk = (path: string) => {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const full = join(path, entry.name);
      if (entry.isDirectory()) walk(full);
      else {
        const stat = statSync(full);
        files[full.slice(dir.length)] = `${stat.size}:${stat.mtimeMs}`;
      }
    }
  };
  walk(dir);
  return files;
}

/**
 * The embedded database holds an exclusive lock on its data directory (item 10): real processes, the real
 * entry points, one DATA_DIR.
 */
describe('one process per embedded data directory', () => {
  const dataDir = embeddedDataDir('agent-runtime-lock-');
  const started: AppProcess[] = [];
  const embedded = { DATA_DIR: dataDir, LOG_LEVEL: 'warn' };

  afterAll(async () => {
    await Promise.all(started.map((app) => stopAppProcess(app, 'SIGKILL')));
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function startApp(): Promise<AppProcess> {
    const port = await freePort();
    const app = spawnAppProcess(MAIN, [], { ...embedded, PORT: String(port) });
    started.push(app);
    await waitUntilReady(app, port);
    return app;
  }

  it('refuses a second npm start and rag:ingest on a held directory, naming it and the holder, writing nothing; takes over after kill -9', async () => {
    const holder = await startApp();
    const lock = JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8')) as { pid: number };
    expect(lock.pid).toBe(holder.child.pid);
    const before = snapshot(dataDir);

    const second = spawnAppProcess(MAIN, [], { ...embedded, PORT: String(await freePort()) });
    started.push(second);
    expect(await second.exited).toBe(1);
    expect(second.output()).toContain(`${dataDir} is in use by process ${holder.child.pid}`);

    const ingest = spawnAppProcess(
      INGEST,
      [join(REPO_ROOT, 'config', 'knowledge'), '--namespace', 'lock'],
      embedded,
    );
    started.push(ingest);
    expect(await ingest.exited).toBe(1);
    expect(ingest.output()).toContain(`${dataDir} is in use by process ${holder.child.pid}`);
    expect(snapshot(dataDir)).toEqual(before);

    // A holder killed with -9 leaves its lock behind; the next start sees the process gone and takes over.
    // Its embedded database child notices the parent's death and exits on its own: until then the directory
    // is rightly still held, so wait for it (a busy machine can take a few seconds).
    const serverPid = (JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8')) as { server_pid?: number })
      .server_pid;
    await stopAppProcess(holder, 'SIGKILL');
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(true);
    await waitUntil(
      `the killed holder's database child ${serverPid} to exit`,
      () => serverPid === undefined || !processAlive(serverPid),
      30000,
      100,
    );
    const next = await startApp();
    expect((JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8')) as { pid: number }).pid).toBe(
      next.child.pid,
    );

    // A clean stop frees the directory.
    await stopAppProcess(next);
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
  }, 300000);
});
