import {
  CheckpointFencingError,
  CheckpointRow,
  CheckpointStore,
  CheckpointSummary,
  CheckpointWrite,
  ConversationIdentity,
  decodeSessionCursor,
  FailedRun,
  encodeSessionCursor,
  jsonbText,
  LeaseAttempt,
  LeaseRequest,
  RetainedTable,
  SessionListFilter,
  SessionCursor,
  SessionRow,
  StoredEventRow,
  StoredResponse,
  TurnCommit,
  TurnSummary,
  TurnLogEvent,
  turnLogEvents,
} from '@agent/checkpoint';
import { POSITIONS_PER_VERSION, rowEnvelope } from '@agent/contracts';

export interface TurnLogRow {
  conversation_key: string;
  version: number;
  turn: number;
  tenant_id: string;
  agent_id: string;
  summary: TurnSummary | null;
  /** As stored: payloads without the envelope fields the row holds (listEvents puts them back). */
  events: TurnLogEvent[];
  /** The response of the processed message this row committed. */
  response: Record<string, unknown> | null;
  first_text_ms: number | null;
  created_at: Date;
}

export interface ProcessedMessageRow {
  conversation_key: string;
  message_id: string;
  turn: number;
  /** The turn log row holding the response (null in records of earlier releases). */
  version: number | null;
  /** The response, only in records of earlier releases. */
  response: Record<string, unknown> | null;
  fingerprint: string | null;
  created_at: Date;
}

/**
 * The rows, keyed as the tables' primary keys are. Handed in (as mastra's in-memory stores take their collections)
 * so a test can reach behind the store the way SQL reaches behind the Postgres one: to corrupt or age a row.
 */
export interface TurnFailureRow {
  conversation_key: string;
  version: number;
  attempt: number;
  turn: number;
  tenant_id: string;
  agent_id: string;
  events: TurnLogEvent[];
  created_at: Date;
}

export interface InMemoryCheckpointTables {
  sessions: Map<string, SessionRow>;
  /** conversation_key → version → row. */
  checkpoints: Map<string, Map<number, CheckpointRow>>;
  turnLog: Map<string, Map<number, TurnLogRow>>;
  processed: Map<string, Map<string, ProcessedMessageRow>>;
  /** conversation_key → `version:attempt` → row. */
  failures: Map<string, Map<string, TurnFailureRow>>;
}

export function emptyCheckpointTables(): InMemoryCheckpointTables {
  return {
    sessions: new Map(),
    checkpoints: new Map(),
    turnLog: new Map(),
    processed: new Map(),
    failures: new Map(),
  };
}

/** Events of one turn log row are numbered like the session_events view numbers them. */
const EVENTS_PER_VERSION = 65536;

/**
 * The conversation store held in process memory: the same contract as PostgresCheckpointStore
 * (test/support/checkpoint-store-contract.ts), for unit tests of the services above it. Every method completes
 * without yielding between its reads and writes, which is what makes each one atomic here.
 */
export class InMemoryCheckpointStore extends CheckpointStore {
  constructor(readonly tables: InMemoryCheckpointTables = emptyCheckpointTables()) {
    super();
  }

  latestVersions(conversationKey: string, limit: number, beforeVersion?: number): Promise<CheckpointRow[]> {
    const rows = this.versionsOf(conversationKey)
      .filter((row) => beforeVersion === undefined || row.version < beforeVersion)
      .slice(0, limit);
    return Promise.resolve(rows.map((row) => ({ ...row })));
  }

  getVersion(conversationKey: string, version: number): Promise<CheckpointRow | null> {
    const row = this.tables.checkpoints.get(conversationKey)?.get(version);
    return Promise.resolve(row ? { ...row } : null);
  }

  listVersions(conversationKey: string): Promise<CheckpointSummary[]> {
    return Promise.resolve(
      this.versionsOf(conversationKey).map(({ state_text: _state, ...summary }) => summary),
    );
  }

