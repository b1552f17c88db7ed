import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { POSITIONS_PER_VERSION } from '@agent/contracts';
import { DatabaseService, NamedStatement } from '@agent/database';
import { jsonbText } from './canonical-json';
import { CheckpointEntity, SessionEntity, SessionEventView } from './checkpoint.entities';
import { CheckpointFencingError } from './checkpoint.errors';
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

const SESSION_COLUMNS = `conversation_key, tenant_id, session_id, agent_id, user_id, channel, status, active_agent, next_state,
  last_route, last_intent, turn_count, head_version, lease_owner, lease_expires_at, created_at, updated_at`;

/**
 * The stored response of a processed message and the fingerprint of its request: the response is in the turn log
 * row the record names (records of earlier releases hold it themselves). A record whose row is gone replays
 * nothing (the retention sweep deletes both together).
 */
const replayLookup = (conversationKey: string, messageId: string) => `
  SELECT COALESCE(t.response::jsonb, p.response) AS response, p.fingerprint
    FROM processed_messages p
    LEFT JOIN turn_log t ON t.conversation_key = p.conversation_key AND t.version = p.version
   WHERE p.conversation_key = ${conversationKey} AND p.message_id = ${messageId}
     AND (t.response IS NOT NULL OR p.response IS NOT NULL)`;

/**
 * The turn's first statement: the replay lookup, the lease upsert and the head read in one round trip. The lease
 * upsert runs only when the message was not processed; the head is read by the version the upsert returns (the
 * statement's snapshot cannot see a checkpoint newer than that head).
 *
 * Its commit does not wait for a WAL flush (`synchronous_commit` off for this transaction only), so a turn waits
 * for one flush, its own commit's. A lease lost to a server crash before the WAL writer flushed it is harmless:
 * the commit statement is fenced on the lease, so the turn that held it commits nothing and is refused like a
 * turn whose lease lapsed (ADR 0004); and a commit that is flushed flushes every earlier record, the lease included.
 */
const LEASE_STATEMENT: NamedStatement = {
  name: 'checkpoint_lease',
  text: `WITH async_commit AS (SELECT set_config('synchronous_commit', 'off', true)),
       replay AS (${replayLookup('$1', '$10')}), lease AS (
         INSERT INTO sessions (conversation_key, tenant_id, session_id, agent_id, user_id, channel, lease_owner, lease_expires_at)
         SELECT $1, $2, $3, $4, $5, $6, $7, now() + ($8::text || ' milliseconds')::interval
          WHERE NOT EXISTS (SELECT 1 FROM replay)
         ON CONFLICT (conversation_key) DO UPDATE
           SET lease_owner = EXCLUDED.lease_owner, lease_expires_at = EXCLUDED.lease_expires_at
           WHERE sessions.lease_owner IS NULL OR sessions.lease_expires_at < now()
              OR sessions.lease_owner = EXCLUDED.lease_owner
              OR ($9::text IS NOT NULL AND left(sessions.lease_owner, length($9::text)) = $9::text)
         RETURNING ${SESSION_COLUMNS}
       )
       SELECT (SELECT response FROM replay) AS replay_response, (SELECT fingerprint FROM replay) AS replay_fingerprint,
              (SELECT head_version FROM sessions WHERE conversation_key = $1) AS seen_head, l.*, c.version AS cp_version, c.parent_version AS cp_parent_version, c.state AS cp_state,
              c.format AS cp_format, c.checksum AS cp_checksum, c.size_bytes AS cp_size_bytes,
              c.created_at AS cp_created_at
         FROM async_commit
         LEFT JOIN lease l ON true
         LEFT JOIN checkpoints c ON c.conversation_key = $1 AND c.version = l.head_version`,
};

/**
 * The turn's commit, one statement so one round trip and one commit: the fenced session update (which also releases
 * the lease) feeds every insert and the compaction of the conversation's old versions, so a fenced commit writes
 * nothing and a failing insert undoes the update. Every part names the one conversation (ADR 0010).
 */
