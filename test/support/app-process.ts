import { ChildProcess, spawn } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { compiledEntry } from './repo-root';
import { REPO_ROOT, TEST_LLM_PROFILES } from './test-app';

/** A TCP port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** True when something accepts TCP connections on the port. */
export function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export interface AppProcess {
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code once the process is gone. */
  exited: Promise<number | null>;
}

/**
 * Runs an entry point of the app (`apps/agent-runtime/src/main.ts`, `cli/rag-ingest.ts`) as its own OS process,
 * compiled (see `compiledEntry`), with only the given environment on top of PATH and the test config.
 */
export function spawnAppProcess(entry: string, args: string[], env: Record<string, string>): AppProcess {
  const child = spawn(process.execPath, [compiledEntry(entry), ...args], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH,
      CONFIG_DIR: join(REPO_ROOT, 'config'),
      LLM_PROFILES_PATH: TEST_LLM_PROFILES,
      RAG_INGEST_ON_START: 'false',
      // On by default in the product; the process tests are about the process, not about routing.
      ENABLE_ROUTE_STICKINESS: 'false',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** Waits until the app process answers /health/ready with 200; fails if it exits first. */
export async function waitUntilReady(app: AppProcess, port: number, timeoutMs = 120000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (app.child.exitCode !== null) {
      throw new Error(`app process exited with ${app.child.exitCode}:\n${app.output()}`);
    }
    const ready = await fetch(`http://127.0.0.1:${port}/health/ready`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  app.child.kill('SIGKILL');
  throw new Error(`app process did not become ready:\n${app.output()}`);
}

/** Stops the process (SIGTERM, or the given signal) and waits until it is gone. */
export async function stopAppProcess(app: AppProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (app.child.exitCode === null && app.child.signalCode === null) app.child.kill(signal);
  await app.exited;
}
