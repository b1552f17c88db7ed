import { Injectable } from '@nestjs/common';
import { EntityManager, QueryRunnerProviderAlreadyReleasedError } from 'typeorm';
import { DatabaseService, DatabaseUnavailableError } from '@agent/database';
import { jsonbText } from './canonical-json';
import { CheckpointFencingError } from './checkpoint.errors';
import { CheckpointStore } from './checkpoint.store';
import type {
  CheckpointRow,
  CheckpointSummary,
  CheckpointWrite,
  ConversationIdentity,
  SessionListFilter,
  SessionRow,
  StoredEventRow,
  TurnCommit,
} from './checkpoint.types';

const SESSION_COLUMNS = `conversation_key, tenant_id, session_id, agent_id, user_id, channel, status, active_agent, next_state,
  last_route, last_intent, turn_count, head_version, lease_owner, lease_expires_at, created_at, updated_at`;

/** Postgres adapter of the conversation store (the same SQL serves a real server and embedded PGlite). */
@Injectable()
export class PostgresCheckpointStore extends CheckpointStore {
  constructor(private readonly db: DatabaseService) {
    super();
  }

  private get ds() {
    return this.db.dataSource;
  }

  /**
   * A transaction whose connection died between two statements (pg_terminate_backend, network cut) makes
   * TypeORM release the query runner on the client's error event; the next statement then throws
   * QueryRunnerProviderAlreadyReleasedError. The server rolled the transaction back, so it is an outage, not a bug.
   */
  private async transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    try {
      return await this.db.transaction(work);
    } catch (error) {
      if (error instanceof QueryRunnerProviderAlreadyReleasedError) throw new DatabaseUnavailableError(error);
      throw error;
    }
  }

  async latestVersions(
    conversationKey: string,
    limit: number,
    beforeVersion?: number,
  ): Promise<CheckpointRow[]> {
    const rows: CheckpointRow[] = await this.ds.query(
      `SELECT conversation_key, version, parent_version, state, checksum, size_bytes, created_at
         FROM checkpoints WHERE conversation_key = $1 AND ($3::integer IS NULL OR version < $3)
        ORDER BY version DESC LIMIT $2`,
      [conversationKey, limit, beforeVersion ?? null],
    );
    return rows;
  }

  async getVersion(conversationKey: string, version: number): Promise<CheckpointRow | null> {
    const rows: CheckpointRow[] = await this.ds.query(
      `SELECT conversation_key, version, parent_version, state, checksum, size_bytes, created_at
         FROM checkpoints WHERE conversation_key = $1 AND version = $2`,
      [conversationKey, version],
    );
    return rows[0] ?? null;
  }

  async listVersions(conversationKey: string): Promise<CheckpointSummary[]> {
    return this.ds.query(
      `SELECT conversation_key, version, parent_version, checksum, size_bytes, created_at
         FROM checkpoints WHERE conversation_key = $1 ORDER BY version DESC`,
      [conversationKey],
    );
  }

  async tryAcquireLease(
    identity: ConversationIdentity,
    token: string,
    leaseMs: number,
    reclaimPrefix?: string,
  ): Promise<SessionRow | null> {
    const rows: SessionRow[] = await this.ds.query(
      `INSERT INTO sessions (conversation_key, tenant_id, session_id, agent_id, user_id, channel, lease_owner, lease_expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, now() + ($8::text || ' milliseconds')::interval)
       ON CONFLICT (conversation_key) DO UPDATE
         SET lease_owner = EXCLUDED.lease_owner, lease_expires_at = EXCLUDED.lease_expires_at
         WHERE sessions.lease_owner IS NULL OR sessions.lease_expires_at < now()
            OR sessions.lease_owner = EXCLUDED.lease_owner
            OR ($9::text IS NOT NULL AND left(sessions.lease_owner, length($9::text)) = $9::text)
       RETURNING ${SESSION_COLUMNS}`,
      [
        identity.conversation_key,
        identity.tenant_id,
        identity.session_id,
        identity.agent_id,
        identity.user_id ?? null,
        identity.channel ?? null,
        token,
        String(leaseMs),
        reclaimPrefix ?? null,
      ],
    );
    return rows[0] ?? null;
  }

  async renewLease(conversationKey: string, token: string, leaseMs: number): Promise<boolean> {
    const result: [unknown[], number] = await this.ds.query(
      `UPDATE sessions SET lease_expires_at = now() + ($3::text || ' milliseconds')::interval
        WHERE conversation_key = $1 AND lease_owner = $2`,
      [conversationKey, token, String(leaseMs)],
    );
    return result[1] > 0;
  }

  async releaseLease(conversationKey: string, token: string): Promise<void> {
    await this.ds.query(
      `UPDATE sessions SET lease_owner = NULL, lease_expires_at = NULL WHERE conversation_key = $1 AND lease_owner = $2`,
      [conversationKey, token],
    );
  }

  async commitTurn(commit: TurnCommit, write: CheckpointWrite): Promise<number> {
    const key = commit.identity.conversation_key;
    const version = write.expectedHead + 1;
    return this.transaction(async (manager) => {
      // Fencing first, so a fenced commit writes nothing: only the lease holder may extend the head it saw.
      const fenced: [unknown[], number] = await manager.query(
        `UPDATE sessions
            SET head_version = $3, turn_count = $4, status = $5, active_agent = $6, next_state = $7,
                last_route = $8, last_intent = $9, user_id = COALESCE($10, user_id), updated_at = now()
          WHERE conversation_key = $1 AND head_version = $2 AND lease_owner = $11`,
        [
          key,
          write.expectedHead,
          version,
          commit.turn,
          commit.status,
          commit.state.active_agent ?? null,
          commit.state.next_state ?? null,
          commit.state.route ?? null,
          commit.state.intent ?? null,
          commit.identity.user_id ?? null,
          commit.leaseToken,
        ],
      );
      if (fenced[1] !== 1) throw new CheckpointFencingError(key, write.expectedHead);
      await manager.query(
        `INSERT INTO checkpoints (conversation_key, version, parent_version, state, checksum, size_bytes)
         VALUES ($1, $2, $3, $4::jsonb, $5, $6)`,
        [
          key,
          version,
          commit.parentVersion,
          write.serializedState,
          write.checksum,
          Buffer.byteLength(write.serializedState),
        ],
      );
      await manager.query(
        `INSERT INTO turn_log (conversation_key, version, turn, tenant_id, agent_id, summary, nodes, events)
         VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8::jsonb)`,
        [
          key,
          version,
          commit.turn,
          commit.identity.tenant_id,
          commit.identity.agent_id,
          commit.summary ? jsonbText(commit.summary) : null,
          jsonbText(commit.nodes ?? []),
          jsonbText(commit.events.map((event) => ({ name: event.name, payload: event.payload }))),
        ],
      );
      if (commit.idempotency) {
        await manager.query(
          `INSERT INTO processed_messages (conversation_key, message_id, turn, response) VALUES ($1, $2, $3, $4::jsonb)`,
          [key, commit.idempotency.message_id, commit.turn, jsonbText(commit.idempotency.response)],
        );
      }
      return version;
    });
  }

  async compact(conversationKey: string, keep: number): Promise<number> {
    const result: [unknown[], number] = await this.ds.query(
      `DELETE FROM checkpoints WHERE conversation_key = $1 AND version <= (
         SELECT COALESCE(MAX(version), 0) - $2 FROM checkpoints WHERE conversation_key = $1)`,
      [conversationKey, keep],
    );
    return result[1];
  }

  async findProcessedMessage(
    conversationKey: string,
    messageId: string,
  ): Promise<Record<string, unknown> | null> {
    const rows: { response: Record<string, unknown> }[] = await this.ds.query(
      `SELECT response FROM processed_messages WHERE conversation_key = $1 AND message_id = $2`,
      [conversationKey, messageId],
    );
    return rows[0]?.response ?? null;
  }

  async getSession(conversationKey: string): Promise<SessionRow | null> {
    const rows: SessionRow[] = await this.ds.query(
      `SELECT ${SESSION_COLUMNS} FROM sessions WHERE conversation_key = $1`,
      [conversationKey],
    );
    return rows[0] ?? null;
  }

  async listSessions(
    filter: SessionListFilter,
  ): Promise<{ items: SessionRow[]; next_cursor: string | null }> {
    const where: string[] = ['turn_count > 0'];
    const params: unknown[] = [];
    const add = (sql: string, value: unknown) => {
      params.push(value);
      where.push(sql.replace('?', `$${params.length}`));
    };
    if (filter.tenant_id) add('tenant_id = ?', filter.tenant_id);
    if (filter.agent_id) add('agent_id = ?', filter.agent_id);
    if (filter.status) add('status = ?', filter.status);
    if (filter.updated_after) add('updated_at >= ?::timestamptz', filter.updated_after);
    if (filter.updated_before) add('updated_at < ?::timestamptz', filter.updated_before);
    if (filter.cursor) {
      const decoded = decodeCursor(filter.cursor);
      params.push(decoded.updated_at, decoded.conversation_key);
      where.push(`(updated_at, conversation_key) < ($${params.length - 1}::timestamptz, $${params.length})`);
    }
    params.push(filter.limit + 1);
    const rows: SessionRow[] = await this.ds.query(
      `SELECT ${SESSION_COLUMNS} FROM sessions WHERE ${where.join(' AND ')}
        ORDER BY updated_at DESC, conversation_key DESC LIMIT $${params.length}`,
      params,
    );
    const items = rows.slice(0, filter.limit);
    const last = items[items.length - 1];
    const next_cursor =
      rows.length > filter.limit && last
        ? encodeCursor(new Date(last.updated_at).toISOString(), last.conversation_key)
        : null;
    return { items, next_cursor };
  }

  async listEvents(conversationKey: string): Promise<StoredEventRow[]> {
    // The session_events view expands each turn log row into its events, in commit order.
    return this.ds.query(
      `SELECT id::text AS id, turn, seq, name, payload, created_at FROM session_events
        WHERE conversation_key = $1 ORDER BY id ASC`,
      [conversationKey],
    );
  }

  async deleteConversation(conversationKey: string): Promise<void> {
    await this.transaction(async (manager) => {
      for (const table of ['checkpoints', 'turn_log', 'processed_messages', 'sessions']) {
        await manager.query(`DELETE FROM ${table} WHERE conversation_key = $1`, [conversationKey]);
      }
    });
  }
}

export class InvalidCursorError extends Error {
  constructor() {
    super('cursor is not valid');
    this.name = 'InvalidCursorError';
  }
}

function encodeCursor(updatedAt: string, conversationKey: string): string {
  return Buffer.from(JSON.stringify([updatedAt, conversationKey])).toString('base64url');
}

function isCanonicalTimestamp(value: string): boolean {
  const time = Date.parse(value);
  return !Number.isNaN(time) && new Date(time).toISOString() === value;
}

function decodeCursor(cursor: string): { updated_at: string; conversation_key: string } {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(parsed) &&
      typeof parsed[0] === 'string' &&
      typeof parsed[1] === 'string' &&
      // Exactly what encodeCursor writes: anything else (a date Postgres reads differently, a NUL) is not ours.
      isCanonicalTimestamp(parsed[0]) &&
      !parsed[1].includes('\u0000')
    ) {
      return { updated_at: parsed[0], conversation_key: parsed[1] };
    }
  } catch {
    // fall through
  }
  throw new InvalidCursorError();
}
