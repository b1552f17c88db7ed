import {
  CONTINUITY_DECISIONS,
  ContinuityDecision,
  ContinuityFallbackReason,
  CONTINUITY_FALLBACK_REASONS,
} from '@agent/contracts';
import {
  ConfusionMatrix,
  confusionMatrix,
  LabelScore,
  labelScores,
  macroF1,
  percentile,
  Ratio,
  ratio,
} from './metrics';

/**
 * What one labelled turn produced, as recorded by the runner. The service is run with threshold 0, so `accepted`
 * holds only the structural checks (a usable answer, CONTINUE with an active agent); the acceptance at any
 * threshold t is then `accepted && confidence >= t`, exactly what the service computes at t.
 */
export interface TurnOutcome {
  conversation_id: string;
  /** 1-based position of the turn in its conversation. */
  depth: number;
  language: string;
  domain: string;
  tags: string[];
  label: ContinuityDecision;
  has_active_agent: boolean;
  user: string;
  /** The model's label; ROUTE with confidence 0 when the classifier failed. */
  decision: ContinuityDecision;
  confidence: number;
  accepted: boolean;
  fallback_reason: ContinuityFallbackReason | null;
  reason: string;
  latency_ms: number;
  prompt_tokens: number;
  completion_tokens: number;
  /**
   * For a ROUTE turn the conversation goes on from, the intent it went to (the next turn's previous_intent);
   * null otherwise.
   */
  expected_intent: string | null;
  /** The intent an accepted ROUTE's target named (at threshold 0), which the router takes instead of its model. */
  named_intent: string | null;
}

/** The classifier gave no usable answer: its label is not the model's. */
export const FAILURE_REASONS: readonly ContinuityFallbackReason[] = ['invalid_output', 'timeout', 'error'];

export const FAILED = 'FAILED';
export type RawPrediction = ContinuityDecision | typeof FAILED;
export const RAW_COLUMNS: readonly RawPrediction[] = [...CONTINUITY_DECISIONS, FAILED];

export const DEFAULT_SWEEP_THRESHOLDS: readonly number[] = [
  0, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.925, 0.95, 0.975, 0.99, 1,
];

export function isFailure(outcome: TurnOutcome): boolean {
  return outcome.fallback_reason !== null && FAILURE_REASONS.includes(outcome.fallback_reason);
}

/** What the model said, failures apart. */
export function rawPrediction(outcome: TurnOutcome): RawPrediction {
  return isFailure(outcome) ? FAILED : outcome.decision;
}

export function acceptedAt(outcome: TurnOutcome, threshold: number): boolean {
  return outcome.accepted && outcome.confidence >= threshold;
}

/** What the workflow does at this threshold: the accepted label, else the Enterprise Router (ROUTE). */
export function effectiveDecision(outcome: TurnOutcome, threshold: number): ContinuityDecision {
  return acceptedAt(outcome, threshold) ? outcome.decision : 'ROUTE';
}

export interface SweepRow {
  threshold: number;
  /** Turns the router did not run: an accepted CONTINUE, HUMAN_HANDOFF or END_SESSION. */
  bypass: Ratio;
  /** Accepted CONTINUE over all turns. */
  continue_bypass: Ratio;
  /** Accepted CONTINUE whose label is not CONTINUE, or accepted HANDOFF/END that is wrong, over all turns. */
  misroute: Ratio;
  /** The same misroutes over the bypassed turns: how often skipping the router was a mistake. */
  misroute_among_bypasses: Ratio;
  /** Label ROUTE with an active agent, accepted CONTINUE, over ROUTE turns with an active agent. */
  missed_switch: Ratio;
  /** Label CONTINUE turns that still went to the router (cost, not harm). */
  missed_continue: Ratio;
  /** Label HUMAN_HANDOFF / END_SESSION turns not accepted as that label. */
  missed_session_action: Ratio;
  /** Effective decision equals the label. */
  accuracy: Ratio;
}

export function isMisroute(outcome: TurnOutcome, threshold: number): boolean {
  return acceptedAt(outcome, threshold) && outcome.decision !== 'ROUTE' && outcome.decision !== outcome.label;
}

export function isMissedSwitch(outcome: TurnOutcome, threshold: number): boolean {
  return (
    outcome.label === 'ROUTE' &&
    outcome.has_active_agent &&
    acceptedAt(outcome, threshold) &&
    outcome.decision === 'CONTINUE'
  );
}

