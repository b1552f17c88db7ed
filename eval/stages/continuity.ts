import { relative } from 'node:path';
import { CONTINUITY_DECISIONS } from '@agent/contracts';
import { ContinuityService } from '@agent/continuity';
import { LlmService } from '@agent/llm';
import { ContinuityDataset, datasetStats, DatasetCatalogue } from '../continuity-dataset';
import { effectiveDecision, isFailure, summarize, TurnOutcome } from '../continuity-metrics';
import { continuitySections } from '../continuity-report';
import { runContinuityTurns } from '../continuity-runner';
import { CaseOutcome, FAILURE_KINDS, StageResult, StageThreshold, summarizeStage } from '../stage';
import { StageRunOptions, stageModels } from './common';

export interface ContinuitySet {
  path: string;
  sha256: string;
  dataset: ContinuityDataset;
  catalogue: DatasetCatalogue;
}

export type ContinuityCase = CaseOutcome<{
  conversation_id: string;
  depth: number;
  domain: string;
  has_active_agent: boolean;
  accepted: boolean;
  fallback_reason: string | null;
  expected_intent: string | null;
  named_intent: string | null;
}>;

/** The classifier's threshold rule: `accepted && confidence >= t`, else the Enterprise Router (ROUTE). */
export function continuityThreshold(configured: number): StageThreshold<ContinuityCase> {
  const turn = (o: ContinuityCase) => ({ accepted: o.detail.accepted, confidence: o.confidence ?? 0 });
  return {
    setting: 'ROUTE_STICKINESS_CONFIDENCE_THRESHOLD',
    configured,
    costly_error:
      'misroute: an accepted CONTINUE whose label is not CONTINUE, or an accepted HUMAN_HANDOFF / END_SESSION that is wrong',
    at_risk: 'all turns',
    decideAt: (o, t) => (turn(o).accepted && turn(o).confidence >= t ? (o.model_label ?? 'ROUTE') : 'ROUTE'),
    isCostly: (o, decided) => decided !== 'ROUTE' && decided !== o.expected,
    atRisk: () => true,
    acts: (_o, decided) => decided !== 'ROUTE',
    expected: (o) => o.expected,
    raiseToReduce: true,
  };
}

export function continuityCase(
  turn: TurnOutcome,
  run: { latency_ms: number; usage: ContinuityCase['usage']; asked: boolean },
  threshold: number,
): ContinuityCase {
  const failed = isFailure(turn);
  return {
    id: `${turn.conversation_id}#${turn.depth}`,
    language: turn.language,
    tags: turn.tags,
    text: turn.user,
    expected: turn.label,
    decided: effectiveDecision(turn, threshold),
    model_label: failed ? null : turn.decision,
    confidence: failed ? null : turn.confidence,
    asked_model: run.asked,
    failure: failed ? (FAILURE_KINDS.find((kind) => kind === turn.fallback_reason) ?? 'error') : null,
    latency_ms: run.latency_ms,
    usage: run.usage,
    reason: turn.reason,
    detail: {
      conversation_id: turn.conversation_id,
      depth: turn.depth,
      domain: turn.domain,
      has_active_agent: turn.has_active_agent,
      accepted: turn.accepted,
      fallback_reason: turn.fallback_reason,
      expected_intent: turn.expected_intent,
      named_intent: turn.named_intent,
    },
  };
}

export async function runContinuityStage(set: ContinuitySet, options: StageRunOptions): Promise<StageResult> {
  const started = performance.now();
  const { app, settings } = options.context;
  const threshold = settings.stickiness_threshold;
  const evaluated = await runContinuityTurns(app.get(ContinuityService), set.dataset, set.catalogue, {
    concurrency: options.concurrency,
    priceOf: options.priceOf,
    limit: options.limit,
    onProgress: options.onProgress,
  });
  const turns = evaluated.map((e) => e.turn);
  const cases = evaluated.map((e) => continuityCase(e.turn, e.run, threshold));
  const rule = continuityThreshold(threshold);
  const stats = datasetStats(set.dataset);
  const summary = summarizeStage(cases, {
    labels: CONTINUITY_DECISIONS,
    calibrated: true,
    threshold: rule,
    target: options.target,
  });
  const continuity = summarize(turns, threshold);
  return {
    name: 'continuity',
    title: 'Continuity classifier',
    method:
      'Every labelled turn through the real `ContinuityService` (semantic route stickiness), teacher-forced: the ' +
      'history is the labelled conversation. A turn below the threshold, or with an unusable answer, goes to the ' +
      'Enterprise Router (ROUTE).',
    models: stageModels(app.get(LlmService), [settings.stickiness_profile]),
    dataset: {
      path: relative(options.root, set.path) || set.path,
      sha256: set.sha256,
      cases: stats.turns,
      by_language: Object.fromEntries(
        Object.entries(stats.by_language)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([l, n]) => [l, n.turns]),
      ),
      by_label: stats.by_label,
    },
    summary,
    headline: [
      { measure: 'bypass (router skipped)', value: continuity.bypass },
      { measure: 'missed switch', value: continuity.missed_switch },
    ],
    // The classifier's own summary: the sweep of bypass against misroute, by depth, domain and situation.
    extra: { history_turns: settings.history_turns, continuity },
    sections: continuitySections(continuity),
    notes: settings.stickiness_enabled
      ? []
      : ['ENABLE_ROUTE_STICKINESS is false in this environment: the service does not run this stage today.'],
    cases,
    duration_ms: Math.round(performance.now() - started),
  };
}
