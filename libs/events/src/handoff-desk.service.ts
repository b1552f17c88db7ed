import { Injectable } from '@nestjs/common';
import type { HandoffMessage, HandoffRequest } from '@agent/contracts';
import { DatabaseService, statement } from '@agent/database';

/** Who took a waiting conversation, and when. */
export interface HandoffClaim {
  claimed_by: string;
  claimed_at: string;
}

/** A conversation waiting for a person, with what that person needs to pick it up. */
export interface WaitingHandoff {
  conversation_key: string;
  tenant_id: string;
  session_id: string;
  agent_id: string;
  channel: string | null;
  user_id: string | null;
  requested_at: string;
  waiting_seconds: number;
  reason: string;
  source: string;
  active_agent: string | null;
  intent: string | null;
  pending_transaction: Record<string, unknown> | null;
  user_text: string | null;
  last_messages: HandoffMessage[];
  /** Customer messages since the request (in hold mode each got HUMAN_HANDOFF_PENDING_MESSAGE). */
  messages_since: number;
  claim: HandoffClaim | null;
}

interface WaitingRow {
  conversation_key: string;
  tenant_id: string;
  session_id: string;
  agent_id: string;
  channel: string | null;
  user_id: string | null;
  active_agent: string | null;
  last_intent: string | null;
  turn_count: number;
  request: (Partial<HandoffRequest> & { at?: string; turn?: number }) | null;
  requested_at: Date;
  claim: { claimed_by?: string; at?: string } | null;
  claimed_at: Date | null;
}

/** Event ids grow in commit order within a conversation, so "after the request" is `id >` the request's id. */
const LATEST_REQUEST_AND_CLAIM = `
  LEFT JOIN LATERAL (
    SELECT e.id, e.payload, e.created_at FROM session_events e
     WHERE e.conversation_key = s.conversation_key AND e.name = 'session.human_handoff.requested'
     ORDER BY e.id DESC LIMIT 1) r ON true
  LEFT JOIN LATERAL (
    SELECT e.payload, e.created_at FROM session_events e
     WHERE e.conversation_key = s.conversation_key AND e.name = 'session.handoff.claimed'
       AND r.id IS NOT NULL AND e.id > r.id
     ORDER BY e.id DESC LIMIT 1) c ON true`;

/** Each waiting session's latest request and claim, found by lateral reads of the session_events view. */
const WAITING = statement<[tenantId: string | null, limit: number], WaitingRow>(
  'handoff_desk_waiting',
  `SELECT s.conversation_key, s.tenant_id, s.session_id, s.agent_id, s.channel, s.user_id, s.active_agent,
          s.last_intent, s.turn_count, r.payload AS request, COALESCE(r.created_at, s.updated_at) AS requested_at,
          c.payload AS claim, c.created_at AS claimed_at
     FROM sessions s
     ${LATEST_REQUEST_AND_CLAIM}
    WHERE s.status = 'handoff' AND ($1::text IS NULL OR s.tenant_id = $1)
    ORDER BY COALESCE(r.created_at, s.updated_at) ASC, s.conversation_key ASC
    LIMIT $2`,
);

/** The same lateral read as WAITING, for one conversation. */
const CURRENT_CLAIM = statement<[conversationKey: string], Pick<WaitingRow, 'claim' | 'claimed_at'>>(
  'handoff_desk_current_claim',
  `SELECT c.payload AS claim, c.created_at AS claimed_at
     FROM sessions s
     ${LATEST_REQUEST_AND_CLAIM}
    WHERE s.conversation_key = $1`,
);

/**
 * The handoff desk's reads: the conversations waiting for a person (status `handoff`), each with its latest
 * `session.human_handoff.requested` and the `session.handoff.claimed` that followed it, if any. The claim is an
 * event of the conversation's history, so it commits with the operator action that made it.
 */
@Injectable()
export class HandoffDeskService {
  constructor(private readonly database: DatabaseService) {}

  /** Oldest request first; `tenantId` undefined covers every tenant. */
  async waiting(filter: { tenantId?: string; limit: number }, now = Date.now()): Promise<WaitingHandoff[]> {
    const rows = await this.database.run(WAITING, [filter.tenantId ?? null, filter.limit]);
    return rows.map((row) => waitingView(row, now));
  }

  /** The claim on the conversation's current handoff request, or null when nobody has taken it. */
  async currentClaim(conversationKey: string): Promise<HandoffClaim | null> {
    const rows = await this.database.run(CURRENT_CLAIM, [conversationKey]);
    return rows.length > 0 ? claimOf(rows[0]) : null;
  }
}

function claimOf(row: Pick<WaitingRow, 'claim' | 'claimed_at'>): HandoffClaim | null {
  if (!row.claim || typeof row.claim.claimed_by !== 'string') return null;
  return {
    claimed_by: row.claim.claimed_by,
    claimed_at: row.claim.at ?? new Date(row.claimed_at ?? 0).toISOString(),
  };
}

function waitingView(row: WaitingRow, now: number): WaitingHandoff {
  const request = row.request ?? {};
  const requestedAt = request.at ?? new Date(row.requested_at).toISOString();
  return {
    conversation_key: row.conversation_key,
    tenant_id: row.tenant_id,
    session_id: row.session_id,
    agent_id: row.agent_id,
    channel: request.channel ?? row.channel,
    user_id: request.user_id ?? row.user_id,
    requested_at: requestedAt,
    waiting_seconds: Math.max(0, Math.round((now - Date.parse(requestedAt)) / 1000)),
    reason: request.reason ?? '',
    source: request.source ?? '',
    // Requests stored before the summary existed fall back to the session row.
    active_agent: request.active_agent !== undefined ? request.active_agent : row.active_agent,
    intent: request.intent !== undefined ? request.intent : row.last_intent,
    pending_transaction: request.pending_transaction ?? null,
    user_text: request.user_text ?? null,
    last_messages: request.last_messages ?? [],
    messages_since: Math.max(0, row.turn_count - (request.turn ?? row.turn_count)),
    claim: claimOf(row),
  };
}