const COMMIT_STATEMENT: NamedStatement = {
  name: 'checkpoint_commit',
  text: `WITH fenced AS (
         UPDATE sessions
            SET head_version = $3, turn_count = $4, status = $5, active_agent = $6, next_state = $7,
                last_route = $8, last_intent = $9, user_id = COALESCE($10, user_id), updated_at = now(),
                lease_owner = NULL, lease_expires_at = NULL
          WHERE conversation_key = $1 AND head_version = $2 AND lease_owner = $11
         RETURNING conversation_key
       ), checkpoint AS (
         INSERT INTO checkpoints (conversation_key, version, parent_version, state, format, checksum, size_bytes)
         SELECT conversation_key, $3::integer, $12::integer, $13::text, 2, $14::text, $15::integer FROM fenced
       ), turn_row AS (
         INSERT INTO turn_log (conversation_key, version, turn, tenant_id, agent_id, summary, events, response)
         SELECT conversation_key, $3::integer, $4::integer, $16::text, $17::text, $18::jsonb, $19::text, $21::text
           FROM fenced
       ), processed AS (
         INSERT INTO processed_messages (conversation_key, message_id, turn, version, fingerprint)
         SELECT conversation_key, $20::text, $4::integer, $3::integer, $22::text FROM fenced WHERE $20::text IS NOT NULL
       ), compacted AS (
         DELETE FROM checkpoints c USING fenced f
          WHERE c.conversation_key = $1 AND f.conversation_key = $1 AND c.version <= $3::integer - $23::integer
       )
       SELECT count(*)::integer AS committed FROM fenced`,
};

/**
 * A failed run gives its lease back and is recorded after the head it ran on, in one statement: fenced on the lease
 * like a commit, so its record lies between the commits around it and a holder that lost the lease records nothing.
 * A head that already has as many failed runs as a version has positions records no more.
 */
const FAILED_RELEASE_STATEMENT: NamedStatement = {
  name: 'checkpoint_failed_release',
  text: `WITH released AS (
         UPDATE sessions SET lease_owner = NULL, lease_expires_at = NULL
          WHERE conversation_key = $1 AND lease_owner = $2
         RETURNING conversation_key, head_version, tenant_id, agent_id
       ), numbered AS (
         SELECT r.*, COALESCE((SELECT max(f.attempt) FROM turn_failures f
                                WHERE f.conversation_key = $1 AND f.version = r.head_version), 0) + 1 AS attempt
           FROM released r
       ), recorded AS (
         INSERT INTO turn_failures (conversation_key, version, attempt, turn, tenant_id, agent_id, events)
         SELECT conversation_key, head_version, attempt, $3::integer, tenant_id, agent_id, $4::text
           FROM numbered WHERE attempt < ${POSITIONS_PER_VERSION}
         RETURNING attempt
       )
       SELECT count(*)::integer AS recorded FROM recorded`,
};

/** The key of each retained table after `conversation_key`. */
const RETAINED_KEYS: Record<RetainedTable, string[]> = {
  turn_log: ['version'],
  processed_messages: ['message_id'],
  turn_failures: ['version', 'attempt'],
};

const CHECKPOINT_COLUMNS = `conversation_key, version, parent_version, state AS state_text, format, checksum, size_bytes,
  created_at`;

/** A lease attempt's row: the replay, the session columns, and the head checkpoint's columns prefixed `cp_`. */
interface LeaseAttemptRow extends SessionRow {
  /** The session's head as the statement's snapshot saw it (null: no row yet). */
  seen_head: number | null;
  replay_response: Record<string, unknown> | null;
  replay_fingerprint: string | null;
  cp_version: number | null;
  cp_parent_version: number | null;
  cp_state: string | null;
  cp_format: 1 | 2 | null;
  cp_checksum: string | null;
  cp_size_bytes: number | null;
  cp_created_at: Date | null;
}

