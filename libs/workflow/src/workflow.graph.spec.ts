import { AgentState, FIXED_ROUTES } from '@agent/contracts';
import { END, FIXED_NODES, nextNode, TurnAgents, WorkflowNode } from './workflow.graph';

/** The shipped agents and a configured fifth one: the graph knows agents only from configuration. */
const AGENTS = ['billing_agent', 'product_agent', 'orders_agent', 'support_agent', 'loyalty_agent'];
const FALLBACK = 'billing_agent';
const turnAgents = (fallback: string): TurnAgents => ({
  fallback,
  isAgent: (name): name is string => typeof name === 'string' && AGENTS.includes(name),
});
const next = (node: WorkflowNode, state: AgentState = {}) => nextNode(node, state, turnAgents(FALLBACK));
const ROUTES = [...AGENTS, ...FIXED_ROUTES];

/** The nodes a turn passes through from START, following the edges until END. */
function walk(state: AgentState, stateAfter: Partial<Record<WorkflowNode, AgentState>> = {}): WorkflowNode[] {
  const path: WorkflowNode[] = [];
  let node: WorkflowNode = 'input_guardrails';
  let current = state;
  while (node !== END) {
    path.push(node);
    current = { ...current, ...stateAfter[node] };
    node = nextNode(node, current, turnAgents(FALLBACK));
  }
  return [...path, END];
}

describe('nextNode', () => {
  describe('input_guardrails', () => {
    it('goes on to long-term memory when the input passed', () => {
      expect(next('input_guardrails')).toBe('load_long_term_memory');
      expect(next('input_guardrails', { blocked: false })).toBe('load_long_term_memory');
    });

    it('skips to the output guardrails when the input was blocked', () => {
      expect(next('input_guardrails', { blocked: true })).toBe('output_guardrails');
    });
  });

  it('load_long_term_memory always goes to routing_decision', () => {
    expect(next('load_long_term_memory')).toBe('routing_decision');
    expect(next('load_long_term_memory', { blocked: true })).toBe('routing_decision');
  });

  describe('routing_decision', () => {
    it.each(ROUTES)('follows a route to %s', (route) => {
      expect(next('routing_decision', { route })).toBe(route);
    });

    it('sends a route that names no node, or no route at all, to the fallback agent', () => {
      expect(next('routing_decision', { route: 'no_such_node' })).toBe(FALLBACK);
      expect(next('routing_decision', { route: 'blocked' })).toBe(FALLBACK);
      expect(next('routing_decision', {})).toBe(FALLBACK);
      expect(nextNode('routing_decision', { route: 'nowhere' }, turnAgents('support_agent'))).toBe(
        'support_agent',
      );
    });

    it('skips to the output guardrails when the guardrail model blocked the input beside routing', () => {
      expect(next('routing_decision', { blocked: true, route: 'orders_agent' })).toBe('output_guardrails');
    });
  });

  it.each(ROUTES)('%s hands its answer to the output supervisor', (node) => {
    expect(next(node)).toBe('output_supervisor');
    expect(next(node, { blocked: true })).toBe('output_supervisor');
  });

  it('output_supervisor always goes to output_guardrails', () => {
    expect(next('output_supervisor')).toBe('output_guardrails');
  });

  describe('output_guardrails', () => {
    it('goes on to the judges when the answer passed', () => {
      expect(next('output_guardrails')).toBe('judge');
    });

    it('skips judges and memory when the turn is blocked', () => {
      expect(next('output_guardrails', { blocked: true })).toBe('persist');
    });
  });

  it('judge, supervisor_review, persist_long_term_memory and persist end the turn in order', () => {
    expect(next('judge')).toBe('supervisor_review');
    expect(next('supervisor_review')).toBe('persist_long_term_memory');
    expect(next('persist_long_term_memory')).toBe('persist');
    expect(next('persist')).toBe(END);
  });

  it('gives every node an edge: no node of the graph is a dead end', () => {
    for (const node of [...FIXED_NODES, ...AGENTS]) {
      const target = next(node);
      expect(target === END || [...FIXED_NODES, ...AGENTS].includes(target)).toBe(true);
    }
  });
});

describe('a turn through the graph', () => {
  it.each(['orders_agent', 'loyalty_agent'])('runs every stage for a turn %s answers', (agent) => {
    expect(walk({ route: agent })).toEqual([
      'input_guardrails',
      'load_long_term_memory',
      'routing_decision',
      agent,
      'output_supervisor',
      'output_guardrails',
      'judge',
      'supervisor_review',
      'persist_long_term_memory',
      'persist',
      END,
    ]);
  });

  it('runs no memory, routing, agent or judge for an input the guardrails blocked', () => {
    expect(walk({ blocked: true })).toEqual(['input_guardrails', 'output_guardrails', 'persist', END]);
  });

  it('runs no agent when the guardrail model blocks the input during routing', () => {
    expect(walk({}, { routing_decision: { blocked: true, route: 'blocked' } })).toEqual([
      'input_guardrails',
      'load_long_term_memory',
      'routing_decision',
      'output_guardrails',
      'persist',
      END,
    ]);
  });

  it('skips the judges and memory when the output guardrails block the answer', () => {
    expect(walk({ route: 'human_handoff' }, { output_guardrails: { blocked: true } })).toEqual([
      'input_guardrails',
      'load_long_term_memory',
      'routing_decision',
      'human_handoff',
      'output_supervisor',
      'output_guardrails',
      'persist',
      END,
    ]);
  });
});
