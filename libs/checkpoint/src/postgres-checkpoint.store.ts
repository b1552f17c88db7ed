import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { DatabaseService, runOn } from '@agent/database';
import { jsonbText } from './canonical-json';
import { CheckpointEntity, SessionEntity, SessionEventView } from './checkpoint.entities';
import { CheckpointFencingError } from './checkpoint.errors';
import {
  COMMIT,
  DELETE_CONVERSATION,
  EXPIRE,
  FAILED_RELEASE,
  LATEST_VERSIONS,
  LEASE,
  PROCESSED_MESSAGE,
  RELEASE_LEASE,
  RENEW_LEASE,
  VERSION,
} from './checkpoint.statements';
import { CheckpointStore } from './checkpoint.store';
import { decodeSessionCursor, encodeSessionCursor } from './session-cursor';
import { turnLogEvents } from './turn-log-events';
import type {
  CheckpointRow,
  CheckpointSummary,
  CheckpointWrite,
  ConversationIdentity,
  FailedRun,
  LeaseAttempt,
  LeaseRequest,
  RetainedTable,
  SessionListFilter,
  SessionRow,
  StoredEventRow,
  StoredResponse,
  TurnCommit,
} from './checkpoint.types';

/**
 * Postgres adapter of the conversation store (the same SQL serves a real server and embedded PGlite). The admin
 * reads go through repositories; everything else runs the typed statements of its catalogue (checkpoint.statements).
 */
@Injectable()
export class PostgresCheckpointStore extends CheckpointStore {
  constructor(
    private readonly db: DatabaseService,
    @InjectRepository(SessionEntity) private readonly sessions: Repository<SessionEntity>,
    @InjectRepository(CheckpointEntity) private readonly checkpoints: Repository<CheckpointEntity>,
    @InjectRepository(SessionEventView) private readonly events: Repository<SessionEventView>,
  ) {
    super();
  }

  async latestVersions(
    conversationKey: string,
    limit: number,
    beforeVersion?: number,
  ): Promise<CheckpointRow[]> {
    return this.db.run(LATEST_VERSIONS, [conversationKey, limit, beforeVersion ?? null]);
  }

  async getVersion(conversationKey: string, version: number): Promise<CheckpointRow | null> {
    const rows = await this.db.run(VERSION, [conversationKey, version]);
    return rows[0] ?? null;
  }

  async listVersions(conversationKey: string): Promise<CheckpointSummary[]> {
    const rows = await this.checkpoints.find({
      select: [
        'conversation_key',
        'version',
        'parent_version',
        'format',
        'checksum',
        'size_bytes',
        'created_at',
      ],
      where: { conversation_key: conversationKey },
      order: { version: 'DESC' },
    });
    return rows.map(
      ({ conversation_key, version, parent_version, format, checksum, size_bytes, created_at }) => ({
        conversation_key,
        version,
        parent_version,
        format,
        checksum,
        size_bytes,
        created_at,
      }),
    );
  }

  async acquireLease(identity: ConversationIdentity, request: LeaseRequest): Promise<LeaseAttempt> {
    const rows = await this.db.run(LEASE, [
      identity.conversation_key,
      identity.tenant_id,
      identity.session_id,
      identity.agent_id,
      identity.user_id ?? null,
      identity.channel ?? null,
      request.token,
      String(request.leaseMs),
      request.reclaimPrefix ?? null,
      request.messageId ?? null,
    ]);
    const row = rows[0];
    if (row.replay_response !== null) {
      return {
        replay: { response: row.replay_response, fingerprint: row.replay_fingerprint },
        session: null,
        head: null,
      };
    }
    if (row.conversation_key === null) return { replay: null, session: null, head: null };
    const {
      seen_head,
      replay_response: _response,
      replay_fingerprint: _fingerprint,
      cp_version,
      cp_parent_version,
      cp_state,
      cp_format,
      cp_checksum,
      cp_size_bytes,
      cp_created_at,
      ...session
    } = row;
    const head =
      cp_version === null || cp_state === null || cp_format === null || cp_checksum === null
        ? null
        : {
            conversation_key: session.conversation_key,
            version: cp_version,
            parent_version: cp_parent_version,
            state_text: cp_state,
            format: cp_format,
            checksum: cp_checksum,
            size_bytes: cp_size_bytes ?? 0,
            created_at: cp_created_at ?? new Date(),
          };
    if ((seen_head ?? 0) !== session.head_version) {
      // A commit landed between the statement's snapshot and the row its upsert locked: the message lookup and
      // the head read saw the state before it. Read both again now that the lease is held.
      const replay = request.messageId
        ? await this.findProcessedMessage(session.conversation_key, request.messageId)
        : null;
      if (replay) {
        await this.releaseLease(session.conversation_key, request.token);
        return { replay, session: null, head: null };
      }
      return {
        replay: null,
        session,
        head: await this.getVersion(session.conversation_key, session.head_version),
      };
    }
    return { replay: null, session, head };
  }

