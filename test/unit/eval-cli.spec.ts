import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadYamlFile, routingFileSchema, toolsFileSchema } from '@agent/config';
import {
  FakeChatRequest,
  FakeLlmServer,
  FakeReply,
  guardrailChecks,
  lastUserMessage,
} from '../support/fake-llm';
import { loadDataset } from '../../eval/continuity-dataset';
import {
  loadGuardrailCorpus,
  loadJudgeSet,
  loadMemorySet,
  loadParameterSet,
  loadRouterSet,
  loadTransactionSet,
} from '../../eval/datasets';
import type { EvalReport } from '../../eval/report';
import { main } from '../../eval/run-eval';
import { STAGE_NAMES } from '../../eval/stage';

const ROOT = resolve(__dirname, '..', '..');
const DATASETS = join(ROOT, 'eval', 'dataset');
const LIMIT = 6;
const routing = loadYamlFile(join(ROOT, 'config', 'routing.yaml'), routingFileSchema);
const catalogue = { routing, tools: loadYamlFile(join(ROOT, 'config', 'tools.yaml'), toolsFileSchema) };

/** Scripted answers from the labels of the first cases of every set; one router answer is planted as prose. */
function scriptFromLabels(fake: FakeLlmServer): { plantedInvalid: string } {
  const continuity = new Map<string, string>();
  for (const conversation of loadDataset(join(DATASETS, 'continuity.yaml'), routing).conversations) {
    for (const turn of conversation.turns) {
      if (!continuity.has(turn.user)) continuity.set(turn.user, turn.label);
    }
  }
  const router = loadRouterSet(join(DATASETS, 'router.yaml'), catalogue).cases;
  const plantedInvalid = router[1].text;
  const corpus = loadGuardrailCorpus(join(DATASETS, 'guardrails')).cases;
  const transactions = loadTransactionSet(join(DATASETS, 'transactions.yaml'), catalogue).cases;
  const parameters = loadParameterSet(join(DATASETS, 'parameters.yaml'), catalogue).cases;
  const memory = loadMemorySet(join(DATASETS, 'memory.yaml')).cases;
  const judges = loadJudgeSet(join(DATASETS, 'judges.yaml'), catalogue).cases;
  const payload = (request: FakeChatRequest): Record<string, unknown> => {
    try {
      return JSON.parse(lastUserMessage(request)) as Record<string, unknown>;
    } catch {
      return {};
    }
  };
  fake.script({
    model: 'route_continuity',
    reply: (request): FakeReply => {
      const decision = continuity.get(String(payload(request).current_message)) ?? 'ROUTE';
      return { json: { decision, confidence: 0.95, reason: 'scripted label' } };
    },
  });
  fake.script({
    model: 'router',
    reply: (request): FakeReply => {
      const message = String(payload(request).message);
      if (message === plantedInvalid) return { content: 'It is about the bill, I think.' };
      const item = router.find((c) => c.text === message);
      const [first, ...more] = item?.intents ?? [];
      return {
        json: {
          intent: first ?? 'none',
          confidence: first ? 0.9 : 0,
          reason: 'scripted',
          ...(more.length > 0 ? { more_intents: more.map((intent) => ({ intent, confidence: 0.9 })) } : {}),
        },
      };
    },
  });
  fake.script({
    model: 'guardrail',
    reply: (request): FakeReply => {
      const text = lastUserMessage(request);
      const attack = corpus.some((c) => c.label === 'attack' && text.includes(c.text));
      return {
        json: Object.fromEntries(
          guardrailChecks(request).map((code) => [
            code,
            attack && code === 'PINJ'
              ? { verdict: 'block', confidence: 0.92, reason: 'scripted attack' }
              : { verdict: 'allow', confidence: 0.9 },
          ]),
        ),
      };
    },
  });
  fake.script({
    model: 'confirmation',
    reply: (request): FakeReply => {
      const item = transactions.find((c) => c.message === lastUserMessage(request));
      return {
        json: {
          decision: item?.label ?? 'OTHER',
          confidence: 0.9,
          operation: item?.operation ?? null,
          values: item?.values ?? {},
        },
      };
    },
  });
  // parameter_extraction has no profile of its own in the test profiles: it falls back to `default`.
  fake.script({
    model: 'default',
    reply: (request): FakeReply => {
      const message = lastUserMessage(request);
      const control = transactions.find((c) => c.message === message);
      if (control) {
        return {
          json: {
            action: control.label === 'OTHER' ? 'OTHER' : control.label,
            confidence: 0.9,
            operation: control.operation ?? null,
            values: {},
          },
        };
      }
      const item = parameters.find((c) => c.message === message);
      const values = Object.fromEntries(
        Object.entries(item?.expected ?? {}).map(([field, value]) => [
          field,
          Array.isArray(value) ? value[0] : value,
        ]),
      );
      return { json: { action: item?.action ?? 'ANSWER', confidence: 0.9, operation: null, values } };
    },
  });
  fake.script({
    model: 'memory_extraction',
    reply: (request): FakeReply => {
      const item = memory.find((c) => c.message === payload(request).customer_message);
      return {
        json: {
          facts: (item?.facts ?? []).map((fact, i) => ({
            category: fact.category,
            key: `fact_${i}`,
            value: fact.value[0],
            confidence: 0.9,
          })),
        },
      };
    },
  });
  fake.script({
    model: 'judge',
    reply: (request): FakeReply => {
      const system = String(request.messages[0]?.content ?? '');
      const name = /the (\w+) judge/.exec(system)?.[1] ?? '';
      const item = judges.find((c) => lastUserMessage(request).includes(c.answer));
      const pass = (item?.expected as Record<string, string> | undefined)?.[name] !== 'fail';
      return { json: { score: pass ? 0.9 : 0.2, passed: pass, reason: 'scripted' } };
    },
  });
  return { plantedInvalid };
}

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) } };
}

// One Nest context and a few cases of every stage over HTTP: seconds, on a busy machine a little more.
jest.setTimeout(60_000);

describe('npm run eval against the scripted model', () => {
  let fake: FakeLlmServer;
  let outDir: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    scriptFromLabels(fake);
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
      expect(stage.summary.usage.cost_usd).not.toBeNull();
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
