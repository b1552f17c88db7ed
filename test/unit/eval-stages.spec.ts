import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TurnContextStore } from '@agent/observability';
import { calibration, recommendThreshold, SweepRow } from '../../eval/metrics';
import {
  charts,
  EvalReport,
  readReport,
  renderComparison,
  renderMarkdown,
  REPORT_FORMAT,
} from '../../eval/report';
import {
  CaseOutcome,
  JsonObject,
  runCase,
  StageResult,
  StageThreshold,
  summarizeStage,
  Usage,
} from '../../eval/stage';
import { continuityThreshold, ContinuityCase } from '../../eval/stages/continuity';
import { guardrailThreshold, GuardrailOutcome } from '../../eval/stages/guardrails';
import { judgeThreshold, JudgeOutcome } from '../../eval/stages/judges';
import { matchFacts, memoryThreshold, MemoryOutcome } from '../../eval/stages/memory';
import { RouterOutcome, routerThreshold } from '../../eval/stages/router';
import { fieldResult, transactionThreshold, TransactionOutcome } from '../../eval/stages/transactions';

const NO_USAGE: Usage = {
  calls: 1,
  prompt_tokens: 100,
  cached_prompt_tokens: 0,
  completion_tokens: 10,
  cost: 0.001,
  currency: 'USD',
};

function outcome<D extends JsonObject>(fields: Partial<CaseOutcome<D>> & { detail: D }): CaseOutcome<D> {
  return {
    id: 'c',
    language: 'pt',
    tags: [],
    text: 'm',
    expected: 'A',
    decided: 'A',
    model_label: 'A',
    confidence: 0.9,
    asked_model: true,
    failure: null,
    latency_ms: 10,
    usage: NO_USAGE,
    reason: '',
    ...fields,
  };
}

function row(threshold: number, costly: number, accuracy: number): SweepRow {
  const r = (rate: number) => ({ count: Math.round(rate * 100), total: 100, rate });
  return { threshold, costly: r(costly), accuracy: r(accuracy), acted: r(0.5) };
}

