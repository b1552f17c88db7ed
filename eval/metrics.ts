/**
 * The measures every stage of `npm run eval` shares: ratios, confusion matrices, per-label precision and recall,
 * calibration, the threshold sweep and the threshold that keeps a stage's costly error under a target. Pure
 * functions over recorded outcomes: nothing here calls a model.
 */

export interface Ratio {
  count: number;
  total: number;
  /** count / total; null when total is 0 (nothing to measure, not 0%). */
  rate: number | null;
}

export function ratio(count: number, total: number): Ratio {
  return { count, total, rate: total === 0 ? null : count / total };
}

/** Nearest-rank percentile; null for no values. */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** Rows: expected label; columns: prediction. */
export type ConfusionMatrix<R extends string, C extends string> = Record<R, Record<C, number>>;

export function confusionMatrix<R extends string, C extends string>(
  pairs: readonly { label: R; predicted: C }[],
  rows: readonly R[],
  columns: readonly C[],
): ConfusionMatrix<R, C> {
  const matrix = {} as ConfusionMatrix<R, C>;
  for (const row of rows) {
    matrix[row] = Object.fromEntries(columns.map((column) => [column, 0])) as Record<C, number>;
  }
  for (const { label, predicted } of pairs) {
    if (!(label in matrix)) throw new Error(`label "${label}" is not a matrix row`);
    if (!(predicted in matrix[label])) throw new Error(`prediction "${predicted}" is not a matrix column`);
    matrix[label][predicted]++;
  }
  return matrix;
}

export interface LabelScore {
  label: string;
  /** Cases with this expected label. */
  support: number;
  /** Cases predicted with this label. */
  predicted: number;
  true_positives: number;
  /** null when nothing was predicted with this label. */
  precision: number | null;
  /** null when no case carries this label. */
  recall: number | null;
  /** null when precision or recall is undefined; 0 when both are 0. */
  f1: number | null;
}

/** Precision, recall and F1 of every row label; a column that is no row (FAILED, ...) counts only as a miss. */
export function labelScores<R extends string, C extends string>(
  matrix: ConfusionMatrix<R, C>,
  rows: readonly R[],
): LabelScore[] {
  const cell = (row: R, column: string): number => (matrix[row] as Record<string, number>)[column] ?? 0;
  return rows.map((label) => {
    const support = Object.values<number>(matrix[label]).reduce((sum, n) => sum + n, 0);
    const predicted = rows.reduce((sum, expected) => sum + cell(expected, label), 0);
    const truePositives = cell(label, label);
    const precision = predicted === 0 ? null : truePositives / predicted;
    const recall = support === 0 ? null : truePositives / support;
    const f1 =
      precision === null || recall === null
        ? null
        : precision + recall === 0
          ? 0
          : (2 * precision * recall) / (precision + recall);
    return { label, support, predicted, true_positives: truePositives, precision, recall, f1 };
  });
}

/** Unweighted mean of the per-label F1 scores of the labels the set holds (an undefined F1 counts as 0). */
export function macroF1(scores: readonly LabelScore[]): number | null {
  const defined = scores.filter((s) => s.support > 0).map((s) => s.f1 ?? 0);
  return defined.length === 0 ? null : defined.reduce((sum, f) => sum + f, 0) / defined.length;
}

export interface CalibrationBin {
  /** Inclusive lower bound of the confidence. */
  from: number;
  /** Exclusive upper bound (the last bin includes 1). */
  to: number;
  cases: number;
  mean_confidence: number | null;
  /** Share of the bin's cases whose model label was right. */
  accuracy: number | null;
}

export interface Calibration {
  cases: number;
  bins: CalibrationBin[];
  /** Expected calibration error: the case-weighted mean gap between confidence and accuracy; null without cases. */
  ece: number | null;
}

export const CALIBRATION_EDGES: readonly number[] = [0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1];

