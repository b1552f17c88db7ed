/**
 * The Enterprise Router and multi-intent splitting, from one run over the router set: each message goes through
 * the real RoutingService as the service routes a turn (router mode: state policy, keyword stage, the router's
 * model with its `more_intents`; supervisor mode: the planner).
 */
import { ConfigFilesService } from '@agent/config';
import type { RouteDecision, TurnState } from '@agent/contracts';
import { LlmService } from '@agent/llm';
import { RoutingService } from '@agent/routing';
import { FALLBACK_INTENT, LoadedSet, RouterCase, routerLabel } from '../datasets';
import { ratio } from '../metrics';
import { formatRate, table } from '../markdown';
import {
  CaseOutcome,
  caseFields,
  FailureKind,
  FAILURE_KINDS,
  pool,
  runCase,
  StageResult,
  StageThreshold,
  summarizeStage,
} from '../stage';
import { datasetInfo, limited, StageRunOptions, stageModels } from './common';
import { turnStateOf } from '../../test/support/states';

type RouterDetail = {
  /** The stage that decided: keyword, llm, fallback or supervisor. */
  method: string;
  /** What the model answered, as it answered it (an unknown name included). */
  llm_intent: string | null;
  /** Why the model's answer was not taken, when it was not. */
  llm_rejection: string | null;
  /** The intent the router gives without the model, when known: the keyword's or the fallback's. */
  without_model: string | null;
  /** Every request of the message, in order. */
  expected_intents: string[];
  /** Every request the service serves or keeps pending, in order. */
  routed_intents: string[];
};
export type RouterOutcome = CaseOutcome<RouterDetail>;

