/**
 * What every stage of `npm run eval` records per labelled case, how a case is run (its own turn context, so the
 * model calls it made are its own under concurrency), and the generic summary every stage's report starts with.
 */
import type { StoredEvent } from '@agent/contracts';
import { type ModelPriceOf, tokenCost } from '@agent/llm';
import { TurnContext, TurnContextStore } from '@agent/observability';
import {
  calibration,
  Calibration,
  confusionMatrix,
  LabelScore,
  labelScores,
  macroF1,
  percentile,
  Ratio,
  ratio,
  recommendThreshold,
  SweepRow,
  ThresholdRule,
  thresholdSweep,
} from './metrics';

/** The stages, in the order of a turn. */
export const STAGE_NAMES = [
  'continuity',
  'router',
  'multi_intent',
  'guardrails',
  'transaction_control',
  'parameter_extraction',
  'memory_extraction',
  'judges',
] as const;
export type StageName = (typeof STAGE_NAMES)[number];

/** Why a stage got no usable answer from the model. */
export const FAILURE_KINDS = [
  'invalid_output',
  'timeout',
  'http_error',
  'error',
  'cancelled',
  'not_configured',
] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

/** The model-label column of a case whose model call gave no usable answer. */
export const FAILED = 'FAILED';

/** A JSON value, for the stage-specific details a case carries into the JSON report. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface Usage {
  calls: number;
  prompt_tokens: number;
  /** Of prompt_tokens, those the provider served from its prompt cache. */
  cached_prompt_tokens: number;
  completion_tokens: number;
  /** From llm_profiles.yaml's price table; null when a call's model has no price there. */
  cost: number | null;
  /** The price table's currency; null when no call was priced. */
  currency: string | null;
}

export interface CaseOutcome<D extends JsonObject = JsonObject> {
  id: string;
  language: string;
  tags: string[];
  /** The message (or what stands for it), for the table of wrong cases. */
  text: string;
  expected: string;
  /** What the service does with the case at its configured threshold. */
  decided: string;
  /** The stage's label from the model before any threshold; null when the model was not asked or failed. */
  model_label: string | null;
  confidence: number | null;
  /** false when the stage decided without a model call (a keyword, a deterministic screen). */
  asked_model: boolean;
  failure: FailureKind | null;
  /** Wall time of the stage for this case. */
  latency_ms: number;
  usage: Usage;
  /** The model's reason, when it gave one. */
  reason: string;
  detail: D;
}

/** The price of a call of `profile`, per million tokens; null when the table has none (`LlmService.priceOf`). */
export type PriceOf = (profile: string) => ModelPriceOf | null;

/** One call the stage made, from the `llm.call` events of its turn context. */
interface LlmCall {
  profile: string;
  outcome: string;
  prompt_tokens: number;
  cached_prompt_tokens: number;
  completion_tokens: number;
}

function callsOf(events: readonly StoredEvent[]): LlmCall[] {
  const number = (value: unknown) => (typeof value === 'number' ? value : 0);
  return events
    .filter((event) => event.name === 'llm.call')
    .map(({ payload }) => ({
      profile: typeof payload.profile === 'string' ? payload.profile : '',
      outcome: typeof payload.outcome === 'string' ? payload.outcome : 'error',
      prompt_tokens: number(payload.prompt_tokens),
      cached_prompt_tokens: number(payload.cached_prompt_tokens),
      completion_tokens: number(payload.completion_tokens),
    }));
}

export interface CaseRun<T> {
  value: T;
  events: StoredEvent[];
  latency_ms: number;
  usage: Usage;
  /** Whether any model call was made. */
  asked: boolean;
  /**
   * Why the stage got no usable answer, given whether it reported one: a call that failed says how; a call that
   * answered while the stage still failed answered something it could not use (invalid output).
   */
  failure(reported: boolean): FailureKind | null;
}

/**
 * Runs one case in a turn context of its own: the stage's model calls (`llm.call` events) and other events are
 * this case's only, whatever runs beside it.
 */
export async function runCase<T>(id: string, priceOf: PriceOf, work: () => Promise<T>): Promise<CaseRun<T>> {
  const context: TurnContext = {
    request_id: `eval-${id}`,
    tenant_id: 'eval',
    agent_id: 'eval',
    session_id: id,
    conversation_key: `eval:${id}`,
    turn: 1,
    events: [],
    nodes: [],
  };
  const started = performance.now();
  const value = await TurnContextStore.run(context, work);
  const latency = Math.round(performance.now() - started);
  const calls = callsOf(context.events);
  let cost: number | null = 0;
  let currency: string | null = null;
  for (const call of calls) {
    const price = priceOf(call.profile);
    currency = price?.currency ?? currency;
    cost =
      price === null || cost === null
        ? null
        : cost +
          tokenCost(price, {
            prompt: call.prompt_tokens,
            cached: call.cached_prompt_tokens,
            completion: call.completion_tokens,
          });
  }
  const usage: Usage = {
    calls: calls.length,
    prompt_tokens: calls.reduce((sum, c) => sum + c.prompt_tokens, 0),
    cached_prompt_tokens: calls.reduce((sum, c) => sum + c.cached_prompt_tokens, 0),
    completion_tokens: calls.reduce((sum, c) => sum + c.completion_tokens, 0),
    cost,
    currency,
  };
  return {
    value,
    events: context.events,
    latency_ms: latency,
    usage,
    asked: calls.length > 0,
    failure: (reported) => {
      if (!reported) return null;
      const failed = calls.find((call) => call.outcome !== 'ok');
      if (!failed) return 'invalid_output';
      if (failed.outcome === 'invalid_response') return 'invalid_output';
      return FAILURE_KINDS.find((kind) => kind === failed.outcome) ?? 'error';
    },
  };
}

