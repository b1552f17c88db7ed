/**
 * The workflow state: the state keys of the original runtime (snake_case, every key optional).
 * It is the checkpoint payload, so its keys are a persisted format: add keys, never rename them.
 */
export type JsonRecord = Record<string, unknown>;

export interface HistoryMessage {
  role: 'user' | 'assistant';
  content: string;
  turn?: number;
  route?: string;
  intent?: string;
  at?: string;
  /** The input guardrails blocked this turn: the message and its safe reply are kept for audit only. */
  blocked?: boolean;
}

/** The route an input-guardrail block gives a turn. */
export const BLOCKED_ROUTE = 'blocked';

/**
 * The history a prompt may show: without the turns the input guardrails blocked, so a blocked message never
 * reaches a model again. A turn counts as blocked when one of its messages is flagged, or (histories stored
 * before the flag existed) when its reply was routed to `blocked`.
 */
export function promptHistory(history: readonly HistoryMessage[] | undefined): HistoryMessage[] {
  const messages = history ?? [];
  const blockedTurns = new Set(
    messages
      .filter((m) => m.blocked === true || (m.role === 'assistant' && m.route === BLOCKED_ROUTE))
      .flatMap((m) => (m.turn === undefined ? [] : [m.turn])),
  );
  return messages.filter((m) => m.blocked !== true && !(m.turn !== undefined && blockedTurns.has(m.turn)));
}

export interface AgentState {
  tenant_id?: string;
  agent_id?: string;
  session_id?: string;
  conversation_key?: string;
  workflow_id?: string;
  agent_profile?: JsonRecord;
  user_text?: string;
  sanitized_input?: string;
  route?: string;
  intent?: string;
  route_decision?: JsonRecord;
  answer?: string;
  final_answer?: string;
  history?: HistoryMessage[];
  context?: JsonRecord;
  guardrail_decisions?: JsonRecord[];
  judge_results?: JsonRecord[];
  next_state?: string | null;
  domain?: string;
  mcp_tools?: string[];
  mcp_results?: JsonRecord[];
  rag_results?: JsonRecord[];
  available_mcp_tools?: string[];
  selected_tool_call?: JsonRecord | null;
  pending_tool_call?: JsonRecord | null;
  active_transaction?: JsonRecord | null;
  last_transaction?: JsonRecord | null;
  transaction_status?: string | null;
  transaction_pre_validation?: JsonRecord | null;
  transaction_evidence?: JsonRecord[];
  last_transaction_evidence?: JsonRecord | null;
  relevant_transaction_evidence?: JsonRecord[];
  confirmation_required?: boolean;
  confirmation_received?: boolean;
  tool_policy_result?: JsonRecord | null;
  missing_parameters?: string[];
  supervisor_plan?: JsonRecord;
  supervisor_results?: JsonRecord[];
  agent_responses?: JsonRecord[];
  pending_topics?: JsonRecord[];
  handled_topics?: JsonRecord[];
  operation_results?: Record<string, JsonRecord>;
  multi_intent_plan?: JsonRecord;
  active_agent?: string;
  route_bypassed?: boolean;
  continuity_signal?: JsonRecord;
  session_control?: string;
  session_ended?: boolean;
  human_handoff_requested?: boolean;
  blocked?: boolean;
  supervisor_action?: string;
  supervisor_guidance?: string;
  supervisor_attempt?: number;
  supervisor_handover_reason?: string;
  output_supervisor_results?: JsonRecord[];
  output_guardrails_already_applied?: boolean;
  long_term_memories?: JsonRecord[];
  long_term_memory_context?: string;
  long_term_memory_write_result?: JsonRecord;
  long_term_memory_subject_key?: string;
  long_term_memory_load_error?: string;

  // Keys added by this runtime (never renamed once shipped).
  /** 1-based number of the turn in its conversation. */
  turn?: number;
  channel?: string;
  message_id?: string;
  user_id?: string;
  metadata?: JsonRecord;
  /** Set while HUMAN_HANDOFF_MODE=hold keeps the bot silent until an operator resumes or ends. */
  human_handoff_held?: boolean;
  /** Agent-to-agent transfers recorded by the `handoff` node. */
  handoff_transfers?: JsonRecord[];
  /** Set by routing when a pending transaction is abandoned for another intent. */
  transaction_interruption?: string | null;
}