/** How well the stated confidence predicts a right label: one bin per confidence band. */
export function calibration(
  points: readonly { confidence: number; correct: boolean }[],
  edges: readonly number[] = CALIBRATION_EDGES,
): Calibration {
  const bins: CalibrationBin[] = [];
  let gap = 0;
  for (let i = 0; i < edges.length - 1; i++) {
    const from = edges[i];
    const to = edges[i + 1];
    const last = i === edges.length - 2;
    const members = points.filter(
      (p) => p.confidence >= from && (p.confidence < to || (last && p.confidence <= to)),
    );
    const mean =
      members.length === 0 ? null : members.reduce((sum, p) => sum + p.confidence, 0) / members.length;
    const accuracy = members.length === 0 ? null : members.filter((p) => p.correct).length / members.length;
    if (mean !== null && accuracy !== null) gap += members.length * Math.abs(accuracy - mean);
    bins.push({ from, to, cases: members.length, mean_confidence: mean, accuracy });
  }
  return { cases: points.length, bins, ece: points.length === 0 ? null : gap / points.length };
}

export interface SweepRow {
  threshold: number;
  /** The stage's costly error over the cases at risk of it. */
  costly: Ratio;
  /** The decision at this threshold equals the expected label, over every case. */
  accuracy: Ratio;
  /** Cases whose model label the service acts on at this threshold (a bypass, a block, an operation), over all. */
  acted: Ratio;
}

/**
 * How a stage decides at a threshold and which of its errors is the costly one. The service's own threshold
 * rule, applied to what was recorded once at threshold 0, so the sweep needs no second run.
 */
export interface ThresholdRule<O> {
  /** What the service does with this case at `threshold`. */
  decideAt(outcome: O, threshold: number): string;
  /** The decision at `threshold` is the stage's costly error for this case. */
  isCostly(outcome: O, decided: string, threshold: number): boolean;
  /** The case can suffer the costly error at all (the denominator of its rate). */
  atRisk(outcome: O): boolean;
  /** The decision acts on the model's label rather than on the stage's safe fallback. */
  acts(outcome: O, decided: string): boolean;
  expected(outcome: O): string;
  /**
   * true when a higher threshold lowers the costly error (an acceptance threshold: continuity, confirmation);
   * false when a lower one does (a block threshold: a guardrail verdict blocks at or above it).
   */
  raiseToReduce: boolean;
}

export const SWEEP_THRESHOLDS: readonly number[] = [
  0, 0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.925, 0.95, 0.975, 0.99, 1,
];

export function sweepRow<O>(outcomes: readonly O[], rule: ThresholdRule<O>, threshold: number): SweepRow {
  let costly = 0;
  let atRisk = 0;
  let correct = 0;
  let acted = 0;
  for (const outcome of outcomes) {
    const decided = rule.decideAt(outcome, threshold);
    if (rule.atRisk(outcome)) {
      atRisk++;
      if (rule.isCostly(outcome, decided, threshold)) costly++;
    }
    if (decided === rule.expected(outcome)) correct++;
    if (rule.acts(outcome, decided)) acted++;
  }
  return {
    threshold,
    costly: ratio(costly, atRisk),
    accuracy: ratio(correct, outcomes.length),
    acted: ratio(acted, outcomes.length),
  };
}

/** The sweep over `thresholds` plus the extra ones, ascending, each once. */
export function thresholdSweep<O>(
  outcomes: readonly O[],
  rule: ThresholdRule<O>,
  thresholds: readonly number[] = SWEEP_THRESHOLDS,
  extra: readonly number[] = [],
): SweepRow[] {
  const all = [...new Set([...thresholds, ...extra])].sort((a, b) => a - b);
  return all.map((threshold) => sweepRow(outcomes, rule, threshold));
}

/**
 * The swept threshold that keeps the costly error at or under `target` with the best accuracy; among equals,
 * the one that acts most (the lowest for an acceptance threshold, the highest for a block threshold). Null when
 * no swept threshold keeps the error under the target.
 */
export function recommendThreshold(
  rows: readonly SweepRow[],
  target: number,
  raiseToReduce: boolean,
): number | null {
  const safe = rows.filter((row) => (row.costly.rate ?? 0) <= target);
  if (safe.length === 0) return null;
  const ordered = raiseToReduce ? safe : [...safe].reverse();
  let best = ordered[0];
  for (const row of ordered) {
    if ((row.accuracy.rate ?? 0) > (best.accuracy.rate ?? 0)) best = row;
  }
  return best.threshold;
}
