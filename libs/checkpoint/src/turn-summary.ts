import { type AgentState, routingFactsOf } from '@agent/contracts';
import type { TurnSummary } from './checkpoint.types';

/** The turn log's summary of a state a commit writes. */
export function turnSummary(
  state: AgentState,
  kind: TurnSummary['kind'],
  latencyMs: number | null,
  action?: string,
): TurnSummary {
  const method = state.route_decision?.method;
  const continuity = state.continuity_signal?.decision;
  const facts = routingFactsOf(state);
  return {
    kind,
    ...(action === undefined ? {} : { action }),
    route: facts.route,
    intent: facts.intent,
    method: typeof method === 'string' ? method : null,
    active_agent: facts.active_agent,
    route_bypassed: state.route_bypassed === true,
    continuity: typeof continuity === 'string' ? continuity : null,
    blocked: state.blocked === true,
    session_control: state.session_control ? state.session_control : null,
    next_state: facts.next_state,
    latency_ms: latencyMs === null ? null : Math.round(latencyMs),
  };
}
