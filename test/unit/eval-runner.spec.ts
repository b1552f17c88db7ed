import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadYamlFile, routingFileSchema } from '@agent/config';
import { FakeChatRequest, FakeLlmServer, FakeReply, lastUserMessage } from '../support/fake-llm';
import { ContinuityDataset, loadDataset } from '../../eval/continuity-dataset';
import type { EvalSummary } from '../../eval/continuity-metrics';
import type { EvalReport } from '../../eval/report';
import { main } from '../../eval/run-eval';

const ROOT = resolve(__dirname, '..', '..');
const DATASET = join(ROOT, 'eval', 'dataset', 'continuity.yaml');
const catalogue = loadYamlFile(join(ROOT, 'config', 'routing.yaml'), routingFileSchema);

interface Script {
  label: string;
  confidence: number;
  invalid?: boolean;
  /** The capability a ROUTE names. */
  target?: string;
}

/** Each enabled intent's capability, as the classifier's payload shows it. */
const capabilities = new Map(
  catalogue.intents.filter((i) => i.enabled).map((i) => [i.name, i.label ?? i.description]),
);

/**
 * The key a classifier request is answered by: the current message and the start of the reply right before it
 * (the classifier sees a long reply cut to its start and its end).
 */
function keyOf(user: string, previousAssistant: string | undefined): string {
  return `${user}\u0000${(previousAssistant ?? '').slice(0, 60)}`;
}

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) } };
}

// The machine running the suite may be busy: the whole dataset goes through a real Nest context and HTTP.
jest.setTimeout(60_000);