  async renewLease(conversationKey: string, token: string, leaseMs: number): Promise<boolean> {
    return (await this.db.count(RENEW_LEASE, [conversationKey, token, String(leaseMs)])) > 0;
  }

  async releaseFailed(conversationKey: string, token: string, run: FailedRun): Promise<boolean> {
    const rows = await this.db.run(FAILED_RELEASE, [
      conversationKey,
      token,
      run.turn,
      jsonbText(run.events.map(({ name, payload }) => ({ name, payload }))),
    ]);
    return rows[0]?.recorded === 1;
  }

  async releaseLease(conversationKey: string, token: string): Promise<void> {
    await this.db.count(RELEASE_LEASE, [conversationKey, token]);
  }

  async commitTurn(commit: TurnCommit, write: CheckpointWrite): Promise<number> {
    const key = commit.identity.conversation_key;
    const version = write.expectedHead + 1;
    const rows = await this.db.run(COMMIT, [
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
      commit.parentVersion,
      write.serializedState,
      write.checksum,
      Buffer.byteLength(write.serializedState),
      commit.identity.tenant_id,
      commit.identity.agent_id,
      commit.summary ? jsonbText(commit.summary) : null,
      jsonbText(turnLogEvents(commit)),
      commit.idempotency?.message_id ?? null,
      commit.idempotency ? jsonbText(commit.idempotency.response) : null,
      commit.idempotency?.fingerprint ?? null,
      write.keep,
      commit.firstTextMs ?? null,
    ]);
    if (rows[0]?.committed !== 1) throw new CheckpointFencingError(key, write.expectedHead);
    return version;
  }

  async findProcessedMessage(conversationKey: string, messageId: string): Promise<StoredResponse | null> {
    const rows = await this.db.run(PROCESSED_MESSAGE, [conversationKey, messageId]);
    return rows[0] ?? null;
  }

  getSession(conversationKey: string): Promise<SessionRow | null> {
    return this.sessions.findOneBy({ conversation_key: conversationKey });
  }

  async listSessions(
    filter: SessionListFilter,
  ): Promise<{ items: SessionRow[]; next_cursor: string | null }> {
    const query = this.sessions.createQueryBuilder('s').where('s.turn_count > 0');
    if (filter.tenant_id) query.andWhere('s.tenant_id = :tenant', { tenant: filter.tenant_id });
    if (filter.agent_id) query.andWhere('s.agent_id = :agent', { agent: filter.agent_id });
    if (filter.status) query.andWhere('s.status = :status', { status: filter.status });
    if (filter.updated_after) {
      query.andWhere('s.updated_at >= CAST(:after AS timestamptz)', { after: filter.updated_after });
    }
    if (filter.updated_before) {
      query.andWhere('s.updated_at < CAST(:before AS timestamptz)', { before: filter.updated_before });
    }
    if (filter.cursor) {
      const cursor = decodeSessionCursor(filter.cursor);
      query.andWhere('(s.updated_at, s.conversation_key) < (CAST(:cursorAt AS timestamptz), :cursorKey)', {
        cursorAt: cursor.updated_at,
        cursorKey: cursor.conversation_key,
      });
    }
    // The cursor needs updated_at to the microsecond, which a JavaScript Date cannot hold.
    const { entities: rows, raw } = await query
      .addSelect(`to_char(s.updated_at AT TIME ZONE 'UTC', :instantFormat)`, 'cursor_at')
      .setParameter('instantFormat', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
      .orderBy('s.updated_at', 'DESC')
      .addOrderBy('s.conversation_key', 'DESC')
      .limit(filter.limit + 1)
      .getRawAndEntities<{ cursor_at: string }>();
    const items = rows.slice(0, filter.limit);
    const last = items[items.length - 1];
    const lastAt = raw[items.length - 1]?.cursor_at;
    const next_cursor =
      rows.length > filter.limit && last && lastAt
        ? encodeSessionCursor(lastAt, last.conversation_key)
        : null;
    return { items, next_cursor };
  }

  async listEvents(conversationKey: string): Promise<StoredEventRow[]> {
    // The session_events view expands each turn log row into its events, in commit order.
    const rows = await this.events.find({
      where: { conversation_key: conversationKey },
      order: { id: 'ASC' },
    });
    return rows.map(({ id, turn, seq, name, payload, created_at, first_text_ms }) => ({
      id,
      turn,
      seq,
      name,
      payload,
      created_at,
      first_text_ms,
    }));
  }

  async deleteExpired(table: RetainedTable, before: Date, limit: number): Promise<number> {
    // The one statement that spans conversations: rows of every one age out (ADR 0010). Through TypeORM, without
    // the turn path's time limit, as a background sweep.
    const rows = await runOn(this.db.dataSource, EXPIRE[table], [before.toISOString(), limit]);
    return rows[0].deleted;
  }

  async deleteConversation(conversationKey: string): Promise<void> {
    await this.db.count(DELETE_CONVERSATION, [conversationKey]);
  }
}