/**
 * Postgres adapter of the conversation store (the same SQL serves a real server and embedded PGlite). The admin
 * reads go through repositories; the turn's statements are raw SQL, each saying why.
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

  private get ds() {
    return this.db.dataSource;
  }

  async latestVersions(
    conversationKey: string,
    limit: number,
    beforeVersion?: number,
  ): Promise<CheckpointRow[]> {
    // Raw: the load path, and `state AS state_text` keeps the stored text unparsed for the integrity check.
    const rows: CheckpointRow[] = await this.ds.query(
      `SELECT ${CHECKPOINT_COLUMNS}
         FROM checkpoints WHERE conversation_key = $1 AND ($3::integer IS NULL OR version < $3)
        ORDER BY version DESC LIMIT $2`,
      [conversationKey, limit, beforeVersion ?? null],
    );
    return rows;
  }

  async getVersion(conversationKey: string, version: number): Promise<CheckpointRow | null> {
    // Raw: the same row shape as latestVersions (read on the turn path after a raced lease or commit).
    const rows: CheckpointRow[] = await this.ds.query(
      `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints WHERE conversation_key = $1 AND version = $2`,
      [conversationKey, version],
    );
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
    // Raw and named: the hot path's first statement (LEASE_STATEMENT).
    const rows = await this.db.run<LeaseAttemptRow>(LEASE_STATEMENT, [
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
    // Raw: the expiry is computed by the database clock, as the lease statement compares it.
    const result: [unknown[], number] = await this.ds.query(
      `UPDATE sessions SET lease_expires_at = now() + ($3::text || ' milliseconds')::interval
        WHERE conversation_key = $1 AND lease_owner = $2`,
      [conversationKey, token, String(leaseMs)],
    );
    return result[1] > 0;
  }

  async releaseFailed(conversationKey: string, token: string, run: FailedRun): Promise<boolean> {
    // Raw and named: the turn path's release when the graph failed (FAILED_RELEASE_STATEMENT).
    const rows = await this.db.run<{ recorded: number }>(FAILED_RELEASE_STATEMENT, [
      conversationKey,
      token,
      run.turn,
      jsonbText(run.events.map(({ name, payload }) => ({ name, payload }))),
    ]);
    return rows[0]?.recorded === 1;
  }

  async releaseLease(conversationKey: string, token: string): Promise<void> {
    // Raw: conditional on the holder, on the turn path.
    await this.ds.query(
      `UPDATE sessions SET lease_owner = NULL, lease_expires_at = NULL WHERE conversation_key = $1 AND lease_owner = $2`,
      [conversationKey, token],
    );
  }

  async commitTurn(commit: TurnCommit, write: CheckpointWrite): Promise<number> {
    const key = commit.identity.conversation_key;
    const version = write.expectedHead + 1;
    // Raw and named: one statement, so one round trip and one commit (COMMIT_STATEMENT).
    const rows = await this.db.run<{ committed: number }>(COMMIT_STATEMENT, [
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
    ]);
    if (rows[0]?.committed !== 1) throw new CheckpointFencingError(key, write.expectedHead);
    return version;
  }

  async findProcessedMessage(conversationKey: string, messageId: string): Promise<StoredResponse | null> {
    // Raw: read on the turn path when a commit raced the lease statement; two columns of one row.
    const rows: StoredResponse[] = await this.ds.query(replayLookup('$1', '$2'), [
      conversationKey,
      messageId,
    ]);
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
    return rows.map(({ id, turn, seq, name, payload, created_at }) => ({
      id,
      turn,
      seq,
      name,
      payload,
      created_at,
    }));
  }

  async deleteExpired(table: RetainedTable, before: Date, limit: number): Promise<number> {
    const key = RETAINED_KEYS[table];
    // Raw: a batch picked by the created_at index with SKIP LOCKED, so replicas sweep side by side. The
    // idempotency records of deleted turn log rows go with them: their responses were in those rows. The one
    // statement of the turn path that spans conversations: rows of every one age out (ADR 0010).
    const rows: { deleted: number }[] = await this.ds.query(
      `WITH gone AS (
         DELETE FROM ${table} t USING (
           SELECT conversation_key, ${key.join(', ')} FROM ${table} WHERE created_at < $1
            ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED) expired
          WHERE t.conversation_key = expired.conversation_key
            AND ${key.map((column) => `t.${column} = expired.${column}`).join(' AND ')}
         RETURNING t.conversation_key, ${key.map((column) => `t.${column}`).join(', ')}
       )${
         table === 'turn_log'
           ? `, unreplayable AS (
         DELETE FROM processed_messages p USING gone
          WHERE p.conversation_key = gone.conversation_key AND p.version = gone.version
       )`
           : ''
       }
       SELECT count(*)::integer AS deleted FROM gone`,
      [before.toISOString(), limit],
    );
    return rows[0].deleted;
  }

  async deleteConversation(conversationKey: string): Promise<void> {
    // Raw, and one statement, so all or nothing without a transaction block.
    await this.ds.query(
      `WITH checkpoints_gone AS (DELETE FROM checkpoints WHERE conversation_key = $1),
            turn_log_gone AS (DELETE FROM turn_log WHERE conversation_key = $1),
            failures_gone AS (DELETE FROM turn_failures WHERE conversation_key = $1),
            processed_gone AS (DELETE FROM processed_messages WHERE conversation_key = $1)
       DELETE FROM sessions WHERE conversation_key = $1`,
      [conversationKey],
    );
  }
}