/** What every outcome takes from its case and from its run. */
export function caseFields(
  item: { id: string; language: string; tags: string[]; text: string },
  run: CaseRun<unknown>,
): Pick<CaseOutcome, 'id' | 'language' | 'tags' | 'text' | 'asked_model' | 'latency_ms' | 'usage'> {
  return {
    id: item.id,
    language: item.language,
    tags: item.tags,
    text: item.text,
    asked_model: run.asked,
    latency_ms: run.latency_ms,
    usage: run.usage,
  };
}

/** Runs `work` over `items`, `concurrency` at a time, in order of start. */
export async function pool<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, async () => {
    while (next < items.length) {
      const index = next++;
      await work(items[index], index);
    }
  });
  await Promise.all(lanes);
}

/** A stage's threshold: where the service reads it, its value there, and the rule the sweep applies. */
export interface StageThreshold<O> extends ThresholdRule<O> {
  /** Where it is set: an env variable or a key of a config file. */
  setting: string;
  configured: number;
  /** The costly error, in words. */
  costly_error: string;
  /** The cases it is counted over, in words. */
  at_risk: string;
}

export interface ThresholdSummary {
  setting: string;
  configured: number;
  costly_error: string;
  at_risk: string;
  /** The rate the user asked the costly error to stay at or under. */
  target: number;
  at_configured: SweepRow;
  /** The swept threshold that keeps the costly error under the target with the best accuracy, or null. */
  recommended: number | null;
  sweep: SweepRow[];
}

export interface GroupAccuracy {
  group: string;
  cases: number;
  accuracy: Ratio;
}

export interface StageSummary {
  cases: number;
  labels: string[];
  /** The service's decision equals the expected label. */
  accuracy: Ratio;
  /** The model's own label (before the threshold) equals the expected label, over the cases that asked it. */
  model_accuracy: Ratio;
  macro_f1: number | null;
  per_label: LabelScore[];
  /** Rows: expected label; columns: `columns` (the labels, then any other decision seen). */
  confusion: Record<string, Record<string, number>>;
  columns: string[];
  /** Rows: expected label; columns: the model's labels, then FAILED; cases that did not ask the model are out. */
  model_confusion: Record<string, Record<string, number>>;
  model_columns: string[];
  /** Cases that called the model. */
  asked_model: Ratio;
  /** Answers the stage could not use, over the cases that asked the model. */
  invalid_output: Ratio;
  /** Every failure kind seen, with its count. */
  failures: Record<string, number>;
  /** Wall time of the cases that asked the model. */
  latency_ms: { p50: number | null; p95: number | null; max: number | null };
  usage: Usage;
  tokens_per_case: number | null;
  /** null when a call had no price. */
  cost_per_1000_cases: number | null;
  calibration: Calibration | null;
  threshold: ThresholdSummary | null;
  by_language: GroupAccuracy[];
}

export interface SummaryOptions<O> {
  labels: readonly string[];
  /** Whether the confidence is a confidence in the label (a score is not): calibration only then. */
  calibrated: boolean;
  threshold: StageThreshold<O> | null;
  /** The costly error rate to stay under. */
  target: number;
}

function columnsOf(
  labels: readonly string[],
  seen: Iterable<string>,
  last: readonly string[] = [],
): string[] {
  const extra = [...new Set(seen)].filter((value) => !labels.includes(value) && !last.includes(value)).sort();
  return [...labels, ...extra, ...last];
}

export function sumUsage(usages: readonly Usage[]): Usage {
  return usages.reduce<Usage>(
    (total, usage) => ({
      calls: total.calls + usage.calls,
      prompt_tokens: total.prompt_tokens + usage.prompt_tokens,
      cached_prompt_tokens: total.cached_prompt_tokens + usage.cached_prompt_tokens,
      completion_tokens: total.completion_tokens + usage.completion_tokens,
      cost: total.cost === null || usage.cost === null ? null : total.cost + usage.cost,
      currency: total.currency ?? usage.currency,
    }),
    { calls: 0, prompt_tokens: 0, cached_prompt_tokens: 0, completion_tokens: 0, cost: 0, currency: null },
  );
}

