import { sessionIdOf } from './conversation-key';

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
 * The envelope of the events of a turn log row, from its columns: the session id is read from the conversation key. Readers spread a stored payload over it (`{ ...envelope, ...payload }`), so a field the payload
 * kept because it differed from the row's wins; the SQL function `turn_log_events` does the same in the database.
 */
export function rowEnvelope(row: Omit<RowEnvelope, 'session_id'>): RowEnvelope {
  return {
    tenant_id: row.tenant_id,
    agent_id: row.agent_id,
    session_id: sessionIdOf(row.conversation_key, row.tenant_id),
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
 * Payloads by event name: here the turn's own events and those read outside the module that emits them (the
 * metrics listener, the handoff desk, the admin views); every other module declares the events it emits in its
 * `<module>.events.ts` by augmenting this interface (`declare module '@agent/contracts'`). `EventBusService.emit`
 * takes only names of this catalogue, so every payload is type-checked where it is emitted.
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
  'router.continuity.shadow': {
    continuity_agent: string;
    router_agent: string;
    router_intent: string;
    router_method: string;
    agreed: boolean;
  };
  /** What a person needs to pick the conversation up (docs/integration.md#the-handoff-desk). */
  'session.human_handoff.requested': HandoffRequest;
  'session.end.requested': { reason: string; source: string };
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

export type LlmCallOutcome =
  'ok' | 'timeout' | 'http_error' | 'invalid_response' | 'cancelled' | 'error' | 'not_configured';

/** Every event name, with the patterns of names that carry a part (`judge.<name>.evaluated`). */
export type EventName = keyof EventPayloads;

export type EventPayload<N extends EventName> = EventPayloads[N];

/** What an in-process listener receives after commit: the payload with the envelope every stored event has. */
export type CommittedEvent<N extends EventName> = EventPayload<N> & EventEnvelope;

export interface StoredEvent {
  name: string;
  payload: Record<string, unknown>;
  at: string;
}