  acquireLease(identity: ConversationIdentity, request: LeaseRequest): Promise<LeaseAttempt> {
    const key = identity.conversation_key;
    const replay = request.messageId ? this.processedRow(key, request.messageId) : null;
    if (replay) return Promise.resolve({ replay, session: null, head: null });
    const now = new Date();
    let session = this.tables.sessions.get(key);
    if (!session) {
      session = {
        conversation_key: key,
        tenant_id: identity.tenant_id,
        session_id: identity.session_id,
        agent_id: identity.agent_id,
        user_id: identity.user_id ?? null,
        channel: identity.channel ?? null,
        status: 'active',
        active_agent: null,
        next_state: null,
        last_route: null,
        last_intent: null,
        turn_count: 0,
        head_version: 0,
        lease_owner: null,
        lease_expires_at: null,
        created_at: now,
        updated_at: now,
      };
      this.tables.sessions.set(key, session);
    } else if (!leaseFree(session, request, now)) {
      return Promise.resolve({ replay: null, session: null, head: null });
    }
    session.lease_owner = request.token;
    session.lease_expires_at = new Date(now.getTime() + request.leaseMs);
    const head = this.tables.checkpoints.get(key)?.get(session.head_version);
    return Promise.resolve({ replay: null, session: { ...session }, head: head ? { ...head } : null });
  }

  renewLease(conversationKey: string, token: string, leaseMs: number): Promise<boolean> {
    const session = this.tables.sessions.get(conversationKey);
    if (session?.lease_owner !== token) return Promise.resolve(false);
    session.lease_expires_at = new Date(Date.now() + leaseMs);
    return Promise.resolve(true);
  }

  releaseLease(conversationKey: string, token: string): Promise<void> {
    const session = this.tables.sessions.get(conversationKey);
    if (session?.lease_owner === token) {
      session.lease_owner = null;
      session.lease_expires_at = null;
    }
    return Promise.resolve();
  }

  releaseFailed(conversationKey: string, token: string, run: FailedRun): Promise<boolean> {
    const session = this.tables.sessions.get(conversationKey);
    if (session?.lease_owner !== token) return Promise.resolve(false);
    session.lease_owner = null;
    session.lease_expires_at = null;
    const failures = rowsOf(this.tables.failures, conversationKey);
    const attempt = [...failures.values()].filter((row) => row.version === session.head_version).length + 1;
    if (attempt >= POSITIONS_PER_VERSION) return Promise.resolve(false);
    failures.set(`${session.head_version}:${attempt}`, {
      conversation_key: conversationKey,
      version: session.head_version,
      attempt,
      turn: run.turn,
      tenant_id: session.tenant_id,
      agent_id: session.agent_id,
      events: asJsonb(run.events.map(({ name, payload }) => ({ name, payload }))),
      created_at: new Date(),
    });
    return Promise.resolve(true);
  }