export function sweepRow(outcomes: readonly TurnOutcome[], threshold: number): SweepRow {
  const total = outcomes.length;
  let bypass = 0;
  let continueBypass = 0;
  let misroute = 0;
  let missedSwitch = 0;
  let switches = 0;
  let missedContinue = 0;
  let continues = 0;
  let missedAction = 0;
  let actions = 0;
  let correct = 0;
  for (const outcome of outcomes) {
    const accepted = acceptedAt(outcome, threshold);
    const effective = effectiveDecision(outcome, threshold);
    if (accepted && outcome.decision !== 'ROUTE') bypass++;
    if (accepted && outcome.decision === 'CONTINUE') continueBypass++;
    if (isMisroute(outcome, threshold)) misroute++;
    if (outcome.label === 'ROUTE' && outcome.has_active_agent) {
      switches++;
      if (isMissedSwitch(outcome, threshold)) missedSwitch++;
    }
    if (outcome.label === 'CONTINUE') {
      continues++;
      if (effective !== 'CONTINUE') missedContinue++;
    }
    if (outcome.label === 'HUMAN_HANDOFF' || outcome.label === 'END_SESSION') {
      actions++;
      if (effective !== outcome.label) missedAction++;
    }
    if (effective === outcome.label) correct++;
  }
  return {
    threshold,
    bypass: ratio(bypass, total),
    continue_bypass: ratio(continueBypass, total),
    misroute: ratio(misroute, total),
    misroute_among_bypasses: ratio(misroute, bypass),
    missed_switch: ratio(missedSwitch, switches),
    missed_continue: ratio(missedContinue, continues),
    missed_session_action: ratio(missedAction, actions),
    accuracy: ratio(correct, total),
  };
}

/** The sweep over the given thresholds plus the chosen one, ascending, each once. */
export function thresholdSweep(
  outcomes: readonly TurnOutcome[],
  thresholds: readonly number[] = DEFAULT_SWEEP_THRESHOLDS,
  chosen?: number,
): SweepRow[] {
  const all = [...new Set([...thresholds, ...(chosen === undefined ? [] : [chosen])])].sort((a, b) => a - b);
  return all.map((threshold) => sweepRow(outcomes, threshold));
}

/** The lowest swept threshold with no misroute at all (the most bypass without harm), or null. */
export function lowestSafeThreshold(rows: readonly SweepRow[]): number | null {
  return rows.find((row) => row.misroute.count === 0)?.threshold ?? null;
}

export interface GroupAccuracy {
  group: string;
  turns: number;
  /** The model's label equals the expected one (failures count as wrong). */
  raw_accuracy: Ratio;
  /** What the workflow does at the threshold equals the expected label. */
  accuracy: Ratio;
  misroutes: number;
  failures: number;
}

export function accuracyBy(
  outcomes: readonly TurnOutcome[],
  threshold: number,
  keyOf: (outcome: TurnOutcome) => string | string[],
  order?: readonly string[],
): GroupAccuracy[] {
  const groups = new Map<string, TurnOutcome[]>();
  for (const outcome of outcomes) {
    const keys = keyOf(outcome);
    for (const key of Array.isArray(keys) ? keys : [keys]) {
      const list = groups.get(key) ?? [];
      list.push(outcome);
      groups.set(key, list);
    }
  }
  const keys = order ? order.filter((key) => groups.has(key)) : [...groups.keys()].sort();
  return keys.map((group) => {
    const members = groups.get(group) ?? [];
    return {
      group,
      turns: members.length,
      raw_accuracy: ratio(members.filter((o) => rawPrediction(o) === o.label).length, members.length),
      accuracy: ratio(
        members.filter((o) => effectiveDecision(o, threshold) === o.label).length,
        members.length,
      ),
      misroutes: members.filter((o) => isMisroute(o, threshold)).length,
      failures: members.filter(isFailure).length,
    };
  });
}

/** Depth buckets: each depth up to `exactUpTo`, then one bucket for the deeper turns. */
export function depthBucket(depth: number, exactUpTo = 8): string {
  return depth <= exactUpTo ? String(depth) : `${exactUpTo + 1}+`;
}

export function depthOrder(outcomes: readonly TurnOutcome[], exactUpTo = 8): string[] {
  const max = outcomes.reduce((m, o) => Math.max(m, o.depth), 0);
  const order = Array.from({ length: Math.min(max, exactUpTo) }, (_, i) => String(i + 1));
  if (max > exactUpTo) order.push(`${exactUpTo + 1}+`);
  return order;
}

/**
 * The targets of ROUTE turns whose next intent is known: how many named one at `threshold` (the router's model
 * skipped) and how many of those named the intent the conversation went to.
 */