describe('evaluation measures', () => {
  it('calibration bins confidences and weighs the gap by cases', () => {
    const result = calibration([
      { confidence: 0.95, correct: true },
      { confidence: 0.97, correct: false },
      { confidence: 1, correct: true },
      { confidence: 0.55, correct: true },
    ]);
    const top = result.bins.find((b) => b.from === 0.95);
    expect(top).toMatchObject({ cases: 3, accuracy: 2 / 3 });
    expect(top?.mean_confidence).toBeCloseTo(0.973, 3);
    expect(result.bins.find((b) => b.from === 0.5)).toMatchObject({ cases: 1, accuracy: 1 });
    expect(result.ece).toBeCloseTo((3 * Math.abs(2 / 3 - 0.97333) + Math.abs(1 - 0.55)) / 4, 3);
    expect(calibration([]).ece).toBeNull();
  });

  it('recommends the most accurate threshold under the target, acting most among equals', () => {
    const rows = [row(0, 0.1, 0.8), row(0.5, 0.02, 0.85), row(0.7, 0.01, 0.85), row(0.9, 0, 0.6)];
    // Acceptance threshold: 0.5 and 0.7 tie on accuracy under 2%, the lower acts more.
    expect(recommendThreshold(rows, 0.02, true)).toBe(0.5);
    expect(recommendThreshold(rows, 0.015, true)).toBe(0.7);
    expect(recommendThreshold(rows, 0.001, true)).toBe(0.9);
    // Block threshold: among equals the higher one blocks less.
    expect(recommendThreshold(rows, 0.02, false)).toBe(0.7);
    expect(recommendThreshold([row(0, 0.5, 1)], 0.1, true)).toBeNull();
  });

  it('summarizes a stage: model label over the cases that asked it, failures, cost, calibration', () => {
    type D = { n: number };
    const cases = [
      outcome<D>({ expected: 'A', decided: 'A', model_label: 'A', confidence: 0.9, detail: { n: 1 } }),
      outcome<D>({ expected: 'A', decided: 'B', model_label: 'A', confidence: 0.4, detail: { n: 2 } }),
      outcome<D>({
        expected: 'B',
        decided: 'B',
        model_label: null,
        confidence: null,
        failure: 'invalid_output',
        detail: { n: 3 },
      }),
      outcome<D>({
        expected: 'B',
        decided: 'X',
        model_label: null,
        asked_model: false,
        latency_ms: 0,
        language: 'en',
        usage: { ...NO_USAGE, calls: 0, cost: null, currency: null },
        detail: { n: 4 },
      }),
      outcome<D>({ expected: 'B', decided: 'A', model_label: 'A', confidence: 0.6, detail: { n: 5 } }),
    ];
    const rule: StageThreshold<CaseOutcome<D>> = {
      setting: 'S',
      configured: 0.5,
      costly_error: 'wrong A: an A that is not one',
      at_risk: 'B cases',
      decideAt: (o, t) => (o.model_label === 'A' && (o.confidence ?? 0) >= t ? 'A' : 'B'),
      isCostly: (o, decided) => decided === 'A' && o.expected !== 'A',
      atRisk: (o) => o.expected === 'B',
      acts: (_o, decided) => decided === 'A',
      expected: (o) => o.expected,
      raiseToReduce: true,
    };
    const summary = summarizeStage(cases, {
      labels: ['A', 'B'],
      calibrated: true,
      threshold: rule,
      target: 0,
    });
    expect(summary.accuracy).toEqual({ count: 2, total: 5, rate: 0.4 });
    expect(summary.model_accuracy).toEqual({ count: 2, total: 4, rate: 0.5 });
    expect(summary.asked_model.count).toBe(4);
    expect(summary.invalid_output).toEqual({ count: 1, total: 4, rate: 0.25 });
    expect(summary.failures).toEqual({ invalid_output: 1 });
    expect(summary.columns).toEqual(['A', 'B', 'X']);
    expect(summary.model_confusion.B.FAILED).toBe(1);
    expect(summary.latency_ms.p50).toBe(10);
    expect(summary.usage.calls).toBe(4);
    expect(summary.cost_per_1000_cases).toBeNull();
    expect(summary.calibration?.cases).toBe(3);
    // At 0.5 the confident-enough wrong A is taken; from 0.65 it is not, and accuracy is best until 0.9.
    expect(summary.threshold?.at_configured).toMatchObject({
      threshold: 0.5,
      costly: { count: 1, total: 3 },
    });
    expect(summary.threshold?.recommended).toBe(0.65);
    expect(summary.by_language.map((g) => g.group)).toEqual(['en', 'pt']);
  });

  it('runCase counts a call that answered while the stage failed as invalid output', async () => {
    const call = (outcome: string) =>
      TurnContextStore.current()?.events.push({
        name: 'llm.call',
        at: '',
        payload: {
          profile: 'p',
          outcome,
          prompt_tokens: 1000,
          cached_prompt_tokens: 500,
          completion_tokens: 100,
        },
      });
    const price = { model: 'm', currency: 'EUR', input: 2, cached_input: 1, output: 8 };
    const ok = await runCase(
      'a',
      () => price,
      () => Promise.resolve(call('ok')),
    );
    expect(ok.failure(false)).toBeNull();
    expect(ok.failure(true)).toBe('invalid_output');
    expect(ok.usage.cost).toBeCloseTo((500 * 2 + 500 * 1 + 100 * 8) / 1e6);
    expect(ok.usage.currency).toBe('EUR');
    const timedOut = await runCase(
      'b',
      () => null,
      () => Promise.resolve(call('timeout')),
    );
    expect(timedOut.failure(true)).toBe('timeout');
    expect(timedOut.usage.cost).toBeNull();
    const garbled = await runCase(
      'c',
      () => price,
      () => Promise.resolve(call('invalid_response')),
    );
    expect(garbled.failure(true)).toBe('invalid_output');
    const none = await runCase(
      'd',
      () => price,
      () => Promise.resolve(0),
    );
    expect(none.asked).toBe(false);
  });
});