describe('eval:continuity runner', () => {
  let fake: FakeLlmServer;
  let dataset: ContinuityDataset;
  let outDir: string;
  const scripts = new Map<string, Script>();
  let shortAcks = 0;
  let switches = 0;
  let total = 0;
  /** ROUTE turns whose next intent is known, and how many of them name a target (one of those wrongly). */
  let knownRoutes = 0;
  let namedTargets = 0;

  beforeAll(async () => {
    dataset = loadDataset(DATASET, catalogue);
    outDir = mkdtempSync(join(tmpdir(), 'eval-runner-'));
    let missedSwitchPlanted = false;
    let invalidPlanted = false;
    let wrongTargetPlanted = false;
    for (const conversation of dataset.conversations) {
      conversation.turns.forEach((turn, index) => {
        total++;
        const key = keyOf(turn.user, conversation.turns[index - 1]?.assistant);
        let script: Script = { label: turn.label, confidence: 0.95 };
        if (turn.label === 'ROUTE' && turn.active_agent !== null) {
          switches++;
          if (!missedSwitchPlanted) {
            // One confident wrong CONTINUE: a missed switch, and a misroute, at every threshold up to 0.97.
            script = { label: 'CONTINUE', confidence: 0.97 };
            missedSwitchPlanted = true;
          }
        } else if (turn.label === 'CONTINUE' && turn.tags.includes('short_ack')) {
          // Right but unsure: bypassed at 0.85, sent to the router at 0.90.
          script = { label: 'CONTINUE', confidence: 0.85 };
          shortAcks++;
        } else if (turn.label === 'HUMAN_HANDOFF' && !invalidPlanted) {
          script = { label: 'HUMAN_HANDOFF', confidence: 0.95, invalid: true };
          invalidPlanted = true;
        }
        const next = conversation.turns[index + 1]?.previous_intent ?? null;
        if (turn.label === 'ROUTE' && next !== null) {
          knownRoutes++;
          if (script.label === 'ROUTE') {
            namedTargets++;
            // One confident wrong target: the router's model would be skipped for the wrong intent.
            const named = wrongTargetPlanted
              ? next
              : [...capabilities.keys()].find((intent) => intent !== next);
            wrongTargetPlanted = true;
            script = { ...script, target: capabilities.get(named ?? next) };
          }
        }
        const existing = scripts.get(key);
        if (existing && existing.label !== script.label) {
          throw new Error(`ambiguous fake key for "${turn.user}"`);
        }
        scripts.set(key, script);
      });
    }
    fake = await FakeLlmServer.start();
    fake.script({
      reply: (request: FakeChatRequest): FakeReply => {
        const payload = JSON.parse(lastUserMessage(request)) as {
          current_message: string;
          recent_history: { role: string; content: string }[];
        };
        const last = payload.recent_history[payload.recent_history.length - 1];
        const script = scripts.get(keyOf(payload.current_message, last?.content));
        if (!script) return { status: 500 };
        if (script.invalid) {
          return {
            content: 'I think this is a handoff.',
            usage: { prompt_tokens: 300, completion_tokens: 8 },
          };
        }
        return {
          json: {
            decision: script.label,
            confidence: script.confidence,
            reason: 'scripted from the label',
            ...(script.target ? { target: script.target } : {}),
          },
          usage: { prompt_tokens: 300, completion_tokens: 20 },
        };
      },
    });
  });

  afterAll(async () => {
    await fake.stop();
    rmSync(outDir, { recursive: true, force: true });
  });

  it('runs every labelled turn through ContinuityService and writes the reports', async () => {
    const { io, out, err } = capture();
    const code = await main(
      [
        '--stage',
        'continuity',
        '--base-url',
        fake.baseUrl,
        '--small-model',
        'eval-model',
        '--out',
        outDir,
        '--concurrency',
        '8',
      ],
      { ROUTE_STICKINESS_CONFIDENCE_THRESHOLD: '0.9' },
      io,
      ROOT,
    );
    expect({ code, err: err.filter((l) => !/^\s+\[continuity\] \d+\/\d+$/.test(l)) }).toEqual({
      code: 0,
      err: ['continuity ...'],
    });

    // The service's own profile for the stage (config/llm_profiles.yaml, small tier), as in production.
    expect(fake.requests).toHaveLength(total);
    for (const request of fake.requests) {
      expect(request.model).toBe('eval-model');
      expect(request.body).toMatchObject({
        temperature: 0,
        max_tokens: 80,
        response_format: { type: 'json_object' },
      });
      const payload = JSON.parse(lastUserMessage(request)) as { recent_history: unknown[] };
      expect(payload.recent_history.length).toBeLessThanOrEqual(4);
    }

    const files = readdirSync(outDir).sort();
    expect(files).toEqual([
      expect.stringMatching(/^eval-eval-model-.*-calibration\.svg$/),
      expect.stringMatching(/^eval-eval-model-.*-overview\.svg$/),
      expect.stringMatching(/^eval-eval-model-.*-thresholds\.svg$/),
      expect.stringMatching(/^eval-eval-model-.*\.json$/),
      expect.stringMatching(/^eval-eval-model-.*\.md$/),
    ]);
    const report = JSON.parse(readFileSync(join(outDir, files[3]), 'utf8')) as EvalReport;
    const [stage] = report.stages;
    expect(stage.name).toBe('continuity');
    expect(stage.cases).toHaveLength(total);
    expect(report.meta.service).toMatchObject({ stickiness_threshold: 0.9, history_turns: 2 });
    expect(report.meta.warnings).toEqual([
      expect.stringContaining('answered an invalid continuity_decision'),
    ]);
    expect(stage.summary.model_accuracy).toEqual({ count: total - 2, total, rate: (total - 2) / total });
    expect(stage.summary.accuracy.count).toBe(total - 2 - shortAcks);
    expect(stage.summary.failures).toEqual({ invalid_output: 1 });
    expect(stage.summary.invalid_output.count).toBe(1);
    expect(stage.summary.model_confusion.HUMAN_HANDOFF.FAILED).toBe(1);
    expect(stage.summary.usage.prompt_tokens).toBe(300 * total);
    expect(stage.summary.threshold?.at_configured.costly.count).toBe(1);

    const { continuity: summary } = stage.extra as { continuity: EvalSummary };
    expect(summary.missed_switch).toEqual({ count: 1, total: switches, rate: 1 / switches });
    expect(summary.misroute.count).toBe(1);
    expect(summary.route_targets).toEqual({
      named: { count: namedTargets, total: knownRoutes, rate: namedTargets / knownRoutes },
      right: { count: namedTargets - 1, total: namedTargets, rate: (namedTargets - 1) / namedTargets },
    });
    expect(namedTargets).toBeGreaterThan(20);
    const at085 = summary.sweep.find((row) => row.threshold === 0.85);
    expect(at085?.accuracy.count).toBe(total - 2);
    const at1 = summary.sweep.find((row) => row.threshold === 1);
    expect(at1).toMatchObject({ bypass: { count: 0 }, misroute: { count: 0 } });
    expect(summary.lowest_safe_threshold).toBe(0.975);
    expect(summary.by_depth[0].group).toBe('1');
    expect(summary.by_language.map((g) => g.group)).toEqual(['en', 'es', 'pt']);
    // The generic sweep applies the classifier's own rule: both count the same misroutes at every threshold.
    for (const row of summary.sweep) {
      const generic = stage.summary.threshold?.sweep.find((r) => r.threshold === row.threshold);
      if (generic) expect(generic.costly.count).toBe(row.misroute.count);
    }

    const markdown = readFileSync(join(outDir, files[4]), 'utf8');
    for (const heading of [
      '## Continuity classifier',
      '### Headline',
      '### Per-label precision and recall',
      '### Calibration',
      '### Threshold',
      '### Threshold sweep: bypass against misroute',
      '### Accuracy by turn depth',
      '### By situation (hard cases)',
      '### Wrong cases',
    ]) {
      expect(markdown).toContain(heading);
    }
    expect(out).toEqual(expect.arrayContaining([expect.stringMatching(/^continuity: accuracy /)]));
    // The caller's environment is left as it was.
    expect(process.env.ENABLE_ROUTE_STICKINESS).toBeUndefined();
    expect(process.env.ROUTE_STICKINESS_CONFIDENCE_THRESHOLD).toBeUndefined();
  });

  it('without an endpoint validates the dataset and says what it needs', async () => {
    const { io, out } = capture();
    const requests = fake.requests.length;
    expect(await main(['--stage', 'continuity'], {}, io, ROOT)).toBe(0);
    expect(out[0]).toBe('Labelled sets in eval/dataset are valid:');
    expect(out[1]).toMatch(/^ {2}continuity: \d+ cases \(en \d+, es \d+, pt \d+\)/);
    expect(out.join('\n')).toContain('No model endpoint is configured');
    expect(fake.requests.length).toBe(requests);
  });

  it('rejects bad usage with exit code 2 and a broken dataset with exit code 1', async () => {
    const usage = capture();
    expect(await main(['--concurrency', '0'], {}, usage.io, ROOT)).toBe(2);
    expect(usage.err[0]).toContain('--concurrency must be an integer');
    expect(await main(['--bogus'], {}, usage.io, ROOT)).toBe(2);

    const datasets = join(outDir, 'datasets');
    cpSync(join(ROOT, 'eval', 'dataset'), datasets, { recursive: true });
    writeFileSync(
      join(datasets, 'continuity.yaml'),
      readFileSync(DATASET, 'utf8').replace(
        'label: CONTINUE\n        tags: [follow_up]',
        'label: STAY\n        tags: [follow_up]',
      ),
    );
    const invalid = capture();
    expect(await main(['--stage', 'continuity', '--datasets', datasets], {}, invalid.io, ROOT)).toBe(1);
    expect(invalid.err.join('\n')).toMatch(/conversation "pt-01-seed-plan-then-dispute" turn 2 label: /);
    expect(existsSync(join(datasets, 'continuity.yaml'))).toBe(true);
  });
});
