import { execFile, spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { MODEL_VARIABLES } from '../../apps/agent-runtime/src/quick-start/demo-model.start';
import { REFERENCE_MCP_PORT } from '../../apps/agent-runtime/src/quick-start/reference-mcp.companion';
import { portAnswers } from '../support/app-process';
import { NpmStart, npmStart, processesOf } from '../support/npm-start';
import { waitUntil } from '../support/wait-for';
import { REPO_ROOT } from '../support/repo-root';

/**
 * The README's quick start, run as written on a machine with no model, no key and no Docker: `npm start`, then
 * each curl of its code blocks (only the port is the test's own). It must show a routed answer with a tool
 * result, a follow-up that skips the router and a handoff; `npm run demo` must run beside it; Ctrl-C's signal
 * stops everything it started.
 */

/** What a fresh shell has: none of the variables that configure a model, a database or the environment. */
const FRESH_SHELL = [
  'NODE_ENV',
  'DATABASE_URL',
  ...MODEL_VARIABLES,
  'LLM_PROFILES_PATH',
  'CONFIG_DIR',
  'MCP_SERVER_TELECOM_URL',
  'MCP_SERVER_RETAIL_URL',
];

/** The commands of the README's quick-start code blocks: continued lines joined, comments dropped. */
function quickStartBlocks(): string[][] {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const section = readme.slice(
    readme.indexOf('## Quick start'),
    readme.indexOf('\n## ', readme.indexOf('## Quick start') + 1),
  );
  return [...section.matchAll(/```bash\n([\s\S]*?)```/g)].map(([, block]) =>
    block
      .replace(/\\\n\s*/g, '')
      .split('\n')
      .map((line) => line.replace(/\s+#.*$/, '').trim())
      .filter((line) => line !== ''),
  );
}

interface Turn {
  answer: string;
  route: string;
  route_bypassed: boolean;
  route_decision: { method: string };
  continuity_signal: { decision: string; reason: string } | null;
  session_control: string | null;
  human_handoff_requested: boolean;
  unavailable: unknown[];
}

describe("the README's quick start", () => {
  let run: NpmStart | undefined;

  afterAll(() => {
    if (!run) return;
    for (const { pid } of processesOf(run.dataDir)) process.kill(pid, 'SIGKILL');
    rmSync(run.dataDir, { recursive: true, force: true });
  });

  it('shows a routed answer with a tool result, a follow-up without the router and a handoff', async () => {
    const [install, first, more] = quickStartBlocks();
    expect(install).toEqual(['npm ci', 'npm start']);
    expect(await portAnswers(REFERENCE_MCP_PORT)).toBe(false);
    run = await npmStart({}, FRESH_SHELL, 240000);
    const port = run.port;
    const output = run.output;
    expect(output()).toMatch(/DEMO MODEL answers every model stage/);
    expect(output()).toMatch(/started beside the service for the quick start/);

    const curl = async (command: string): Promise<Turn> => {
      expect(command).toMatch(/^curl .*localhost:3000\//);
      const { stdout } = await promisify(execFile)('bash', [
        '-c',
        command.replace('localhost:3000', `localhost:${port}`),
      ]);
      // A streamed answer's last event carries the JSON body; its deltas add up to the answer.
      const streamed = /^event: turn\.completed\ndata: (.*)$/m.exec(stdout)?.[1];
      if (streamed === undefined) return JSON.parse(stdout) as Turn;
      const deltas = [...stdout.matchAll(/^event: answer\.delta\ndata: (.*)$/gm)].map(
        ([, data]) => (JSON.parse(data) as { text: string }).text,
      );
      const turn = JSON.parse(streamed) as Turn;
      expect(deltas.join('')).toBe(turn.answer);
      return turn;
    };
    expect(first).toHaveLength(1);
    const routed = await curl(first[0]);
    expect(routed).toMatchObject({ route: 'product_agent', route_bypassed: false, unavailable: [] });
    // The reference MCP server's plan of that line, through the consultar_plano tool, said by the demo model.
    expect(routed.answer).toMatch(/^\[modelo de demonstração\] consultei consultar_plano: .*Controle 30GB/);

    expect(more).toHaveLength(2);
    const followUp = await curl(more[0]);
    expect(followUp).toMatchObject({
      route: 'product_agent',
      route_bypassed: true,
      route_decision: { method: 'continuity' },
      continuity_signal: { decision: 'CONTINUE' },
      unavailable: [],
    });
    expect(followUp.answer).toMatch(/Controle 30GB/);
    const handoff = await curl(more[1]);
    expect(handoff).toMatchObject({
      route: 'human_handoff',
      session_control: 'HUMAN_HANDOFF',
      human_handoff_requested: true,
      continuity_signal: { decision: 'HUMAN_HANDOFF', reason: expect.stringMatching(/^\[demo model\]/) },
    });

    // npm run demo beside it: its own data directories, its own reference server.
    const demo = spawn('npm', ['run', 'demo'], {
      cwd: REPO_ROOT,
      env: Object.fromEntries(Object.entries(process.env).filter(([name]) => !FRESH_SHELL.includes(name))),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let demoOutput = '';
    demo.stdout.on('data', (chunk: Buffer) => (demoOutput += chunk.toString()));
    demo.stderr.on('data', (chunk: Buffer) => (demoOutput += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => demo.once('exit', resolve));
    expect({ code, demoOutput }).toMatchObject({ code: 0 });
    expect(demoOutput).toMatch(
      /"o que está incluso\?"\n {2}decision CONTINUE .*\n {2}bypassed true · router LLM called: no/,
    );
    expect(demoOutput).toMatch(/decision HUMAN_HANDOFF/);

    // Ctrl-C's signal: the service, its database and the reference MCP server all stop.
    run.npm.kill('SIGINT');
    const dataDir = run.dataDir;
    await waitUntil('every process of npm start to be gone', () => processesOf(dataDir).length === 0, 30000);
    expect(await portAnswers(port)).toBe(false);
    expect(await portAnswers(REFERENCE_MCP_PORT)).toBe(false);
  }, 480000);
});