describe('each stage applies its threshold as the service does', () => {
  it('continuity: accepted at or above the threshold, else the router; a wrong accepted label is a misroute', () => {
    const rule = continuityThreshold(0.9);
    const detail = {
      conversation_id: 'c',
      depth: 2,
      domain: 'telecom',
      has_active_agent: true,
      accepted: true,
      fallback_reason: null,
      expected_intent: null,
      named_intent: null,
    };
    const wrong = outcome<ContinuityCase['detail']>({
      expected: 'ROUTE',
      model_label: 'CONTINUE',
      confidence: 0.9,
      detail,
    });
    expect(rule.decideAt(wrong, 0.9)).toBe('CONTINUE');
    expect(rule.isCostly(wrong, 'CONTINUE', 0.9)).toBe(true);
    expect(rule.decideAt(wrong, 0.95)).toBe('ROUTE');
    const refused = { ...wrong, detail: { ...detail, accepted: false } };
    expect(rule.decideAt(refused, 0)).toBe('ROUTE');
  });

  it('router: a model answer below the threshold leaves the keyword or fallback decision', () => {
    const rule = routerThreshold(0.65);
    const base = {
      method: 'llm',
      llm_intent: 'b',
      llm_rejection: null,
      expected_intents: ['a'],
      routed_intents: ['b'],
    };
    const byModel = outcome<RouterOutcome['detail']>({
      expected: 'a',
      decided: 'b',
      model_label: 'b',
      confidence: 0.7,
      detail: { ...base, without_model: 'fallback' },
    });
    expect(rule.decideAt(byModel, 0.65)).toBe('b');
    expect(rule.isCostly(byModel, 'b', 0.65)).toBe(true);
    expect(rule.decideAt(byModel, 0.8)).toBe('fallback');
    expect(rule.isCostly(byModel, 'fallback', 0.8)).toBe(false);
    const keyword = outcome<RouterOutcome['detail']>({
      expected: 'a',
      decided: 'c',
      model_label: null,
      asked_model: false,
      detail: { ...base, method: 'keyword', without_model: 'c' },
    });
    expect(rule.decideAt(keyword, 0.99)).toBe('c');
  });

  it('guardrails: a screen always blocks; a model block counts at or above the threshold', () => {
    const rule = guardrailThreshold(0.5);
    const detail = { technique: 't', blocked_by: null, codes: [], block_confidences: [0.6] };
    const attack = outcome<GuardrailOutcome['detail']>({ expected: 'attack', detail });
    expect(rule.decideAt(attack, 0.6)).toBe('attack');
    expect(rule.decideAt(attack, 0.7)).toBe('ordinary');
    expect(rule.isCostly(attack, 'ordinary', 0.7)).toBe(true);
    const screened = {
      ...attack,
      detail: { ...detail, blocked_by: 'screen' as const, block_confidences: [] },
    };
    expect(rule.decideAt(screened, 1)).toBe('attack');
    expect(rule.raiseToReduce).toBe(false);
  });

  it('transaction control: below the threshold a decision is OTHER; only a confirmation not given is costly', () => {
    const rule = transactionThreshold(0.7);
    const detail = {
      stage: 'confirmation' as const,
      operation: null,
      expected_operation: null,
      values: {},
      expected_values: {},
      fallback_reason: null,
    };
    const yes = outcome<TransactionOutcome['detail']>({
      expected: 'OTHER',
      model_label: 'CONFIRM',
      confidence: 0.72,
      detail,
    });
    expect(rule.decideAt(yes, 0.7)).toBe('CONFIRM');
    expect(rule.isCostly(yes, 'CONFIRM', 0.7)).toBe(true);
    expect(rule.decideAt(yes, 0.75)).toBe('OTHER');
    expect(rule.atRisk({ ...yes, expected: 'CONFIRM' })).toBe(false);
    expect(rule.decideAt({ ...yes, model_label: null }, 0)).toBe('OTHER');
  });

  it('memory: facts at or above the threshold are written; a secret written is costly', () => {
    const rule = memoryThreshold(0.7);
    const facts = matchFacts(
      [
        { category: 'profile', key: 'name', value: 'Rafa', confidence: 0.9 },
        { category: 'other', key: 'card', value: 'cartão 4111 1111', confidence: 0.6 },
      ],
      [{ category: 'profile', value: ['rafa'] }],
      ['4111'],
    );
    expect(facts.map((f) => [f.matches, f.forbidden])).toEqual([
      [0, false],
      [null, true],
    ]);
    const written = outcome<MemoryOutcome['detail']>({
      expected: 'FACTS',
      detail: { facts, expected_facts: [{ category: 'profile', value: ['rafa'] }] },
    });
    expect(rule.isCostly(written, rule.decideAt(written, 0.7), 0.7)).toBe(false);
    expect(rule.isCostly(written, rule.decideAt(written, 0.5), 0.5)).toBe(true);
    expect(rule.decideAt(written, 0.95)).toBe('NONE');
  });

  it('judges: a score at or above the threshold passes; a bad answer passing is costly', () => {
    const rule = judgeThreshold('tone', 0.6);
    const judged = outcome<JudgeOutcome['detail']>({
      expected: 'fail',
      decided: 'fail',
      detail: { judge: 'tone', case_id: 'c', score: 0.65, threshold: 0.6, answer: 'a' },
    });
    expect(rule.decideAt(judged, 0.6)).toBe('pass');
    expect(rule.isCostly(judged, 'pass', 0.6)).toBe(true);
    expect(rule.decideAt(judged, 0.7)).toBe('fail');
  });

  it('parameter extraction compares identifiers by letters and digits and free text by its terms', () => {
    expect(fieldResult('100231', '100.231')).toBe('right');
    expect(fieldResult('100231', '100213')).toBe('wrong');
    expect(fieldResult('100231', undefined)).toBe('missed');
    expect(fieldResult(null, '100231')).toBe('invented');
    expect(fieldResult(null, '  ')).toBe('right_absent');
    expect(fieldResult(['defeito', 'broken'], 'Produto com DEFEITO')).toBe('right');
    expect(fieldResult(['defeito'], 'tamanho')).toBe('wrong');
  });
});

