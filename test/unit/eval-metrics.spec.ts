import { CONTINUITY_DECISIONS, ContinuityDecision, ContinuityFallbackReason } from '@agent/contracts';
import {
  accuracyBy,
  depthBucket,
  depthOrder,
  effectiveDecision,
  lowestSafeThreshold,
  rawPrediction,
  routeTargets,
  summarize,
  sweepRow,
  thresholdSweep,
  TurnOutcome,
} from '../../eval/continuity-metrics';
import { continuitySections } from '../../eval/continuity-report';
import { confusionMatrix, labelScores, macroF1, percentile, ratio } from '../../eval/metrics';

function outcome(
  label: ContinuityDecision,
  decision: ContinuityDecision,
  confidence: number,
  extra: Partial<TurnOutcome> = {},
): TurnOutcome {
  return {
    conversation_id: 'c',
    depth: 2,
    language: 'pt',
    domain: 'telecom',
    tags: [],
    label,
    has_active_agent: true,
    user: 'msg',
    decision,
    confidence,
    accepted: true,
    fallback_reason: null,
    reason: '',
    latency_ms: 10,
    prompt_tokens: 100,
    completion_tokens: 10,
    expected_intent: null,
    named_intent: null,
    ...extra,
  };
}

function failed(label: ContinuityDecision, reason: ContinuityFallbackReason): TurnOutcome {
  return outcome(label, 'ROUTE', 0, { accepted: false, fallback_reason: reason });
}

