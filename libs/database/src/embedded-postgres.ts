import { ChildProcess, fork } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { DataDirectoryLock } from './data-dir-lock';

/** Finds libs/database/pglite-server.cjs from src/ or dist/ alike. */
function serverScript(): string {
  let dir = __dirname;
  for (let i = 0; i < 8; i++) {
    const candidate = join(dir, 'libs', 'database', 'pglite-server.cjs');
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error('libs/database/pglite-server.cjs not found');
}

/**
 * The embedded default: PGlite (WASM Postgres) in a child process, served on a private loopback port so
 * the app reaches it through the same pg/TypeORM code path as a real server. Single-process and no fsync:
 * for trying the service and for tests, never for production.
 */
export class EmbeddedPostgres {
  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
    readonly dataDir: string,
    private readonly lock: DataDirectoryLock,
  ) {}

  /** Starts the server on `dataDir`, or fails with DataDirectoryLockedError while another process holds it. */
  static async start(dataDir: string, timeoutMs = 60000): Promise<EmbeddedPostgres> {
    const absolute = resolve(dataDir);
    mkdirSync(absolute, { recursive: true });
    const lock = DataDirectoryLock.acquire(absolute);
    try {
      const child = fork(serverScript(), [absolute], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      if (child.pid !== undefined) lock.recordServer(child.pid);
      const port = await EmbeddedPostgres.reportedPort(child, absolute, timeoutMs);
      // The child never keeps the parent alive; it stops itself when the parent goes away (IPC disconnect).
      child.unref();
      child.channel?.unref();
      return new EmbeddedPostgres(child, port, absolute, lock);
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  private static reportedPort(child: ChildProcess, dataDir: string, timeoutMs: number): Promise<number> {
    return new Promise<number>((resolvePort, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`embedded Postgres did not start within ${timeoutMs} ms`));
      }, timeoutMs);
      child.once('message', (message: unknown) => {
        clearTimeout(timer);
        const value = (message as { port?: unknown } | null)?.port;
        if (typeof value === 'number' && value > 0) resolvePort(value);
        else reject(new Error('embedded Postgres reported no port'));
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`embedded Postgres exited during start (code ${String(code)}) in ${dataDir}`));
      });
    });
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) {
      this.lock.release();
      return;
    }
    await new Promise<void>((resolveStop) => {
      const timer = setTimeout(() => {
        this.child.kill('SIGKILL');
        resolveStop();
      }, 10000);
      this.child.once('exit', () => {
        clearTimeout(timer);
        resolveStop();
      });
      this.child.send('stop');
    });
    this.lock.release();
  }
}