export function routeTargets(
  outcomes: readonly TurnOutcome[],
  threshold: number,
): { named: Ratio; right: Ratio } {
  const known = outcomes.filter((o) => o.label === 'ROUTE' && o.expected_intent !== null);
  const named = known.filter((o) => o.named_intent !== null && o.confidence >= threshold);
  const right = named.filter((o) => o.named_intent === o.expected_intent);
  return { named: ratio(named.length, known.length), right: ratio(right.length, named.length) };
}

export interface EvalSummary {
  threshold: number;
  turns: number;
  /** At the threshold: the decision the workflow acts on. */
  accuracy: Ratio;
  /** The model's label, before the threshold. */
  raw_accuracy: Ratio;
  macro_f1: number | null;
  raw_macro_f1: number | null;
  per_label: LabelScore[];
  raw_per_label: LabelScore[];
  confusion: ConfusionMatrix<ContinuityDecision, ContinuityDecision>;
  raw_confusion: ConfusionMatrix<ContinuityDecision, RawPrediction>;
  missed_switch: Ratio;
  misroute: Ratio;
  bypass: Ratio;
  route_targets: { named: Ratio; right: Ratio };
  failures: Record<string, number>;
  lowest_safe_threshold: number | null;
  sweep: SweepRow[];
  by_depth: GroupAccuracy[];
  by_language: GroupAccuracy[];
  by_domain: GroupAccuracy[];
  by_tag: GroupAccuracy[];
  latency_ms: { p50: number | null; p95: number | null; max: number | null };
  tokens: { prompt: number; completion: number; per_turn: number | null };
}

export function summarize(
  outcomes: readonly TurnOutcome[],
  threshold: number,
  sweepThresholds: readonly number[] = DEFAULT_SWEEP_THRESHOLDS,
): EvalSummary {
  const confusion = confusionMatrix(
    outcomes.map((o) => ({ label: o.label, predicted: effectiveDecision(o, threshold) })),
    CONTINUITY_DECISIONS,
    CONTINUITY_DECISIONS,
  );
  const rawConfusion = confusionMatrix(
    outcomes.map((o) => ({ label: o.label, predicted: rawPrediction(o) })),
    CONTINUITY_DECISIONS,
    RAW_COLUMNS,
  );
  const perLabel = labelScores(confusion, CONTINUITY_DECISIONS);
  const rawPerLabel = labelScores(rawConfusion, CONTINUITY_DECISIONS);
  const sweep = thresholdSweep(outcomes, sweepThresholds, threshold);
  const chosen = sweepRow(outcomes, threshold);
  const failures: Record<string, number> = {};
  for (const reason of CONTINUITY_FALLBACK_REASONS) {
    const count = outcomes.filter((o) => o.fallback_reason === reason).length;
    if (count > 0) failures[reason] = count;
  }
  const answered = outcomes.filter((o) => !isFailure(o)).map((o) => o.latency_ms);
  const prompt = outcomes.reduce((sum, o) => sum + o.prompt_tokens, 0);
  const completion = outcomes.reduce((sum, o) => sum + o.completion_tokens, 0);
  return {
    threshold,
    turns: outcomes.length,
    accuracy: chosen.accuracy,
    raw_accuracy: ratio(outcomes.filter((o) => rawPrediction(o) === o.label).length, outcomes.length),
    macro_f1: macroF1(perLabel),
    raw_macro_f1: macroF1(rawPerLabel),
    per_label: perLabel,
    raw_per_label: rawPerLabel,
    confusion,
    raw_confusion: rawConfusion,
    missed_switch: chosen.missed_switch,
    misroute: chosen.misroute,
    bypass: chosen.bypass,
    route_targets: routeTargets(outcomes, threshold),
    failures,
    lowest_safe_threshold: lowestSafeThreshold(sweep),
    sweep,
    by_depth: accuracyBy(outcomes, threshold, (o) => depthBucket(o.depth), depthOrder(outcomes)),
    by_language: accuracyBy(outcomes, threshold, (o) => o.language),
    by_domain: accuracyBy(outcomes, threshold, (o) => o.domain),
    by_tag: accuracyBy(outcomes, threshold, (o) => o.tags),
    latency_ms: {
      p50: percentile(answered, 50),
      p95: percentile(answered, 95),
      max: answered.length === 0 ? null : Math.max(...answered),
    },
    tokens: {
      prompt,
      completion,
      per_turn: outcomes.length === 0 ? null : (prompt + completion) / outcomes.length,
    },
  };
}
