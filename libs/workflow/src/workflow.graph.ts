import { DomainAgentNode, isFixedRoute, TurnState } from '@agent/contracts';

/** The nodes of the turn graph besides the domain agents, which the configuration declares (docs/architecture.md#the-turn). */
export const FIXED_NODES = [
  'input_guardrails',
  'load_long_term_memory',
  'routing_decision',
  'handoff',
  'human_handoff',
  'end_session',
  'supervisor_agent',
  'output_supervisor',
  'output_guardrails',
  'judge',
  'supervisor_review',
  'persist_long_term_memory',
  'persist',
] as const;
export type FixedNode = (typeof FIXED_NODES)[number];
/** A fixed node or a configured domain agent (a `DomainAgentNode`): a string, the agents being configuration. */
export type WorkflowNode = string;
/** Where the turn leaves the graph: no node's name. */
export const END = '__end__';

/** The domain agents of a turn: which names are agents, and where a route that names no node goes. */
export interface TurnAgents {
  fallback: DomainAgentNode;
  isAgent(name: unknown): name is DomainAgentNode;
}

export function isFixedNode(node: WorkflowNode): node is FixedNode {
  return (FIXED_NODES as readonly string[]).includes(node);
}

/**
 * The edges of the turn graph with their real conditions. A route that names neither a fixed route nor a
 * domain agent goes to the fallback agent, so no decision can put an unknown node name on the edge.
 */
export function nextNode(
  current: WorkflowNode,
  state: Pick<TurnState, 'blocked' | 'route'>,
  agents: TurnAgents,
): WorkflowNode {
  // Every domain agent hands its answer to the output supervisor.
  if (!isFixedNode(current)) return 'output_supervisor';
  switch (current) {
    case 'input_guardrails':
      return state.blocked ? 'output_guardrails' : 'load_long_term_memory';
    case 'load_long_term_memory':
      return 'routing_decision';
    case 'routing_decision':
      // The guardrail model's input verdict, taken beside routing, may still block the turn.
      if (state.blocked) return 'output_guardrails';
      return isFixedRoute(state.route) || agents.isAgent(state.route) ? state.route : agents.fallback;
    case 'handoff':
    case 'human_handoff':
    case 'end_session':
    case 'supervisor_agent':
      return 'output_supervisor';
    case 'output_supervisor':
      return 'output_guardrails';
    case 'output_guardrails':
      return state.blocked ? 'persist' : 'judge';
    case 'judge':
      return 'supervisor_review';
    case 'supervisor_review':
      return 'persist_long_term_memory';
    case 'persist_long_term_memory':
      return 'persist';
    case 'persist':
      return END;
  }
}
