import type { AgentState, McpResult, RailDecision } from './agent-state';
import type { ConversationKey } from './conversation-key';

/**
 * The facts every turn has, set once by the turn service before the graph runs and never changed by a node (but
 * for the text of an oversized message, which the input rails withhold). The
 * persisted state keeps them under the same keys (optional in `AgentState`, which also reads checkpoints of any
 * age); a turn's state has them all.
 */
export interface TurnFrame {
  tenant_id: string;
  agent_id: string;
  session_id: string;
  conversation_key: ConversationKey;
  channel: string;
  turn: number;
  message_id: string;
  /** The message as received (after personal-data masking). */
  user_text: string;
}

/**
 * Keys the turn service sets on every turn's state before the graph runs (carried over or re-derived each turn):
 * unlike the frame's, nodes may change them.
 */
export type TurnBasis = Required<
  Pick<AgentState, 'history' | 'metadata' | 'session_control' | 'human_handoff_requested'>
>;

/** The state a turn runs on: the conversation's state with the turn's frame and basis required. */
export type TurnState = AgentState & TurnFrame & TurnBasis;

/**
 * A turn's state once routing decided: `routing_decision` always sets the route and the intent, and so do the
 * session gate and the input rails when they stop a turn; the stages after routing read them as facts.
 */
export type RoutedTurnState = TurnState & Required<Pick<AgentState, 'route' | 'intent'>>;

/** The turn's state as routing left it; a stage after routing that finds no route is a broken graph. */
export function routedTurn(state: TurnState): RoutedTurnState {
  const { route, intent } = state;
  if (route === undefined || intent === undefined) {
    throw new Error(`turn ${state.turn} of ${state.conversation_key} has not been routed`);
  }
  return { ...state, route, intent };
}

/** What a stage of a turn changes: never the turn's frame. */
export type TurnPatch = Partial<Omit<AgentState, keyof TurnFrame>>;

/** The turn's text: the input rails' sanitized message once they ran, else the message as received. */
export function turnText(state: Pick<TurnState, 'sanitized_input' | 'user_text'>): string {
  return state.sanitized_input ?? state.user_text;
}

/** The turn's answer: the released answer once the output rails ran, else the agent's draft. */
export function turnAnswer(state: Pick<AgentState, 'final_answer' | 'answer'>): string {
  return state.final_answer ?? draftAnswer(state);
}

/** The agent's draft answer: empty until a node answered. */
export function draftAnswer(state: Pick<AgentState, 'answer'>): string {
  return state.answer ?? '';
}

/** The turn's tool results so far: none until an agent called a tool. */
export function turnToolResults(state: Pick<AgentState, 'mcp_results'>): McpResult[] {
  return state.mcp_results ?? [];
}

/** The turn's rail decisions so far: none until the input rails ran. */
export function turnRailDecisions(state: Pick<AgentState, 'guardrail_decisions'>): RailDecision[] {
  return state.guardrail_decisions ?? [];
}