describe('the report', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'eval-report-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function stage(name: 'router' | 'guardrails', decided: string): StageResult {
    const cases = [outcome<JsonObject>({ id: `${name}-1`, expected: 'A', decided, detail: {} })];
    return {
      name,
      title: `Stage ${name}`,
      method: 'how',
      models: [{ profile: name, tier: 'small', model: 'm', provider: 'openai_compatible' }],
      dataset: {
        path: 'set.yaml',
        sha256: 'abcdef0123456789',
        cases: 1,
        by_language: { pt: 1 },
        by_label: { A: 1 },
      },
      summary: summarizeStage(cases, { labels: ['A'], calibrated: true, threshold: null, target: 0.05 }),
      headline: [],
      extra: {},
      sections: [{ title: 'Own part', lines: ['own | line', ''] }],
      notes: ['read me'],
      cases,
      duration_ms: 5,
    };
  }

  function report(label: string, decided: string): EvalReport {
    return {
      format: REPORT_FORMAT,
      meta: {
        generated_at: '2026-01-01T00:00:00.000Z',
        label,
        git_commit: null,
        duration_ms: 1000,
        endpoint: 'http://x/v1',
        provider: 'openai_compatible',
        concurrency: 1,
        limit: null,
        targets: {},
        overrides: {},
        service: {
          stickiness_enabled: true,
          stickiness_profile: 'route_continuity',
          stickiness_threshold: 0.9,
          history_turns: 2,
          memory_enabled: false,
          memory_profile: 'memory_extraction',
          memory_min_confidence: 0.7,
          deterministic_judges: [],
        },
        prices: {
          path: 'llm_profiles.yaml',
          currency: 'USD',
          models: { small: { input: 1, cached_input: 0.5, output: 2 } },
        },
        warnings: ['a warning'],
      },
      stages: [stage('router', decided), stage('guardrails', 'A')],
    };
  }

  it('renders every stage with its own sections, and charts as SVG', () => {
    const markdown = renderMarkdown(report('a', 'A'), ['x-overview.svg']);
    for (const text of [
      '# Model evaluation: a',
      '## Stage router',
      '### Own part',
      '> read me',
      '![x-overview.svg](x-overview.svg)',
      '## Service warnings',
    ]) {
      expect(markdown).toContain(text);
    }
    const svgs = charts(report('a', 'A'));
    expect(Object.keys(svgs)).toEqual(['overview', 'calibration']);
    expect(svgs.calibration).toContain('<polyline');
  });

  it('compares two runs by case, and refuses a file that is no report', () => {
    const paths = [join(dir, 'a.json'), join(dir, 'b.json')] as const;
    writeFileSync(paths[0], JSON.stringify(report('a', 'A')));
    writeFileSync(paths[1], JSON.stringify(report('b', 'B')));
    const text = renderComparison(readReport(paths[0]), readReport(paths[1]), paths);
    expect(text).toContain('# Model evaluation: a (A) against b (B)');
    expect(text).toContain('Wrong in B, right in A (1):');
    expect(text).toContain('| router-1 | pt | A | A | B | m |');
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ format: REPORT_FORMAT, meta: {} }));
    expect(() => readReport(join(dir, 'bad.json'))).toThrow(/is not a report of npm run eval/);
  });
});
