import type { AgentState, StoredEvent } from '@agent/contracts';

export interface CheckpointRow {
  conversation_key: string;
  version: number;
  parent_version: number | null;
  state: AgentState;
  checksum: string;
  size_bytes: number;
  created_at: string;
}

export interface SessionRow {
  conversation_key: string;
  tenant_id: string;
  session_id: string;
  agent_id: string;
  user_id: string | null;
  channel: string | null;
  status: SessionStatus;
  active_agent: string | null;
  next_state: string | null;
  last_route: string | null;
  last_intent: string | null;
  turn_count: number;
  head_version: number;
  lease_owner: string | null;
  lease_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

export type SessionStatus = 'active' | 'ended' | 'handoff';

export interface ConversationIdentity {
  conversation_key: string;
  tenant_id: string;
  session_id: string;
  agent_id: string;
  user_id?: string | null;
  channel?: string | null;
}

/** Everything one turn writes, committed in one transaction. */
export interface TurnCommit {
  identity: ConversationIdentity;
  leaseToken: string;
  parentVersion: number | null;
  turn: number;
  state: AgentState;
  status: SessionStatus;
  events: StoredEvent[];
  idempotency?: { message_id: string; response: Record<string, unknown> };
}

export interface LoadedCheckpoint {
  version: number;
  state: AgentState;
}

export interface StoredEventRow {
  id: string;
  turn: number;
  seq: number;
  name: string;
  payload: Record<string, unknown>;
  created_at: string;
}

export interface SessionListFilter {
  tenant_id?: string;
  agent_id?: string;
  status?: SessionStatus;
  limit: number;
  /** Opaque cursor from a previous page. */
  cursor?: string;
}
