import type { SessionRow, StoredEventRow, VerifiedCheckpointRow } from '@agent/checkpoint';
import type { AgentState, StoredEvent } from '@agent/contracts';
import type {
  AdminActionRecordDto,
  CheckpointInfoDto,
  ContinuityDecisionDto,
  SessionEventDto,
  SessionSummaryDto,
  StateSummaryDto,
  TurnDecisionDto,
} from './admin.dto';

/** Postgres and PGlite hand timestamps back as Date (or string); the API always speaks ISO-8601. */
export function isoOf(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  const parsed = new Date(String(value));
  return Number.isNaN(parsed.getTime()) ? String(value) : parsed.toISOString();
}

export function sessionSummary(row: SessionRow, now = Date.now()): SessionSummaryDto {
  const leaseExpires = row.lease_expires_at ? new Date(isoOf(row.lease_expires_at)).getTime() : 0;
  return {
    conversation_key: row.conversation_key,
    tenant_id: row.tenant_id,
    session_id: row.session_id,
    agent_id: row.agent_id,
    user_id: row.user_id,
    channel: row.channel,
    status: row.status,
    active_agent: row.active_agent,
    next_state: row.next_state,
    last_route: row.last_route,
    last_intent: row.last_intent,
    turn_count: Number(row.turn_count),
    head_version: Number(row.head_version),
    busy: row.lease_owner !== null && leaseExpires > now,
    created_at: isoOf(row.created_at),
    updated_at: isoOf(row.updated_at),
  };
}

export function stateSummary(version: number | null, state: AgentState): StateSummaryDto {
  return {
    version,
    route: state.route ?? null,
    intent: state.intent ?? null,
    domain: state.domain ?? null,
    active_agent: state.active_agent ?? null,
    next_state: state.next_state ?? null,
    session_control: state.session_control ? state.session_control : null,
    session_ended: state.session_ended === true,
    human_handoff_requested: state.human_handoff_requested === true,
    human_handoff_held: state.human_handoff_held === true,
    route_decision: state.route_decision ?? null,
    continuity_signal:
      state.continuity_signal && Object.keys(state.continuity_signal).length > 0
        ? state.continuity_signal
        : null,
    subject_key: state.long_term_memory_subject_key ?? state.user_id ?? null,
    history_messages: state.history?.length ?? 0,
  };
}

export function eventView(row: StoredEventRow): SessionEventDto {
  return {
    id: String(row.id),
    turn: Number(row.turn),
    seq: Number(row.seq),
    name: row.name,
    payload: row.payload,
    created_at: isoOf(row.created_at),
  };
}

export function checkpointView(row: VerifiedCheckpointRow): CheckpointInfoDto {
  return {
    version: Number(row.version),
    parent_version: row.parent_version === null ? null : Number(row.parent_version),
    checksum: row.checksum,
    size_bytes: Number(row.size_bytes),
    created_at: isoOf(row.created_at),
    valid: row.valid,
  };
}

const ADMIN_EVENTS: Record<string, AdminActionRecordDto['action']> = {
  'session.end.requested': 'end',
  'session.human_handoff.requested': 'handoff',
  'session.resumed': 'resume',
};

export function isAdminEvent(event: StoredEventRow): boolean {
  return event.name in ADMIN_EVENTS && event.payload.source === 'admin';
}

/** Operator actions (events with source `admin`), oldest first. */
export function adminActions(events: StoredEventRow[]): AdminActionRecordDto[] {
  return events.filter(isAdminEvent).map((event) => ({
    action: ADMIN_EVENTS[event.name],
    reason:
      typeof event.payload.reason === 'string' && event.payload.reason !== '' ? event.payload.reason : null,
    at: stringOr(event.payload.at),
    after_turn: Number(event.turn),
  }));
}

/**
 * The stored events of each turn, oldest turn first. Operator events share the turn number of the turn before
 * them and are left to `adminActions`.
 */
