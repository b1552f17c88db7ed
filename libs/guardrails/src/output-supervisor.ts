import type { RailDecision } from '@agent/contracts';
import type { StageOutcome } from './executor';
import { ACTION_SEVERITY, isApproving, RailAction, RailResult } from './rail.types';

/** The most severe action of a stage (handover > block > retry > sanitize > allow/observe). */
export function aggregateAction(results: readonly RailResult[]): RailAction {
  return results.reduce<RailAction>(
    (worst, r) => (ACTION_SEVERITY[r.action] > ACTION_SEVERITY[worst] ? r.action : worst),
    RailAction.ALLOW,
  );
}

/** The first result (configured order) carrying the given action. */
export function firstWith(results: readonly RailResult[], action: RailAction): RailResult | undefined {
  return results.find((r) => r.action === action);
}

/** What the agent is told when it must rewrite: each rail's guidance once, else the reasons. */
export function guidanceOf(results: readonly RailResult[]): string {
  const failing = results.filter((r) => !isApproving(r.action));
  const parts = failing.map((r) => r.guidance ?? `${r.code}: ${r.reason}`);
  return [...new Set(parts)].join(' ');
}

/** Fields a stage adds to each of its decisions (the output supervisor's attempt). */
type DecisionExtra = Pick<RailDecision, 'attempt'>;

/** A rail result as stored in `guardrail_decisions` / `output_supervisor_results` (JSON, no functions). */
export function toDecision(result: RailResult, extra: DecisionExtra = {}): RailDecision {
  return {
    code: result.code,
    stage: result.stage,
    allowed: isApproving(result.action),
    action: result.action,
    reason: result.reason,
    ...(result.guidance ? { guidance: result.guidance } : {}),
    ...(result.error ? { error: result.error } : {}),
    latency_ms: result.latency_ms,
    metadata: result.metadata,
    ...extra,
  };
}

/** Decisions of a stage, plus the reference's PARALLEL_CANCELLED pseudo-decision when fail_fast cut rails. */
export function decisionsOf(outcome: StageOutcome, extra: DecisionExtra = {}): RailDecision[] {
  const decisions = outcome.results.map((r) => toDecision(r, extra));
  if (outcome.cancelledCodes.length > 0) {
    decisions.push({
      code: 'PARALLEL_CANCELLED',
      stage: outcome.stage,
      allowed: true,
      action: RailAction.OBSERVE,
      reason: `cancelled after the terminal result of ${outcome.terminal?.code ?? 'another rail'}`,
      latency_ms: 0,
      metadata: { cancelled_codes: outcome.cancelledCodes },
      ...extra,
    });
  }
  return decisions;
}
