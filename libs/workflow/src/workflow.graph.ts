import { AgentState, DOMAIN_AGENT_NODES, isRoutableNode } from '@agent/contracts';

/** Every node of the turn graph (docs/architecture.md#the-turn). */
export const WORKFLOW_NODES = [
  'input_guardrails',
  'load_long_term_memory',
  'routing_decision',
  ...DOMAIN_AGENT_NODES,
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
export type WorkflowNode = (typeof WORKFLOW_NODES)[number];
export const END = '__end__';
export type NextNode = WorkflowNode | typeof END;

/**
 * The edges of the turn graph with their real conditions. `fallbackAgent` is where an unknown route goes,
 * so no decision can put an unknown node name on the edge.
 */
export function nextNode(current: WorkflowNode, state: AgentState, fallbackAgent: WorkflowNode): NextNode {
  switch (current) {
    case 'input_guardrails':
      return state.blocked ? 'output_guardrails' : 'load_long_term_memory';
    case 'load_long_term_memory':
      return 'routing_decision';
    case 'routing_decision':
      // The guardrail model's input verdict, taken beside routing, may still block the turn.
      if (state.blocked) return 'output_guardrails';
      return isRoutableNode(state.route) ? state.route : fallbackAgent;
    case 'billing_agent':
    case 'product_agent':
    case 'orders_agent':
    case 'support_agent':
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