  commitTurn(commit: TurnCommit, write: CheckpointWrite): Promise<number> {
    const key = commit.identity.conversation_key;
    const version = write.expectedHead + 1;
    const session = this.tables.sessions.get(key);
    if (
      !session ||
      session.head_version !== write.expectedHead ||
      session.lease_owner !== commit.leaseToken
    ) {
      return Promise.reject(new CheckpointFencingError(key, write.expectedHead));
    }
    // Every unique key is checked before anything is written: all or nothing, as in one statement.
    if (this.tables.checkpoints.get(key)?.has(version)) {
      return Promise.reject(new Error(`duplicate key: checkpoint ${key}@${version}`));
    }
    if (this.tables.turnLog.get(key)?.has(version)) {
      return Promise.reject(new Error(`duplicate key: turn log ${key}@${version}`));
    }
    const messageId = commit.idempotency?.message_id;
    if (messageId !== undefined && this.tables.processed.get(key)?.has(messageId)) {
      return Promise.reject(new Error(`duplicate key: processed message ${key}/${messageId}`));
    }
    const now = new Date();
    Object.assign(session, {
      head_version: version,
      turn_count: commit.turn,
      status: commit.status,
      active_agent: commit.state.active_agent ?? null,
      next_state: commit.state.next_state ?? null,
      last_route: commit.state.route ?? null,
      last_intent: commit.state.intent ?? null,
      user_id: commit.identity.user_id ?? session.user_id,
      updated_at: now,
      lease_owner: null,
      lease_expires_at: null,
    });
    const versions = rowsOf(this.tables.checkpoints, key);
    for (const old of [...versions.keys()]) if (old <= version - write.keep) versions.delete(old);
    versions.set(version, {
      conversation_key: key,
      version,
      parent_version: commit.parentVersion,
      state_text: write.serializedState,
      format: 2,
      checksum: write.checksum,
      size_bytes: Buffer.byteLength(write.serializedState),
      created_at: now,
    });
    rowsOf(this.tables.turnLog, key).set(version, {
      conversation_key: key,
      version,
      turn: commit.turn,
      tenant_id: commit.identity.tenant_id,
      agent_id: commit.identity.agent_id,
      summary: commit.summary ? asJsonb(commit.summary) : null,
      events: asJsonb(turnLogEvents(commit)),
      response: commit.idempotency ? asJsonb(commit.idempotency.response) : null,
      first_text_ms: commit.firstTextMs ?? null,
      created_at: now,
    });
    if (commit.idempotency) {
      rowsOf(this.tables.processed, key).set(commit.idempotency.message_id, {
        conversation_key: key,
        message_id: commit.idempotency.message_id,
        turn: commit.turn,
        version,
        response: null,
        fingerprint: commit.idempotency.fingerprint ?? null,
        created_at: now,
      });
    }
    return Promise.resolve(version);
  }

  findProcessedMessage(conversationKey: string, messageId: string): Promise<StoredResponse | null> {
    return Promise.resolve(this.processedRow(conversationKey, messageId));
  }

  getSession(conversationKey: string): Promise<SessionRow | null> {
    const session = this.tables.sessions.get(conversationKey);
    return Promise.resolve(session ? { ...session } : null);
  }

  listSessions(filter: SessionListFilter): Promise<{ items: SessionRow[]; next_cursor: string | null }> {
    // A bad cursor rejects, as the Postgres store's does.
    return Promise.resolve(filter.cursor).then((raw) =>
      this.sessionPage(filter, raw ? decodeSessionCursor(raw) : null),
    );
  }

  private sessionPage(
    filter: SessionListFilter,
    cursor: SessionCursor | null,
  ): { items: SessionRow[]; next_cursor: string | null } {
    const after = filter.updated_after ? Date.parse(filter.updated_after) : null;
    const before = filter.updated_before ? Date.parse(filter.updated_before) : null;
    const rows = [...this.tables.sessions.values()]
      .filter(
        (s) =>
          s.turn_count > 0 &&
          (!filter.tenant_id || s.tenant_id === filter.tenant_id) &&
          (!filter.agent_id || s.agent_id === filter.agent_id) &&
          (!filter.status || s.status === filter.status) &&
          (after === null || s.updated_at.getTime() >= after) &&
          (before === null || s.updated_at.getTime() < before) &&
          (!cursor || compareRecency(s, Date.parse(cursor.updated_at), cursor.conversation_key) < 0),
      )
      .sort((a, b) => -compareRecency(a, b.updated_at.getTime(), b.conversation_key))
      .slice(0, filter.limit + 1);
    const items = rows.slice(0, filter.limit).map((s) => ({ ...s }));
    const last = items[items.length - 1];
    const next_cursor =
      rows.length > filter.limit && last
        ? encodeSessionCursor(last.updated_at.toISOString(), last.conversation_key)
        : null;
    return { items, next_cursor };
  }