describe('continuity eval metrics', () => {
  it('builds a confusion matrix with every label row and the given columns', () => {
    const matrix = confusionMatrix(
      [
        { label: 'CONTINUE', predicted: 'CONTINUE' },
        { label: 'CONTINUE', predicted: 'ROUTE' },
        { label: 'ROUTE', predicted: 'CONTINUE' },
        { label: 'END_SESSION', predicted: 'END_SESSION' },
      ],
      CONTINUITY_DECISIONS,
      CONTINUITY_DECISIONS,
    );
    expect(matrix).toEqual({
      CONTINUE: { CONTINUE: 1, ROUTE: 1, HUMAN_HANDOFF: 0, END_SESSION: 0 },
      ROUTE: { CONTINUE: 1, ROUTE: 0, HUMAN_HANDOFF: 0, END_SESSION: 0 },
      HUMAN_HANDOFF: { CONTINUE: 0, ROUTE: 0, HUMAN_HANDOFF: 0, END_SESSION: 0 },
      END_SESSION: { CONTINUE: 0, ROUTE: 0, HUMAN_HANDOFF: 0, END_SESSION: 1 },
    });
    expect(() => confusionMatrix([{ label: 'ROUTE', predicted: 'FAILED' }], ['ROUTE'], ['ROUTE'])).toThrow(
      /column/,
    );
    expect(() => confusionMatrix([{ label: 'OTHER', predicted: 'ROUTE' }], ['ROUTE'], ['ROUTE'])).toThrow(
      /row/,
    );
  });

  it('computes precision, recall and F1, with null where a division by zero would be', () => {
    const matrix = confusionMatrix(
      [
        { label: 'CONTINUE', predicted: 'CONTINUE' },
        { label: 'CONTINUE', predicted: 'CONTINUE' },
        { label: 'CONTINUE', predicted: 'ROUTE' },
        { label: 'ROUTE', predicted: 'CONTINUE' },
        // HUMAN_HANDOFF: supported but never predicted → precision null, recall 0, F1 null.
        { label: 'HUMAN_HANDOFF', predicted: 'ROUTE' },
        // END_SESSION: predicted but not supported → precision 0, recall null.
        { label: 'ROUTE', predicted: 'END_SESSION' },
      ],
      CONTINUITY_DECISIONS,
      [...CONTINUITY_DECISIONS, 'FAILED'],
    );
    const scores = Object.fromEntries(labelScores(matrix, CONTINUITY_DECISIONS).map((s) => [s.label, s]));
    expect(scores.CONTINUE).toEqual({
      label: 'CONTINUE',
      support: 3,
      predicted: 3,
      true_positives: 2,
      precision: 2 / 3,
      recall: 2 / 3,
      f1: 2 / 3,
    });
    expect(scores.ROUTE).toMatchObject({
      support: 2,
      predicted: 2,
      true_positives: 0,
      precision: 0,
      recall: 0,
      f1: 0,
    });
    expect(scores.HUMAN_HANDOFF).toMatchObject({
      support: 1,
      predicted: 0,
      precision: null,
      recall: 0,
      f1: null,
    });
    expect(scores.END_SESSION).toMatchObject({
      support: 0,
      predicted: 1,
      precision: 0,
      recall: null,
      f1: null,
    });
    // Labels without support are left out of the macro average; undefined F1 with support counts as 0.
    expect(macroF1(labelScores(matrix, CONTINUITY_DECISIONS))).toBeCloseTo((2 / 3 + 0 + 0) / 3);
    expect(macroF1([])).toBeNull();
  });

  it('counts a FAILED prediction in the support of its label, never as a prediction', () => {
    const matrix = confusionMatrix(
      [
        { label: 'CONTINUE', predicted: 'FAILED' },
        { label: 'CONTINUE', predicted: 'CONTINUE' },
      ],
      CONTINUITY_DECISIONS,
      [...CONTINUITY_DECISIONS, 'FAILED'],
    );
    const continueScore = labelScores(matrix, CONTINUITY_DECISIONS).find((s) => s.label === 'CONTINUE');
    expect(continueScore).toMatchObject({ support: 2, predicted: 1, precision: 1, recall: 0.5 });
  });

  it('ratio is null, not zero, on an empty denominator', () => {
    expect(ratio(0, 0)).toEqual({ count: 0, total: 0, rate: null });
    expect(ratio(1, 4)).toEqual({ count: 1, total: 4, rate: 0.25 });
  });

  it('derives the decision at a threshold from the recorded label and confidence', () => {
    const confident = outcome('CONTINUE', 'CONTINUE', 0.95);
    expect(effectiveDecision(confident, 0.9)).toBe('CONTINUE');
    expect(effectiveDecision(confident, 0.96)).toBe('ROUTE');
    const noAgent = outcome('ROUTE', 'CONTINUE', 0.99, {
      accepted: false,
      fallback_reason: 'no_active_agent',
      has_active_agent: false,
    });
    expect(effectiveDecision(noAgent, 0)).toBe('ROUTE');
    expect(rawPrediction(noAgent)).toBe('CONTINUE');
    expect(rawPrediction(failed('CONTINUE', 'timeout'))).toBe('FAILED');
  });

  it('sweeps bypass against misroute and missed switches', () => {
    const outcomes = [
      outcome('CONTINUE', 'CONTINUE', 0.97), // right bypass down to 0.97
      outcome('CONTINUE', 'CONTINUE', 0.8), // right bypass only at low thresholds
      outcome('ROUTE', 'CONTINUE', 0.85), // missed switch (a misroute) below 0.85
      outcome('ROUTE', 'ROUTE', 0.99),
      outcome('ROUTE', 'CONTINUE', 0.99, {
        has_active_agent: false,
        accepted: false,
        fallback_reason: 'no_active_agent',
      }),
      outcome('HUMAN_HANDOFF', 'HUMAN_HANDOFF', 0.95),
      outcome('END_SESSION', 'HUMAN_HANDOFF', 0.92), // wrong session action: a misroute
      failed('CONTINUE', 'invalid_output'),
    ];
    const low = sweepRow(outcomes, 0.5);
    expect(low.bypass).toEqual({ count: 5, total: 8, rate: 5 / 8 });
    expect(low.continue_bypass.count).toBe(3);
    expect(low.misroute).toEqual({ count: 2, total: 8, rate: 0.25 });
    expect(low.misroute_among_bypasses).toEqual({ count: 2, total: 5, rate: 0.4 });
    // Only ROUTE turns with an active agent can be a missed switch.
    expect(low.missed_switch).toEqual({ count: 1, total: 2, rate: 0.5 });
    expect(low.missed_continue).toEqual({ count: 1, total: 3, rate: 1 / 3 });
    expect(low.missed_session_action).toEqual({ count: 1, total: 2, rate: 0.5 });
    expect(low.accuracy).toEqual({ count: 5, total: 8, rate: 5 / 8 });

    const high = sweepRow(outcomes, 0.9);
    expect(high.bypass.count).toBe(3);
    expect(high.misroute.count).toBe(1);
    expect(high.missed_switch.count).toBe(0);
    expect(high.missed_continue.count).toBe(2);

    const strict = sweepRow(outcomes, 1);
    expect(strict.bypass.count).toBe(0);
    expect(strict.misroute_among_bypasses.rate).toBeNull();

    const rows = thresholdSweep(outcomes, [0.5, 1, 0.9], 0.93);
    expect(rows.map((r) => r.threshold)).toEqual([0.5, 0.9, 0.93, 1]);
    expect(lowestSafeThreshold(rows)).toBe(0.93);
    expect(lowestSafeThreshold(thresholdSweep(outcomes, [0, 0.5]))).toBeNull();
  });

  it('groups accuracy by depth, language and tag', () => {
    const outcomes = [
      outcome('ROUTE', 'ROUTE', 0.9, { depth: 1, language: 'en', tags: ['a'] }),
      outcome('CONTINUE', 'CONTINUE', 0.95, { depth: 2, tags: ['a', 'b'] }),
      outcome('CONTINUE', 'ROUTE', 0.95, { depth: 10 }),
      outcome('CONTINUE', 'CONTINUE', 0.7, { depth: 12 }),
    ];
    expect(depthOrder(outcomes)).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', '9+']);
    expect(depthBucket(8)).toBe('8');
    expect(depthBucket(9)).toBe('9+');
    const byDepth = accuracyBy(outcomes, 0.9, (o) => depthBucket(o.depth), depthOrder(outcomes));
    expect(byDepth.map((g) => g.group)).toEqual(['1', '2', '9+']);
    expect(byDepth[2]).toMatchObject({
      turns: 2,
      raw_accuracy: { count: 1, total: 2 },
      accuracy: { count: 0, total: 2 },
    });
    const byTag = accuracyBy(outcomes, 0.9, (o) => o.tags);
    expect(byTag.map((g) => [g.group, g.turns])).toEqual([
      ['a', 2],
      ['b', 1],
    ]);
  });

  it('counts the ROUTE targets named at the threshold, and the right ones among them', () => {
    const route = (expected: string | null, named: string | null, confidence = 0.95) =>
      outcome('ROUTE', 'ROUTE', confidence, { expected_intent: expected, named_intent: named });
    const outcomes = [
      route('billing', 'billing'),
      route('billing', 'product'),
      route('billing', 'billing', 0.8),
      route('billing', null),
      route(null, 'billing'),
      outcome('CONTINUE', 'CONTINUE', 0.95, { named_intent: 'billing' }),
    ];
    expect(routeTargets(outcomes, 0.9)).toEqual({
      named: { count: 2, total: 4, rate: 0.5 },
      right: { count: 1, total: 2, rate: 0.5 },
    });
    expect(routeTargets(outcomes, 0.5).named.count).toBe(3);
    expect(routeTargets([], 0.9).right.rate).toBeNull();
  });

  it('percentile uses the nearest rank', () => {
    expect(percentile([], 50)).toBeNull();
    expect(percentile([5, 1, 3, 2, 4], 50)).toBe(3);
    expect(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95)).toBe(10);
  });

  it('summarizes and renders a report', () => {
    const outcomes = [
      outcome('CONTINUE', 'CONTINUE', 0.95, { depth: 2, tags: ['short_ack'] }),
      outcome('ROUTE', 'CONTINUE', 0.92, { depth: 3, user: 'agora | uma cobrança' }),
      outcome('ROUTE', 'ROUTE', 0.9, { depth: 1, has_active_agent: false }),
      failed('END_SESSION', 'timeout'),
    ];
    const summary = summarize(outcomes, 0.9);
    expect(summary.accuracy).toEqual({ count: 2, total: 4, rate: 0.5 });
    expect(summary.raw_accuracy).toEqual({ count: 2, total: 4, rate: 0.5 });
    expect(summary.missed_switch).toEqual({ count: 1, total: 1, rate: 1 });
    expect(summary.failures).toEqual({ timeout: 1 });
    expect(summary.raw_confusion.END_SESSION.FAILED).toBe(1);
    expect(summary.tokens).toEqual({ prompt: 400, completion: 40, per_turn: 110 });
    expect(summary.latency_ms.p50).toBe(10);

    const markdown = continuitySections(summary)
      .flatMap((section) => [`### ${section.title}`, ...section.lines])
      .join('\n');
    expect(markdown).toContain(
      '| missed-switch rate (ROUTE turns with an agent, accepted CONTINUE) | 100.0% (1/1) |',
    );
    expect(markdown).toContain('### Threshold sweep: bypass against misroute');
    expect(markdown).toContain('| **0.9** |');
    expect(markdown).toContain('| short_ack | 1 |');
  });
});
