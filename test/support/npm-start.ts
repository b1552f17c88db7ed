import { ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { freePort, waitUntilReady } from './app-process';
import { embeddedDataDir } from './embedded-servers';
import { REPO_ROOT } from './repo-root';

/** One `npm start` as a user runs it, on a port and an embedded data directory of its own. */
export interface NpmStart {
  npm: ChildProcess;
  port: number;
  dataDir: string;
  output: () => string;
}

/**
 * `npm start` with the test's environment, minus `unset`, plus `extraEnv`; resolves once /health/ready answers
 * 200. The data directory is migrated already: the first start of an empty one is the CI smoke test's
 * (scripts/smoke-embedded.sh).
 */
export async function npmStart(
  extraEnv: NodeJS.ProcessEnv = {},
  unset: readonly string[] = ['DATABASE_URL', 'LLM_BASE_URL'],
  timeoutMs = 150000,
): Promise<NpmStart> {
  const port = await freePort();
  const dataDir = embeddedDataDir('npm-start-test-');
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: 'info' };
  for (const name of unset) delete env[name];
  Object.assign(env, extraEnv);
  const npm = spawn('npm', ['start'], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  npm.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  npm.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await waitUntilReady({ child: npm, output: () => output }, port, timeoutMs);
  return { npm, port, dataDir, output: () => output };
}

function procText(pid: string, file: 'cmdline' | 'environ'): string {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return '';
  }
}

/**
 * Every process of one `npm start` (Linux /proc): npm, the server and the embedded databases all carry its
 * DATA_DIR, in their environment or on their command line.
 */
export function processesOf(dataDir: string): { pid: number; cmdline: string }[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid)
    .map((pid) => ({ pid, cmdline: procText(pid, 'cmdline') }))
    .filter(({ pid, cmdline }) => {
      const environ = procText(pid, 'environ').split('\0');
      return (
        cmdline.includes(dataDir) ||
        environ.some((entry) => /^(DATA_DIR|REFERENCE_MCP_DATA_DIR)=/.test(entry) && entry.includes(dataDir))
      );
    })
    .map(({ pid, cmdline }) => ({ pid: Number(pid), cmdline: cmdline.replace(/\0/g, ' ') }));
}
