import { ChildProcess, spawn } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { compiledEntry } from './repo-root';
import { waitUntil } from './wait-for';
import { REPO_ROOT, TEST_LLM_PROFILES } from './test-app';

/**
 * Ports handed out below Linux's ephemeral range (32768-60999), from which the OS picks the local port of every
 * outgoing connection and of every `listen(0)`: a port taken from there and released can be reused by one of them
 * before the test's process binds it (EADDRINUSE, seen in CI). Other suites pick at random in the same span and
 * every pick is checked, so two suites meet only if both pick the same port at the same moment.
 */
const PORT_SPAN = { from: 20000, to: 32000 };

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    // All interfaces, as the app listens: a port bound on one address only is taken too.
    server.listen(port, '0.0.0.0', () => server.close(() => resolve(true)));
  });
}

/** A TCP port nobody listens on right now, outside the range the OS hands out by itself. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = PORT_SPAN.from + Math.floor(Math.random() * (PORT_SPAN.to - PORT_SPAN.from));
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port between ${PORT_SPAN.from} and ${PORT_SPAN.to}`);
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
      // Not development: the quick start's demo model and reference MCP server never start by themselves here.
      NODE_ENV: 'test',
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

/**
 * Waits until the process answers /health/ready on `port` with 200; fails at once if it exits first, and kills it
 * if it is not ready in time. Both failures show what it wrote (`output`).
 */
export async function waitUntilReady(
  app: Pick<AppProcess, 'child' | 'output'>,
  port: number,
  timeoutMs = 120000,
): Promise<void> {
  try {
    await waitUntil(
      `the process to answer /health/ready on port ${port}`,
      async () => {
        if (app.child.exitCode !== null) {
          throw new Error(`process exited with ${app.child.exitCode}:\n${app.output()}`);
        }
        return fetch(`http://127.0.0.1:${port}/health/ready`).then(
          (r) => r.status === 200,
          () => false,
        );
      },
      timeoutMs,
      250,
    );
  } catch (error) {
    // An exit already says what the process wrote.
    if (app.child.exitCode !== null) throw error;
    app.child.kill('SIGKILL');
    throw new Error(`${error instanceof Error ? error.message : String(error)}:\n${app.output()}`);
  }
}

/** Stops the process (SIGTERM, or the given signal) and waits until it is gone. */
export async function stopAppProcess(app: AppProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (app.child.exitCode === null && app.child.signalCode === null) app.child.kill(signal);
  await app.exited;
}
