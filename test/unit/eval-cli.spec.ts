import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadYamlFile, routingFileSchema, toolsFileSchema } from '@agent/config';
import { FakeLlmServer } from '../support/fake-llm';
import { scriptFromLabels } from '../support/scripted-eval-model';
import { loadRouterSet } from '../../eval/datasets';
import type { EvalReport } from '../../eval/report';
import { main } from '../../eval/run-eval';
import { STAGE_NAMES } from '../../eval/stage';

const ROOT = resolve(__dirname, '..', '..');
const DATASETS = join(ROOT, 'eval', 'dataset');
const LIMIT = 6;
const routing = loadYamlFile(join(ROOT, 'config', 'routing.yaml'), routingFileSchema);
const catalogue = { routing, tools: loadYamlFile(join(ROOT, 'config', 'tools.yaml'), toolsFileSchema) };

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) } };
}

// One Nest context and a few cases of every stage over HTTP: seconds, on a busy machine a little more.
jest.setTimeout(60_000);

describe('npm run eval against the scripted model', () => {
  let fake: FakeLlmServer;
  let planted: { text: string } | undefined;
  let outDir: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    // One router answer in prose: a message the model is asked about (no keyword settles it) among the first.
    planted = loadRouterSet(join(DATASETS, 'router.yaml'), catalogue)
      .cases.slice(0, LIMIT)
      .find((c) => c.tags.includes('no_keyword'));
    scriptFromLabels(fake, planted?.text ?? null);
    outDir = mkdtempSync(join(tmpdir(), 'eval-cli-'));
    env = {
      ...process.env,
      CONFIG_DIR: join(ROOT, 'config'),
      LLM_PROFILES_PATH: join(ROOT, 'test', 'support', 'config', 'llm_profiles.yaml'),
      LLM_BASE_URL: fake.baseUrl,
      LLM_API_KEY: 'eval-secret-key',
    };
  });

  afterAll(async () => {
    await fake.stop();
    rmSync(outDir, { recursive: true, force: true });
  });

  it('writes a well-formed report of every stage, and compares two runs', async () => {
    const first = capture();
    const code = await main(
      ['--limit', String(LIMIT), '--out', outDir, '--label', 'scripted'],
      env,
      first.io,
    );
    expect({ code, err: first.err.filter((l) => !l.includes('] ') && !l.endsWith('...')) }).toEqual({
      code: 0,
      err: [],
    });
    const files = readdirSync(outDir);
    const json = files.find((f) => f.endsWith('.json'));
    const markdown = files.find((f) => f.endsWith('.md'));
    expect(json && markdown).toBeTruthy();
    const report = JSON.parse(readFileSync(join(outDir, json ?? ''), 'utf8')) as EvalReport;
    expect(report.format).toBe('agent-runtime-eval/1');
    expect(report.stages.map((s) => s.name)).toEqual([...STAGE_NAMES]);
    for (const stage of report.stages) {
      expect({ stage: stage.name, cases: stage.summary.cases > 0 }).toEqual({
        stage: stage.name,
        cases: true,
      });
      expect(stage.summary.usage.calls).toBeGreaterThan(0);
      expect({ stage: stage.name, cost: stage.summary.usage.cost }).toEqual({
        stage: stage.name,
        cost: expect.any(Number),
      });
      expect(stage.summary.latency_ms.p50).not.toBeNull();
      for (const item of stage.cases) expect(stage.summary.labels).toContain(item.expected);
    }
    const byName = Object.fromEntries(report.stages.map((s) => [s.name, s]));
    // The planted prose answer is an invalid output, and the router still decides (keyword or fallback).
    expect(byName.router.summary.invalid_output.count).toBe(1);
    for (const name of [
      'continuity',
      'router',
      'guardrails',
      'transaction_control',
      'memory_extraction',
    ] as const) {
      expect(byName[name].summary.threshold?.sweep.length).toBeGreaterThan(5);
      expect(byName[name].summary.calibration?.bins.length).toBeGreaterThan(0);
    }
    expect(JSON.stringify(report)).not.toContain('eval-secret-key');

    const text = readFileSync(join(outDir, markdown ?? ''), 'utf8');
    for (const stage of report.stages) expect(text).toContain(`## ${stage.title}`);
    expect(text).toContain('### Threshold');
    expect(text).toContain('### Calibration');
    const charts = files.filter((f) => f.endsWith('.svg'));
    expect(charts.length).toBe(3);
    for (const chart of charts) {
      const svg = readFileSync(join(outDir, chart), 'utf8');
      expect(svg.startsWith('<svg')).toBe(true);
      expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
      expect(text).toContain(`](${chart})`);
    }
    expect(first.out.some((l) => l.startsWith('report: '))).toBe(true);

    // A second run of two stages beside the first: one comparison report.
    const second = capture();
    const again = await main(
      [
        '--stage',
        'router,guardrails',
        '--limit',
        '3',
        '--out',
        outDir,
        '--compare',
        join(outDir, json ?? ''),
      ],
      env,
      second.io,
    );
    expect(again).toBe(0);
    const comparison = readdirSync(outDir).find((f) => f.startsWith('compare-') && f.endsWith('.md'));
    expect(comparison).toBeDefined();
    const compared = readFileSync(join(outDir, comparison ?? ''), 'utf8');
    expect(compared).toContain('## Enterprise Router');
    expect(compared).toContain('| stage | accuracy A | accuracy B |');
    expect(existsSync(join(outDir, (comparison ?? '').replace(/\.md$/, '-accuracy.svg')))).toBe(true);
  });

  it('only validates the sets without an endpoint, and refuses bad input with its exit code', async () => {
    const quiet = capture();
    const noEndpoint = {
      ...env,
      LLM_BASE_URL: undefined,
      LLM_PROFILES_PATH: join(ROOT, 'config', 'llm_profiles.yaml'),
    };
    expect(await main(['--stage', 'router'], noEndpoint, quiet.io)).toBe(0);
    expect(quiet.out.join('\n')).toContain('No model endpoint is configured');

    const usage = capture();
    expect(await main(['--stage', 'nope'], env, usage.io)).toBe(2);
    expect(usage.err[0]).toContain('unknown stage "nope"');
    expect(await main(['--target', 'router=2'], env, usage.io)).toBe(2);

    const broken = capture();
    expect(
      await main(
        ['--compare', join(ROOT, 'package.json'), '--compare', join(ROOT, 'package.json')],
        env,
        broken.io,
      ),
    ).toBe(1);
    expect(broken.err[0]).toContain('is not a report of npm run eval');
  });
});
