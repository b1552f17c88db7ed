import { POSITIONS_PER_VERSION } from '@agent/contracts';
import { statement } from '@agent/database';
import type {
  CheckpointRow,
  RetainedTable,
  SessionRow,
  SessionStatus,
  StoredResponse,
} from './checkpoint.types';

/**
 * The conversation store's SQL (PostgresCheckpointStore), each statement with the types of its parameters and
 * rows. The turn path's statements are named, so each connection plans them once (ADR 0003); every one names one
 * conversation, except the retention sweep's (ADR 0010).
 */

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
export const LEASE = statement<
  [
    conversationKey: string,
    tenantId: string,
    sessionId: string,
    agentId: string,
    userId: string | null,
    channel: string | null,
    token: string,
    leaseMs: string,
    reclaimPrefix: string | null,
    messageId: string | null,
  ],
  LeaseAttemptRow
>(
  'checkpoint_lease',
  `WITH async_commit AS (SELECT set_config('synchronous_commit', 'off', true)),
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
);

/**
 * The turn's commit, one statement so one round trip and one commit: the fenced session update (which also releases
 * the lease) feeds every insert and the compaction of the conversation's old versions, so a fenced commit writes
 * nothing and a failing insert undoes the update. Every part names the one conversation (ADR 0010).
 */
export const COMMIT = statement<
  [
    conversationKey: string,
    expectedHead: number,
    version: number,
    turn: number,
    status: SessionStatus,
    activeAgent: string | null,
    nextState: string | null,
    route: string | null,
    intent: string | null,
    userId: string | null,
    token: string,
    parentVersion: number | null,
    state: string,
    checksum: string,
    sizeBytes: number,
    tenantId: string,
    agentId: string,
    summary: string | null,
    events: string,
    messageId: string | null,
    response: string | null,
    fingerprint: string | null,
    keep: number,
    firstTextMs: number | null,
  ],
  { committed: number }
>(
  'checkpoint_commit',
  `WITH fenced AS (
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
         INSERT INTO turn_log (conversation_key, version, turn, tenant_id, agent_id, summary, events, response,
                               first_text_ms)
         SELECT conversation_key, $3::integer, $4::integer, $16::text, $17::text, $18::jsonb, $19::text, $21::text,
                $24::integer
           FROM fenced
       ), processed AS (
         INSERT INTO processed_messages (conversation_key, message_id, turn, version, fingerprint)
         SELECT conversation_key, $20::text, $4::integer, $3::integer, $22::text FROM fenced WHERE $20::text IS NOT NULL
       ), compacted AS (
         DELETE FROM checkpoints c USING fenced f
          WHERE c.conversation_key = $1 AND f.conversation_key = $1 AND c.version <= $3::integer - $23::integer
       )
       SELECT count(*)::integer AS committed FROM fenced`,
);

/**
 * A failed run gives its lease back and is recorded after the head it ran on, in one statement: fenced on the lease
 * like a commit, so its record lies between the commits around it and a holder that lost the lease records nothing.
 * A head that already has as many failed runs as a version has positions records no more.
 */
export const FAILED_RELEASE = statement<
  [conversationKey: string, token: string, turn: number, events: string],
  { recorded: number }
>(
  'checkpoint_failed_release',
  `WITH released AS (
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
);

const CHECKPOINT_COLUMNS = `conversation_key, version, parent_version, state AS state_text, format, checksum, size_bytes,
  created_at`;

/** A lease attempt's row: the replay, the session columns, and the head checkpoint's columns prefixed `cp_`. */
export interface LeaseAttemptRow extends SessionRow {
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

/** Newest first, below `beforeVersion` when given; the stored text unparsed for the integrity check. */
export const LATEST_VERSIONS = statement<
  [conversationKey: string, limit: number, beforeVersion: number | null],
  CheckpointRow
>(
  'checkpoint_latest_versions',
  `SELECT ${CHECKPOINT_COLUMNS}
     FROM checkpoints WHERE conversation_key = $1 AND ($3::integer IS NULL OR version < $3)
    ORDER BY version DESC LIMIT $2`,
);

/** One version, the same row shape as LATEST_VERSIONS (read on the turn path after a raced lease or commit). */
export const VERSION = statement<[conversationKey: string, version: number], CheckpointRow>(
  'checkpoint_version',
  `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints WHERE conversation_key = $1 AND version = $2`,
);

/** The replay lookup alone: read on the turn path when a commit raced the lease statement. */
export const PROCESSED_MESSAGE = statement<[conversationKey: string, messageId: string], StoredResponse>(
  'checkpoint_processed_message',
  replayLookup('$1', '$2'),
);

/** The expiry is computed by the database clock, as the lease statement compares it. */
export const RENEW_LEASE = statement<[conversationKey: string, token: string, leaseMs: string]>(
  'checkpoint_renew_lease',
  `UPDATE sessions SET lease_expires_at = now() + ($3::text || ' milliseconds')::interval
    WHERE conversation_key = $1 AND lease_owner = $2`,
);

/** Conditional on the holder. */
export const RELEASE_LEASE = statement<[conversationKey: string, token: string]>(
  'checkpoint_release_lease',
  `UPDATE sessions SET lease_owner = NULL, lease_expires_at = NULL WHERE conversation_key = $1 AND lease_owner = $2`,
);

/** One statement, so all or nothing without a transaction block. */
export const DELETE_CONVERSATION = statement<[conversationKey: string]>(
  'checkpoint_delete_conversation',
  `WITH checkpoints_gone AS (DELETE FROM checkpoints WHERE conversation_key = $1),
        turn_log_gone AS (DELETE FROM turn_log WHERE conversation_key = $1),
        failures_gone AS (DELETE FROM turn_failures WHERE conversation_key = $1),
        processed_gone AS (DELETE FROM processed_messages WHERE conversation_key = $1)
   DELETE FROM sessions WHERE conversation_key = $1`,
);

/**
 * A batch of `table`'s rows created before $1, picked by the created_at index with SKIP LOCKED, so replicas sweep
 * side by side. The idempotency records of deleted turn log rows go with them: their responses were in those rows.
 */
function expiredSweep(table: RetainedTable, key: readonly string[]) {
  return statement<[before: string, limit: number], { deleted: number }>(
    `checkpoint_expire_${table}`,
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
  );
}

/** The retention sweep of each retained table (keyed after `conversation_key` as the table is). */
export const EXPIRE: Record<RetainedTable, ReturnType<typeof expiredSweep>> = {
  turn_log: expiredSweep('turn_log', ['version']),
  processed_messages: expiredSweep('processed_messages', ['message_id']),
  turn_failures: expiredSweep('turn_failures', ['version', 'attempt']),
};
