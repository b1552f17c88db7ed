/** The event catalogue (docs/api.md#events): names and payloads. */

/** Carried by every stored event. */
export interface EventEnvelope {
  tenant_id: string;
  agent_id: string;
  session_id: string;
  conversation_key: string;
  turn: number;
  at: string;
}

/** The envelope fields a turn log row holds in its own columns, and so stores its events without. */
export type RowEnvelope = Omit<EventEnvelope, 'at'>;

/**
 * The envelope of the events of a turn log row, from its columns: the session id is the conversation key after
 * `<tenant_id>:`. Readers spread a stored payload over it (`{ ...envelope, ...payload }`), so a field the payload
 * kept because it differed from the row's wins; the SQL function `turn_log_events` does the same in the database.
 */
export function rowEnvelope(row: Omit<RowEnvelope, 'session_id'>): RowEnvelope {
  return {
    tenant_id: row.tenant_id,
    agent_id: row.agent_id,
    session_id: row.conversation_key.slice(row.tenant_id.length + 1),
    conversation_key: row.conversation_key,
    turn: row.turn,
  };
}

/**
 * Positions per checkpoint version in a conversation's order of published events (ADR 0010): the commit that
 * wrote the version (attempt 0), then the workflow runs that failed on it as head (attempts 1 to 65535), then the
 * next version's commit. The event relay delivers a conversation's events in this order.
 */
export const POSITIONS_PER_VERSION = 65536;

/** The position of a commit (attempt 0) or of a failed run on its head; exact up to version 2^37. */
export function conversationPosition(version: number, attempt: number): number {
  return version * POSITIONS_PER_VERSION + attempt;
}

/**
 * Payloads by event name. A module may declare the events it emits next to its code by augmenting this
 * interface (`declare module '@agent/contracts'`), as the transaction engine does for `IC.TRANSACTION_*`.
 */
export interface EventPayloads {
  'router.continuity': {
    decision: string;
    confidence: number;
    active_agent: string;
    route_bypassed: boolean;
    profile_name: string;
    accepted: boolean;
    fallback_reason: string | null;
    latency_ms: number;
    reason?: string;
  };
  'router.decision': {
    route: string;
    intent: string;
    method: string;
    confidence: number;
    reason?: string;
    domain?: string | null;
    mcp_tools?: string[];
  };
  /** Supervisor mode: the topics planned for the turn and where the plan came from. */
  'router.supervisor.plan': {
    source: string;
    intents: string[];
    deferred: string[];
    state_policy: string | null;
    held: boolean;
    llm_rejection: string | null;
  };
  'router.continuity.shadow': {
    continuity_agent: string;
    router_agent: string;
    router_intent: string;
    router_method: string;
    agreed: boolean;
  };
  /** What a person needs to pick the conversation up (docs/integration.md#the-handoff-desk). */
  'session.human_handoff.requested': HandoffRequest;
  /** A person took a waiting conversation (admin API). */
  'session.handoff.claimed': { source: string; claimed_by: string };
  'session.end.requested': { reason: string; source: string };
  'session.message.rejected_after_end': Record<string, unknown>;
  'session.message.held_for_human': Record<string, unknown>;
  /** Back to the bot; `claimed_by` is who held the conversation, null when nobody had claimed it. */
  'session.resumed': { source: string; claimed_by?: string | null };
  'guardrails.input.completed': { blocked: boolean; decisions: unknown[]; codes?: string[] };
  'guardrails.output.completed': {
    blocked: boolean;
    decisions: unknown[];
    codes?: string[];
    /** Output supervisor pass (0 = the agent's first answer). */
    attempt?: number;
  };
  /** The answer exceeded AGENT_MAX_ANSWER_CHARS and was cut at a sentence end before the output rails. */
  'guardrails.output.truncated': { original_chars: number; kept_chars: number; limit: number };
  'output_supervisor.completed': {
    action: string;
    attempt: number;
    results?: unknown[];
    handover_reason?: string;
    note?: string;
  };
  'supervisor.review.completed': {
    approved: boolean;
    violations?: unknown[];
    /** Why the review did not look at the answer (e.g. a session-control message). */
    skipped?: string;
  };
  'long_term_memory.load.failed': { error: string };
  'long_term_memory.persist.completed': { saved: number };
  'long_term_memory.persist.failed': { error: string };
  /** A fact the memory rails blocked: not stored. */
  'long_term_memory.fact.rejected': { key: string; category: string; codes: string[] };
  'checkpoint.recovery.skip_corrupt': { version: number; reason: string };
  'checkpoint.recovery.clean_start': { skipped: number };
  'checkpoint.recovery.version_gap': {
    expected_version: number;
    found_version: number | null;
    missing_versions: number;
  };
  'NOC.001': { channel?: string; message_id?: string };
  AGENT_STARTED: { workflow_id: string };
  AGENT_COMPLETED: {
    route?: string;
    intent?: string;
    answer_chars: number;
    latency_ms: number;
    /** A streamed turn: ms from its start to the first answer text released to the client; null otherwise. */
    first_text_ms?: number | null;
    /** Duration of every node of the turn, in execution order. */
    nodes?: { node: string; duration_ms: number; outcome: 'ok' | 'error' }[];
  };
  'NOC.005': { error: string; exception_type: string };
  /** The record of a workflow run that failed: published with NOC.005, outside the failed turn's events. */
  'workflow_telemetry.failed': {
    workflow: 'agent_workflow';
    workflow_id: string;
    /** The node that threw; null when the run failed before its first node. */
    node: string | null;
    error: string;
    exception_type: string;
    duration_ms: number;
  };
  /** A tool call that failed: before it ran (`preparation`, with the error `code`) or at its server. */
  'NOC.MCP_TOOL_FAILED': {
    tool_name: string;
    server?: string;
    error: string;
    stage: 'preparation' | 'execution';
    code?: string;
  };
  'mcp.tool_call.completed': {
    tool_name: string;
    server: string;
    ok: boolean;
    /** `unavailable` and `timeout`: the server could not serve the call; `error`: the tool answered a failure. */
    outcome?: McpCallOutcome;
    error?: string | null;
    latency_ms: number;
  };
  'llm.call': {
    profile: string;
    model: string;
    latency_ms: number;
    prompt_tokens: number;
    /** Of prompt_tokens, those the provider served from its prompt cache. */
    cached_prompt_tokens: number;
    completion_tokens: number;
    outcome: LlmCallOutcome;
    /** A failed call's cause: the network one when nothing answered (refused, dns, tls, ...), else the outcome. */
    cause?: string;
    /** The HTTP status of an `http_error`. */
    status?: number;
  };
  'workflow.node.completed': { node: string; duration_ms: number; outcome: 'ok' | 'error' };
  /** One rail result, by action: GRL.002 allow, .003 sanitize, .004 block, .005 retry, .006 handover, .007 observe. */
  'GRL.002': GuardrailRailEvent;
  'GRL.003': GuardrailRailEvent;
  'GRL.004': GuardrailRailEvent;
  'GRL.005': GuardrailRailEvent;
  'GRL.006': GuardrailRailEvent;
  'GRL.007': GuardrailRailEvent;
  /** A rail failed and its fail_closed posture blocked the message. */
  'GRL.008': GuardrailRailEvent;
  /** One guardrail stage's summary. */
  'GRL.009': {
    stage: string;
    source?: string;
    phase: string;
    rail_codes: string[];
    result_count: number;
    completion_order: string[];
    cancelled_codes: string[];
    fail_fast_triggered: boolean;
    terminal_code: string | null;
    terminal_action: string | null;
    duration_ms: number;
  };
}

