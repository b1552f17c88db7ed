import type { AgentState, ConversationKey, StoredEvent } from '@agent/contracts';
import type { CheckpointFormat } from './canonical-json';

export interface CheckpointRow {
  conversation_key: string;
  version: number;
  /** The version whose state this one was built from (lineage); null for a conversation's (re)start. */
  parent_version: number | null;
  /** The state as stored; parsed only after integrity passes (CheckpointService). */
  state_text: string;
  format: CheckpointFormat;
  checksum: string;
  size_bytes: number;
  created_at: Date;
}

export type CheckpointSummary = Omit<CheckpointRow, 'state_text'>;

/**
 * The tables whose rows age out: the turn log and the failed runs (TURN_LOG_RETENTION_DAYS), the idempotency
 * records (PROCESSED_MESSAGES_RETENTION_DAYS).
 */
export type RetainedTable = 'turn_log' | 'processed_messages' | 'turn_failures';

/** A workflow run that failed under a lease, as its record keeps it (`turn_failures`). */
export interface FailedRun {
  /** The turn number the run would have had. */
  turn: number;
  /** The failure events it published outside its turn's buffer, payloads whole. */
  events: StoredEvent[];
}

/** What taking the lease read in the same statement. */
export interface LeaseAttempt {
  /** The stored response when the message was already processed; no lease is taken then. */
  replay: StoredResponse | null;
  /** The session row with the lease taken, or null while another holder has it. */
  session: SessionRow | null;
  /** The checkpoint at the session's head version, unverified; null when none is stored there. */
  head: CheckpointRow | null;
}

export interface StoredResponse {
  response: Record<string, unknown>;
  /** The fingerprint of the request body that produced it (null for records of earlier releases). */
  fingerprint: string | null;
}

export interface LeaseRequest {
  token: string;
  leaseMs: number;
  /** Also take a lease held by a token with this prefix (this process's own, left behind). */
  reclaimPrefix?: string;
  /** Look this message up first: when processed, its response comes back and no lease is taken. */
  messageId?: string;
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
  lease_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type SessionStatus = 'active' | 'ended' | 'handoff';

export interface ConversationIdentity {
  conversation_key: ConversationKey;
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
  /**
   * The version the state was built from (lineage, part of the checksum); null on a clean start. The new
   * version always extends the head the lease saw, which is newer than this when corrupt versions were skipped.
   */
  parentVersion: number | null;
  turn: number;
  state: AgentState;
  status: SessionStatus;
  /** What the commit decided, stored in its turn log row (null when absent). */
  summary?: TurnSummary;
  /** Streamed turns: ms from the turn's start to the first released answer text (null or absent: none). */
  firstTextMs?: number | null;
  events: StoredEvent[];
  idempotency?: { message_id: string; response: Record<string, unknown>; fingerprint?: string };
}

/** The decision of one commit as its turn log row keeps it (docs/architecture.md#the-turn-log). */
export interface TurnSummary {
  /** `turn` for a processed message, `admin` for an operator action (end, handoff, resume). */
  kind: 'turn' | 'admin';
  /** The operator action of an `admin` row. */
  action?: string;
  route: string | null;
  intent: string | null;
  /** `route_decision.method`: continuity, llm, keyword, state_policy, fallback, supervisor or guardrail. */
  method: string | null;
  active_agent: string | null;
  route_bypassed: boolean;
  /** The continuity classifier's decision, when it was asked. */
  continuity: string | null;
  blocked: boolean;
  session_control: string | null;
  next_state: string | null;
  /** Wall time of the turn up to the commit. */
  latency_ms: number | null;
}

/** How the store must write one commit, as the service computed it. */
export interface CheckpointWrite {
  /** The head the writer's lease saw: the write is fenced on it and becomes version `expectedHead + 1`. */
  expectedHead: number;
  /** `serializeCheckpoint(state, parentVersion)`: the text stored as the state (format 2) and its hash. */
  checksum: string;
  serializedState: string;
  /** The versions the conversation keeps (CHECKPOINT_RETENTION): the commit deletes the ones below them. */
  keep: number;
}

export interface LoadedCheckpoint {
  /** The version whose state was restored (older than the head when corrupt versions were skipped). */
  version: number;
  state: AgentState;
  /** Corrupt newer versions skipped to reach this one. */
  skipped: number;
}

export interface StoredEventRow {
  id: string;
  turn: number;
  seq: number;
  name: string;
  payload: Record<string, unknown>;
  created_at: Date;
  /** The turn log row's time to first released text (TurnCommit.firstTextMs). */
  first_text_ms: number | null;
}

export interface SessionListFilter {
  tenant_id?: string;
  agent_id?: string;
  status?: SessionStatus;
  /** Last activity (updated_at) at or after this ISO instant. */
  updated_after?: string;
  /** Last activity (updated_at) before this ISO instant. */
  updated_before?: string;
  limit: number;
  /** Opaque cursor from a previous page. */
  cursor?: string;
}