export interface RouterRun {
  mode: 'router' | 'supervisor';
  outcomes: RouterOutcome[];
  threshold: number;
  profile: string;
  duration_ms: number;
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const number = (value: unknown): number | null => (typeof value === 'number' ? value : null);

function stateOf(item: RouterCase, files: ConfigFilesService): TurnState {
  const state = turnStateOf({
    tenant_id: 'eval',
    agent_id: 'eval',
    session_id: item.id,
    turn: item.context ? 2 : 1,
    user_text: item.text,
    sanitized_input: item.text,
  });
  const previous = item.context
    ? files.routing.intents.find((intent) => intent.name === item.context?.previous_intent)
    : undefined;
  if (previous) {
    state.active_agent = previous.agent;
    state.intent = previous.name;
    state.domain = previous.domain;
    state.mcp_tools = [...previous.mcp_tools];
  }
  return state;
}

/** The router's label for an intent name: a catalogue intent, else the fallback. */
function labelOf(name: string | null, known: ReadonlySet<string>): string {
  return name !== null && known.has(name) ? name : FALLBACK_INTENT;
}

function failureKind(reason: string | null): FailureKind | null {
  return FAILURE_KINDS.find((kind) => kind === reason) ?? null;
}

/** Runs every case of the set through the router once; both stages are read from this run. */
export async function runRouterCases(
  set: LoadedSet<RouterCase>,
  options: StageRunOptions,
): Promise<RouterRun> {
  const started = performance.now();
  const { app } = options.context;
  const files = app.get(ConfigFilesService);
  const routing = app.get(RoutingService);
  const file = files.routings.for('eval');
  const known = new Set(file.intents.filter((intent) => intent.enabled).map((intent) => intent.name));
  const cases = limited(set.cases, options.limit);
  const outcomes = new Array<RouterOutcome | undefined>(cases.length);
  let done = 0;
  await pool(cases, options.concurrency, async (item, index) => {
    const state = stateOf(item, files);
    const expected = item.intents[0] ?? FALLBACK_INTENT;
    if (file.router.mode === 'supervisor') {
      const run = await runCase(item.id, options.priceOf, () =>
        routing.superviseTurn(state, () => Promise.resolve({ answer: 'ok' })),
      );
      const plan = run.value.supervisor_plan;
      const routed = (plan?.intents ?? []).map((entry) => entry.intent).filter((name) => known.has(name));
      const fromModel = plan?.source === 'llm';
      const rejection = plan?.llm_rejection?.reason ?? null;
      const failure = run.failure(failureKind(rejection) !== null);
      outcomes[index] = {
        ...caseFields(item, run),
        expected,
        decided: routed[0] ?? FALLBACK_INTENT,
        model_label: fromModel ? labelOf(routed[0] ?? null, known) : null,
        confidence: fromModel ? (plan?.intents[0]?.confidence ?? null) : null,
        failure,
        reason: '',
        detail: {
          method: `supervisor:${plan?.source ?? 'none'}`,
          llm_intent: fromModel ? (plan?.intents[0]?.intent ?? null) : null,
          llm_rejection: rejection,
          without_model: fromModel ? null : (routed[0] ?? FALLBACK_INTENT),
          expected_intents: item.intents,
          routed_intents: routed,
        },
      };
    } else {
      const run = await runCase(item.id, options.priceOf, () => routing.route(state));
      const decision: RouteDecision = run.value;
      const metadata = decision.metadata;
      const rejection = text(metadata.llm_rejection);
      const byModel = decision.method === 'llm';
      const llmIntent = byModel ? decision.intent : text(metadata.llm_intent);
      const confidence = byModel ? decision.confidence : number(metadata.llm_confidence);
      const failure = run.failure(failureKind(rejection) !== null);
      const routed = [decision.intent, ...(metadata.more_intents ?? [])].filter((name) => known.has(name));
      outcomes[index] = {
        ...caseFields(item, run),
        expected,
        decided: labelOf(decision.intent, known),
        model_label: failure === null && run.asked ? labelOf(llmIntent, known) : null,
        // "none" comes with confidence 0 by the prompt's rule: a confidence in no intent, not in the label.
        confidence: failure === null && run.asked && known.has(llmIntent ?? '') ? confidence : null,
        failure,
        reason: decision.reason,
        detail: {
          method: decision.method,
          llm_intent: llmIntent,
          llm_rejection: rejection,
          // A keyword of several agents sent the message to the model; which one would win is not recorded.
          without_model: byModel
            ? metadata.keyword_agents === undefined
              ? FALLBACK_INTENT
              : null
            : labelOf(decision.intent, known),
          expected_intents: item.intents,
          routed_intents: routed,
        },
      };
    }
    options.onProgress(++done, cases.length);
  });
  return {
    mode: file.router.mode,
    outcomes: outcomes.filter((o): o is RouterOutcome => o !== undefined),
    threshold: file.router.confidence_threshold,
    profile: file.router.llm_profile,
    duration_ms: Math.round(performance.now() - started),
  };
}

/**
 * At threshold t the model's answer is taken when it names a catalogue intent with confidence >= t; otherwise
 * the router decides without it (the keyword stage, else the fallback agent). A misroute is a turn sent to a
 * catalogue intent that is not the expected one: doubt that ends at the fallback agent is not one.
 */
export function routerThreshold(threshold: number): StageThreshold<RouterOutcome> {
  return {
    setting: 'routing.yaml router.confidence_threshold',
    configured: threshold,
    costly_error: 'misroute: a turn sent to a catalogue intent that is not the expected one',
    at_risk: 'all messages',
    decideAt: (o, t) => {
      if (!o.asked_model || o.failure !== null || o.model_label === null) return o.decided;
      if (o.model_label !== FALLBACK_INTENT && (o.confidence ?? 0) >= t) return o.model_label;
      return o.detail.without_model ?? FALLBACK_INTENT;
    },
    isCostly: (o, decided) => decided !== o.expected && decided !== FALLBACK_INTENT,
    atRisk: () => true,
    acts: (_o, decided) => decided !== FALLBACK_INTENT,
    expected: (o) => o.expected,
    raiseToReduce: true,
  };
}

export function routerStage(
  run: RouterRun,
  set: LoadedSet<RouterCase>,
  options: StageRunOptions,
): StageResult {
  const { app } = options.context;
  const labels = app
    .get(ConfigFilesService)
    .routings.for('eval')
    .intents.filter((intent) => intent.enabled)
    .map((intent) => intent.name);
  const summary = summarizeStage(run.outcomes, {
    labels: [...labels, FALLBACK_INTENT],
    calibrated: true,
    threshold: run.mode === 'router' ? routerThreshold(run.threshold) : null,
    target: options.target,
  });
  const methods: Record<string, number> = {};
  for (const outcome of run.outcomes) {
    methods[outcome.detail.method] = (methods[outcome.detail.method] ?? 0) + 1;
  }
  const byMethod = Object.entries(methods).map(([method, count]) => {
    const members = run.outcomes.filter((o) => o.detail.method === method);
    const right = members.filter((o) => o.decided === o.expected).length;
    const misroutes = members.filter((o) => o.decided !== o.expected && o.decided !== FALLBACK_INTENT).length;
    return [method, String(count), formatRate(ratio(right, count)), formatRate(ratio(misroutes, count))];
  });
  return {
    name: 'router',
    title: 'Enterprise Router',
    method:
      run.mode === 'router'
        ? 'Every message through the real `RoutingService.route` as a turn without a pending operation (router ' +
          'mode): the keyword stage first where routing.yaml says `keyword_first`, then the router model. The label ' +
          'is the first request of the message; `fallback` for a message no intent serves.'
        : 'Every message through the real supervisor planner (`ROUTING_MODE=supervisor`), agents stubbed: the label ' +
          'is the first intent of the plan.',
    models: stageModels(app.get(LlmService), [run.profile]),
    dataset: datasetInfo(set, (c) => c.language, routerLabel, options.root),
    summary,
    headline: [
      {
        measure: 'sent to the fallback agent',
        value: ratio(run.outcomes.filter((o) => o.decided === FALLBACK_INTENT).length, run.outcomes.length),
      },
    ],
    extra: { mode: run.mode, decided_by: methods },
    sections: [
      {
        title: 'Who decided',
        lines: [
          'The router model is asked only where no keyword settles the message (routing.yaml `strategy`); a ' +
            'misroute the keyword stage makes does not depend on the model or its threshold.',
          '',
          table(['method', 'messages', 'right', 'misroutes'], byMethod),
          '',
        ],
      },
    ],
    notes:
      run.mode === 'router'
        ? [
            'Above the configured threshold, a message the model decided is counted as going to the fallback agent ' +
              'unless its keywords were recorded: a keyword of several agents may still catch it in the service.',
          ]
        : [
            'Supervisor mode exposes no threshold sweep: the planner drops intents below it before reporting.',
          ],
    cases: run.outcomes,
    duration_ms: run.duration_ms,
  };
}

/** NONE: no catalogue request; SINGLE: one; MULTI: two or more. */
export const SPLIT_LABELS = ['NONE', 'SINGLE', 'MULTI'] as const;
function splitLabel(count: number): string {
  return count === 0 ? 'NONE' : count === 1 ? 'SINGLE' : 'MULTI';
}

export function multiIntentStage(
  run: RouterRun,
  set: LoadedSet<RouterCase>,
  options: StageRunOptions,
): StageResult {
  const { app } = options.context;
  const outcomes: CaseOutcome<RouterDetail>[] = run.outcomes.map((o) => {
    const decided = splitLabel(o.detail.routed_intents.length);
    const byModel = o.asked_model && o.failure === null;
    return {
      ...o,
      expected: splitLabel(o.detail.expected_intents.length),
      decided,
      model_label: byModel ? decided : null,
      confidence: null,
    };
  });
  let exact = 0;
  let sameSet = 0;
  let expectedTotal = 0;
  let routedTotal = 0;
  let found = 0;
  const multi = outcomes.filter((o) => o.detail.expected_intents.length > 1);
  for (const o of outcomes) {
    const expected = o.detail.expected_intents;
    const routed = o.detail.routed_intents;
    if (expected.length === routed.length && expected.every((name, i) => routed[i] === name)) exact++;
    if (expected.length === routed.length && expected.every((name) => routed.includes(name))) sameSet++;
    expectedTotal += expected.length;
    routedTotal += routed.length;
    found += expected.filter((name) => routed.includes(name)).length;
  }
  const multiExact = multi.filter(
    (o) =>
      o.detail.expected_intents.length === o.detail.routed_intents.length &&
      o.detail.expected_intents.every((name, i) => o.detail.routed_intents[i] === name),
  ).length;
  const measures = [
    {
      measure: 'messages with several requests split exactly, in order',
      value: ratio(multiExact, multi.length),
    },
    {
      measure: 'requests dropped: the customer is not served',
      value: ratio(expectedTotal - found, expectedTotal),
    },
    {
      measure: 'requests invented: a topic offered that nobody asked for',
      value: ratio(routedTotal - found, routedTotal),
    },
    {
      measure: 'the requests served and kept pending, in order (all messages)',
      value: ratio(exact, outcomes.length),
    },
    { measure: 'the same requests in any order (all messages)', value: ratio(sameSet, outcomes.length) },
    { measure: 'requests served or kept pending (recall)', value: ratio(found, expectedTotal) },
    {
      measure: 'served or pending requests that were asked for (precision)',
      value: ratio(found, routedTotal),
    },
  ];
  const summary = summarizeStage(outcomes, {
    labels: SPLIT_LABELS,
    calibrated: false,
    threshold: null,
    target: options.target,
  });
  return {
    name: 'multi_intent',
    title: 'Multi-intent splitting',
    method:
      run.mode === 'router'
        ? 'Read from the router run: the intents the service serves and keeps pending for one message ' +
          '(`intent`, then `more_intents` at or above the threshold), against every request of the message in order.'
        : 'Read from the planner run: the plan’s intents against every request of the message in order.',
    models: stageModels(app.get(LlmService), [run.profile]),
    dataset: datasetInfo(
      set,
      (c) => c.language,
      (c) => splitLabel(c.intents.length),
      options.root,
    ),
    summary,
    headline: measures,
    extra: { measures },
    sections: [],
    notes: [
      'The split has no confidence to sweep: further requests below the threshold are dropped before the service ' +
        'reports them. Its calls and cost are the router stage’s (one run serves both).',
    ],
    cases: outcomes,
    duration_ms: 0,
  };
}