/** The model's label as the model-label confusion shows it. */
export function modelColumn(outcome: CaseOutcome<JsonObject>): string {
  return outcome.failure !== null ? FAILED : (outcome.model_label ?? FAILED);
}

export function summarizeStage<O extends CaseOutcome<JsonObject>>(
  outcomes: readonly O[],
  options: SummaryOptions<O>,
): StageSummary {
  const labels = [...options.labels];
  const columns = columnsOf(
    labels,
    outcomes.map((o) => o.decided),
  );
  const confusion = confusionMatrix(
    outcomes.map((o) => ({ label: o.expected, predicted: o.decided })),
    labels,
    columns,
  );
  const asked = outcomes.filter((o) => o.asked_model);
  const modelColumns = columnsOf(labels, asked.map(modelColumn), [FAILED]);
  const modelConfusion = confusionMatrix(
    asked.map((o) => ({ label: o.expected, predicted: modelColumn(o) })),
    labels,
    modelColumns,
  );
  const perLabel = labelScores(confusion, labels);
  const failures: Record<string, number> = {};
  for (const outcome of outcomes) {
    if (outcome.failure !== null) failures[outcome.failure] = (failures[outcome.failure] ?? 0) + 1;
  }
  const latencies = asked.map((o) => o.latency_ms);
  const usage = sumUsage(outcomes.map((o) => o.usage));
  const points = options.calibrated
    ? asked.flatMap((o) =>
        o.failure === null && o.model_label !== null && o.confidence !== null
          ? [{ confidence: o.confidence, correct: o.model_label === o.expected }]
          : [],
      )
    : [];
  const rule = options.threshold;
  let threshold: ThresholdSummary | null = null;
  if (rule) {
    const sweep = thresholdSweep(outcomes, rule, undefined, [rule.configured]);
    const atConfigured = sweep.find((row) => row.threshold === rule.configured) ?? sweep[0];
    threshold = {
      setting: rule.setting,
      configured: rule.configured,
      costly_error: rule.costly_error,
      at_risk: rule.at_risk,
      target: options.target,
      at_configured: atConfigured,
      recommended: recommendThreshold(sweep, options.target, rule.raiseToReduce),
      sweep,
    };
  }
  const languages = [...new Set(outcomes.map((o) => o.language))].sort();
  return {
    cases: outcomes.length,
    labels,
    accuracy: ratio(outcomes.filter((o) => o.decided === o.expected).length, outcomes.length),
    model_accuracy: ratio(
      asked.filter((o) => o.failure === null && o.model_label === o.expected).length,
      asked.length,
    ),
    macro_f1: macroF1(perLabel),
    per_label: perLabel,
    confusion,
    columns,
    model_confusion: modelConfusion,
    model_columns: modelColumns,
    asked_model: ratio(asked.length, outcomes.length),
    invalid_output: ratio(asked.filter((o) => o.failure === 'invalid_output').length, asked.length),
    failures,
    latency_ms: {
      p50: percentile(latencies, 50),
      p95: percentile(latencies, 95),
      max: latencies.length === 0 ? null : Math.max(...latencies),
    },
    usage,
    tokens_per_case:
      outcomes.length === 0 ? null : (usage.prompt_tokens + usage.completion_tokens) / outcomes.length,
    cost_per_1000_cases:
      usage.cost === null || outcomes.length === 0 ? null : (usage.cost / outcomes.length) * 1000,
    calibration: options.calibrated ? calibration(points) : null,
    threshold,
    by_language: languages.map((language) => {
      const members = outcomes.filter((o) => o.language === language);
      return {
        group: language,
        cases: members.length,
        accuracy: ratio(members.filter((o) => o.decided === o.expected).length, members.length),
      };
    }),
  };
}

/** A stage's own part of the markdown report. */
export interface ReportSection {
  title: string;
  lines: string[];
}

/** Where a stage's labelled cases come from. */
export interface DatasetInfo {
  path: string;
  sha256: string;
  cases: number;
  by_language: Record<string, number>;
  by_label: Record<string, number>;
}

/** The model a stage's profile calls, as the service resolves it. */
export interface StageModel {
  profile: string;
  tier: string;
  model: string | null;
  provider: string;
}

export interface StageResult {
  name: StageName;
  title: string;
  /** What was called and how, in one paragraph. */
  method: string;
  models: StageModel[];
  dataset: DatasetInfo;
  summary: StageSummary;
  /** The stage's own main measures (the overview shows the first), beside the generic ones. */
  headline: { measure: string; value: Ratio }[];
  /** Stage-specific figures, for the JSON report. */
  extra: object;
  /** Stage-specific parts of the markdown report. */
  sections: ReportSection[];
  /** What the reader must know to read the figures (a setting the evaluation changed, a limit of a measure). */
  notes: string[];
  cases: CaseOutcome[];
  duration_ms: number;
}