  listEvents(conversationKey: string): Promise<StoredEventRow[]> {
    const rows = [...(this.tables.turnLog.get(conversationKey)?.values() ?? [])].sort(
      (a, b) => a.version - b.version,
    );
    return Promise.resolve(
      rows.flatMap((row) =>
        row.events.map((event, index) => ({
          id: String(row.version * EVENTS_PER_VERSION + index + 1),
          turn: row.turn,
          seq: index + 1,
          name: event.name,
          // As the database's turn_log_events function gives the envelope back.
          payload: { ...rowEnvelope(row), ...event.payload },
          created_at: row.created_at,
          first_text_ms: row.first_text_ms,
        })),
      ),
    );
  }

  deleteExpired(table: RetainedTable, before: Date, limit: number): Promise<number> {
    if (table === 'processed_messages') {
      return Promise.resolve(deleteOldest(this.tables.processed, before, limit).length);
    }
    if (table === 'turn_failures') {
      return Promise.resolve(deleteOldest(this.tables.failures, before, limit).length);
    }
    const gone = deleteOldest(this.tables.turnLog, before, limit);
    // The idempotency records whose responses were in those rows go with them.
    for (const { conversation_key, version } of gone) {
      const records = this.tables.processed.get(conversation_key);
      for (const [messageId, record] of records ?? []) {
        if (record.version === version) records?.delete(messageId);
      }
    }
    return Promise.resolve(gone.length);
  }

  deleteConversation(conversationKey: string): Promise<void> {
    this.tables.sessions.delete(conversationKey);
    this.tables.checkpoints.delete(conversationKey);
    this.tables.turnLog.delete(conversationKey);
    this.tables.processed.delete(conversationKey);
    this.tables.failures.delete(conversationKey);
    return Promise.resolve();
  }

  private versionsOf(conversationKey: string): CheckpointRow[] {
    return [...(this.tables.checkpoints.get(conversationKey)?.values() ?? [])].sort(
      (a, b) => b.version - a.version,
    );
  }

  private processedRow(conversationKey: string, messageId: string): StoredResponse | null {
    const record = this.tables.processed.get(conversationKey)?.get(messageId);
    if (!record) return null;
    const response =
      record.version === null
        ? record.response
        : (this.tables.turnLog.get(conversationKey)?.get(record.version)?.response ?? null);
    return response ? { response, fingerprint: record.fingerprint } : null;
  }
}

function leaseFree(session: SessionRow, request: LeaseRequest, now: Date): boolean {
  const owner = session.lease_owner;
  return (
    owner === null ||
    (session.lease_expires_at !== null && session.lease_expires_at < now) ||
    owner === request.token ||
    (request.reclaimPrefix !== undefined && owner.startsWith(request.reclaimPrefix))
  );
}

/** Newer first, then the greater key first (the admin list's order); negative when `a` sorts after. */
function compareRecency(a: SessionRow, updatedAt: number, conversationKey: string): number {
  const byTime = a.updated_at.getTime() - updatedAt;
  if (byTime !== 0) return byTime;
  return a.conversation_key < conversationKey ? -1 : a.conversation_key > conversationKey ? 1 : 0;
}

/** Deletes up to `limit` rows created before `before`, oldest first; returns them. */
function deleteOldest<K, V extends { created_at: Date }>(
  table: Map<string, Map<K, V>>,
  before: Date,
  limit: number,
): V[] {
  const expired = [...table.values()]
    .flatMap((rows) => [...rows.entries()].map(([id, row]) => ({ rows, id, row })))
    .filter(({ row }) => row.created_at < before)
    .sort((a, b) => a.row.created_at.getTime() - b.row.created_at.getTime())
    .slice(0, limit);
  for (const { rows, id } of expired) rows.delete(id);
  return expired.map(({ row }) => row);
}

function rowsOf<K, V>(table: Map<string, Map<K, V>>, conversationKey: string): Map<K, V> {
  let rows = table.get(conversationKey);
  if (!rows) {
    rows = new Map();
    table.set(conversationKey, rows);
  }
  return rows;
}

/** What a jsonb column gives back: a copy, with the characters jsonb cannot hold replaced as jsonbText does. */
function asJsonb<T>(value: T): T {
  return JSON.parse(jsonbText(value)) as T;
}
