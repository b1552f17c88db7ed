import { ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { portAnswers } from '../support/app-process';
import { embeddedDataDir } from '../support/embedded-servers';
import { freePort } from '../support/reference-mcp';
import { REPO_ROOT } from '../support/test-app';

/**
 * `npm start` as a user runs it: the build from dist/ (swc, path aliases, decorator metadata), the embedded
 * database in a child process, and a clean stop whichever of its processes gets the signal.
 */
interface Started {
  npm: ChildProcess;
  port: number;
  dataDir: string;
  output: () => string;
}

async function npmStart(extraEnv: NodeJS.ProcessEnv = {}): Promise<Started> {
  const port = await freePort();
  // Migrated already: the first start of an empty directory is the CI smoke test's (scripts/smoke-embedded.sh).
  const dataDir = embeddedDataDir('npm-start-test-');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    ...extraEnv,
  };
  delete env.DATABASE_URL;
  delete env.LLM_BASE_URL;
  const npm = spawn('npm', ['start'], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  npm.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  npm.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 150000;
  while (Date.now() < deadline) {
    if (npm.exitCode !== null) throw new Error(`npm start exited with ${npm.exitCode}:\n${output}`);
    const ready = await fetch(`http://127.0.0.1:${port}/health/ready`).then(
      (response) => response.status === 200,
      () => false,
    );
    if (ready) return { npm, port, dataDir, output: () => output };
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  npm.kill('SIGKILL');
  throw new Error(`npm start was not ready in time:\n${output}`);
}

function procText(pid: string, file: 'cmdline' | 'environ'): string {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return '';
  }
}

/**
 * Every process of one `npm start` (Linux /proc): npm, the server and the embedded database all carry its
 * DATA_DIR, in their environment or on their command line.
 */
function processesOf(dataDir: string): { pid: number; cmdline: string }[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid)
    .map((pid) => ({ pid, cmdline: procText(pid, 'cmdline') }))
    .filter(
      ({ pid, cmdline }) =>
        cmdline.includes(dataDir) || procText(pid, 'environ').split('\0').includes(`DATA_DIR=${dataDir}`),
    )
    .map(({ pid, cmdline }) => ({ pid: Number(pid), cmdline: cmdline.replace(/\0/g, ' ') }));
}

async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return condition();
}

describe('npm start', () => {
  const started: Started[] = [];

  afterAll(() => {
    for (const run of started) {
      for (const { pid } of processesOf(run.dataDir)) process.kill(pid, 'SIGKILL');
      rmSync(run.dataDir, { recursive: true, force: true });
    }
  });

  it('serves from the fast build, then SIGTERM to the npm pid stops the server and the embedded database', async () => {
    const run = await npmStart();
    started.push(run);
    const base = `http://127.0.0.1:${run.port}`;

    // Decorator metadata survives the build: the route schemas compiled from the DTOs reject a bad body field by field...
    const invalid = await fetch(`${base}/v1/channels/web/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tenant_id: 'npm-start', agent_id: 'telecom_contas', text: 42 }),
    });
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ error: { code: 'VALIDATION_FAILED' } });
    // ...swagger sees the DTOs' properties, and Nest's DI wired the whole turn.
    const openapi = (await (await fetch(`${base}/docs/json`)).json()) as {
      components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
    };
    expect(Object.keys(openapi.components.schemas.ChannelMessageDto?.properties ?? {})).toContain(
      'session_id',
    );
    const turn = await fetch(`${base}/v1/channels/web/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        tenant_id: 'npm-start',
        agent_id: 'telecom_contas',
        session_id: 's-1',
        text: 'Qual é o meu plano?',
      }),
    });
    expect(turn.status).toBe(200);

    // Start-up tells what it does as it happens: its lines carry different times.
    const times = run
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => (JSON.parse(line) as { time: number }).time);
    expect(new Set(times).size).toBeGreaterThan(2);

    const processes = processesOf(run.dataDir);
    expect(processes.filter(({ cmdline }) => cmdline.includes('pglite-server'))).toHaveLength(1);
    expect(processes.filter(({ cmdline }) => cmdline.includes('agent-runtime/src/main.js'))).toHaveLength(1);
    run.npm.kill('SIGTERM');
    expect(await waitUntil(() => processesOf(run.dataDir).length === 0, 30000)).toBe(true);
    expect(await portAnswers(run.port)).toBe(false);
  }, 240000);

  it('SIGINT to the server pid stops it, its database and npm; LOG_FORMAT=pretty logs readable lines', async () => {
    const run = await npmStart({ LOG_FORMAT: 'pretty' });
    started.push(run);
    expect(
      await waitUntil(
        () => new RegExp(`INFO: \\[Main\\] agent-runtime listening on port ${run.port}`).test(run.output()),
        10000,
      ),
    ).toBe(true);
    expect(
      run
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{')),
    ).toEqual([]);
    const server = processesOf(run.dataDir).find(({ cmdline }) =>
      cmdline.includes('agent-runtime/src/main.js'),
    );
    if (!server) throw new Error(`no server process among ${JSON.stringify(processesOf(run.dataDir))}`);
    process.kill(server.pid, 'SIGINT');
    expect(await waitUntil(() => processesOf(run.dataDir).length === 0, 30000)).toBe(true);
    expect(await portAnswers(run.port)).toBe(false);
  }, 240000);
});