export function eventsByTurn(events: StoredEventRow[]): [number, StoredEventRow[]][] {
  const byTurn = new Map<number, StoredEventRow[]>();
  for (const event of events) {
    if (isAdminEvent(event)) continue;
    const turn = Number(event.turn);
    const list = byTurn.get(turn) ?? [];
    list.push(event);
    byTurn.set(turn, list);
  }
  return [...byTurn.entries()].sort((a, b) => a[0] - b[0]);
}

/**
 * One decision per processed turn, from the events the turn committed: `router.decision` (route, intent,
 * method, confidence), `router.continuity` (the classifier's verdict; an accepted CONTINUE is the route when
 * the router did not run), session-control and rejection events, and `AGENT_COMPLETED` (final route, latency).
 */
export function turnDecisions(events: StoredEventRow[]): TurnDecisionDto[] {
  return eventsByTurn(events).flatMap(([turn, list]) => {
    const decision = turnDecision(turn, list);
    return decision ? [decision] : [];
  });
}

/** The decision of one turn from its events; null when the turn has no start event (only operator events). */
export function turnDecision(turn: number, list: StoredEventRow[]): TurnDecisionDto | null {
  const find = (name: string) => [...list].reverse().find((event) => event.name === name)?.payload;
  const started = find('AGENT_STARTED') ?? find('NOC.001');
  if (!started) return null;
  const router = find('router.decision');
  const continuityEvent = find('router.continuity');
  const completed = find('AGENT_COMPLETED');
  const continuity = continuityEvent ? continuityView(continuityEvent) : null;
  const bypassed = continuityEvent?.route_bypassed === true || router?.method === 'continuity';
  const endedByUser = find('session.end.requested') !== undefined;
  const handedOff = find('session.human_handoff.requested') !== undefined;
  const rejectedAfterEnd = find('session.message.rejected_after_end') !== undefined;
  const heldForHuman = find('session.message.held_for_human') !== undefined;
  const inputBlocked = find('guardrails.input.completed')?.blocked === true;
  const outputBlocked = find('guardrails.output.completed')?.blocked === true;
  // The final route (AGENT_COMPLETED) wins over the router's proposal: the graph may have replaced it.
  const route =
    stringOr(completed?.route) ??
    stringOr(router?.route) ??
    (bypassed ? stringOr(continuityEvent?.active_agent) : null);
  return {
    turn,
    at: stringOr(started.at),
    route,
    intent: stringOr(completed?.intent) ?? stringOr(router?.intent),
    method: stringOr(router?.method) ?? (bypassed ? 'continuity' : inputBlocked ? 'guardrail' : null),
    confidence: numberOr(router?.confidence) ?? (bypassed ? (continuity?.confidence ?? null) : null),
    route_bypassed: bypassed,
    continuity,
    session_control:
      endedByUser || rejectedAfterEnd ? 'END_SESSION' : handedOff || heldForHuman ? 'HUMAN_HANDOFF' : null,
    blocked: inputBlocked || outputBlocked || rejectedAfterEnd || heldForHuman,
    latency_ms: numberOr(completed?.latency_ms),
    // The turn log row's column; an operator action's row under the same turn has none.
    first_text_ms: list.find((event) => event.first_text_ms !== null)?.first_text_ms ?? null,
  };
}

function continuityView(payload: StoredEvent['payload']): ContinuityDecisionDto {
  return {
    decision: stringOr(payload.decision) ?? 'unknown',
    confidence: numberOr(payload.confidence),
    accepted: payload.accepted === true,
    fallback_reason: stringOr(payload.fallback_reason),
    latency_ms: numberOr(payload.latency_ms),
    reason: stringOr(payload.reason),
  };
}

/** A JSON object inside a stored event's payload (a rail decision, a node timing). */
export function isRecord(value: unknown): value is StoredEvent['payload'] {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function stringOr(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

export function numberOr(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}
