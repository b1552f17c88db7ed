import { rmSync } from 'node:fs';
import { portAnswers } from '../support/app-process';
import { NpmStart, npmStart, processesOf } from '../support/npm-start';
import { waitUntil } from '../support/wait-for';

/**
 * `npm start` as a user runs it: the build from dist/ (swc, path aliases, decorator metadata), the embedded
 * database in a child process, and a clean stop whichever of its processes gets the signal.
 */
describe('npm start', () => {
  const started: NpmStart[] = [];

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
    await waitUntil(
      'every process of npm start to be gone',
      () => processesOf(run.dataDir).length === 0,
      30000,
    );
    expect(await portAnswers(run.port)).toBe(false);
  }, 240000);

  it('SIGINT to the server pid stops it, its database and npm; LOG_FORMAT=pretty logs readable lines', async () => {
    const run = await npmStart({ LOG_FORMAT: 'pretty' });
    started.push(run);
    await waitUntil(
      'the pretty "listening" line',
      () => new RegExp(`INFO: \\[Main\\] agent-runtime listening on port ${run.port}`).test(run.output()),
      10000,
    );
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
    await waitUntil(
      'every process of npm start to be gone',
      () => processesOf(run.dataDir).length === 0,
      30000,
    );
    expect(await portAnswers(run.port)).toBe(false);
  }, 240000);
});