export interface GuardrailRailEvent {
  stage: string;
  source?: string;
  code: string;
  action: string;
  reason: string;
  latency_ms: number;
  error?: string;
  cause?: unknown;
  metadata: Record<string, unknown>;
}

/** A conversation's last messages as the handoff summary shows them. */
export interface HandoffMessage {
  role: 'user' | 'assistant';
  content: string;
  turn?: number;
}

export interface HandoffRequest {
  reason: string;
  /** `continuity` (the classifier) or `admin`. */
  source: string;
  channel?: string | null;
  user_id?: string | null;
  /** The agent that was serving the conversation, and the intent of its last routed turn. */
  active_agent?: string | null;
  intent?: string | null;
  /** The operation the customer was in the middle of (dropped by the handoff), or null. */
  pending_transaction?: Record<string, unknown> | null;
  /** The customer's message that asked for a person (absent for an operator's handoff). */
  user_text?: string | null;
  last_messages?: HandoffMessage[];
}

export type McpCallOutcome = 'ok' | 'unavailable' | 'timeout' | 'error';

export type LlmCallOutcome =
  'ok' | 'timeout' | 'http_error' | 'invalid_response' | 'cancelled' | 'error' | 'not_configured';

export type KnownEventName = keyof EventPayloads;

/**
 * Names with a dynamic part (`checkpoint.<op>.retry`, `GRL.*`, `judge.<name>.evaluated`, `mcp.parameter.*`)
 * are allowed alongside the fixed catalogue.
 */
export type DynamicEventName =
  | `checkpoint.${string}.retry`
  | `GRL.${string}`
  | `judge.${string}.evaluated`
  | 'judges.completed'
  | `mcp.${string}`
  | `IC.${string}`
  | `NOC.${string}`;

export type EventName = KnownEventName | DynamicEventName;

export type EventPayload<N extends EventName> = N extends KnownEventName
  ? EventPayloads[N]
  : Record<string, unknown>;

/** What an in-process listener receives after commit: the payload with the envelope every stored event has. */
export type CommittedEvent<N extends EventName> = EventPayload<N> & EventEnvelope;

export interface StoredEvent {
  name: string;
  payload: Record<string, unknown>;
  at: string;
}
