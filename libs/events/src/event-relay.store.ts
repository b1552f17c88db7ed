import { Injectable } from '@nestjs/common';
import { POSITIONS_PER_VERSION, type StoredEvent } from '@agent/contracts';
import { DatabaseService, statement } from '@agent/database';

/**
 * A record of a conversation a destination has not delivered yet: a committed turn log row (`attempt` 0) or a
 * workflow run that failed on the head `version` (`attempt` 1…). Its position in the conversation is
 * `conversationPosition(version, attempt)`.
 */
export interface PendingRecord {
  conversation_key: string;
  version: number;
  attempt: number;
  tenant_id: string;
  agent_id: string;
  turn: number;
  /** As stored: a commit's payloads lack the envelope fields the row's columns hold (see `rowEnvelope`). */
  events: Pick<StoredEvent, 'name' | 'payload'>[];
}

/** A conversation this replica now relays to a destination: the next position to deliver, the last one written. */
export interface ClaimedConversation {
  conversation_key: string;
  next_position: number;
  last_position: number;
}

/** A conversation delivered up to `next_position` (excluded), and whether its claim is given up with it. */
export interface Acknowledgement {
  conversation_key: string;
  next_position: number;
  release: boolean;
}

/** How far a destination lags behind what conversations published. */
export interface RelayLag {
  commits: number;
  events: number;
  oldest: Date | null;
}

/** A claim this replica may take: free, lapsed, or its own. */
const CLAIMABLE = `(lease_owner IS NULL OR lease_expires_at < now() OR lease_owner = $2)`;

/**
 * The relay's statements, run on every pass (the acknowledgements once per group of conversations): named, so
 * each connection plans them once. Every one scans a destination's backlog or names its conversations: none
 * orders rows across conversations, so each shard of a distributed layout answers its part alone (ADR 0010).
 * Those that update end in a SELECT, so they return their rows however they are sent (named or not).
 */
const CLAIM_STATEMENT = statement<
  [destination: string, owner: string, leaseMs: number, limit: number],
  ClaimedConversation
>(
  'relay_claim',
  // Forgets the rows that have caught up (their next commit queues a new one), then claims the oldest queued ones.
  `WITH caught_up AS (
           DELETE FROM event_relay_backlog
            WHERE destination = $1 AND next_position > last_position
              AND (lease_owner IS NULL OR lease_expires_at < now())
         ), claimed AS (
           UPDATE event_relay_backlog b
              SET lease_owner = $2, lease_expires_at = now() + $3 * interval '1 millisecond'
             FROM (SELECT conversation_key FROM event_relay_backlog
                    WHERE destination = $1 AND next_position <= last_position AND ${CLAIMABLE}
                    ORDER BY queued_at LIMIT $4) queued
            WHERE b.destination = $1 AND b.conversation_key = queued.conversation_key
              AND (b.lease_owner IS NULL OR b.lease_expires_at < now() OR b.lease_owner = $2)
           RETURNING b.conversation_key, b.next_position::float8 AS next_position,
                     b.last_position::float8 AS last_position
         )
         SELECT * FROM claimed`,
);

/**
 * The records of the claimed conversations from their next positions, at most $4 per conversation, in order; a
 * destination of one tenant never reads another's (whatever the backlog says).
 */
const READ_STATEMENT = statement<
  [conversationKeys: string[], nextPositions: number[], tenant: string | null, perConversation: number],
  PendingRecord
>(
  'relay_read',
  // The envelope goes back in the relay, not through turn_log_events: that SQL function costs Postgres several
  // times the cast alone (0.7 against 0.1-0.15 ms per commit of a bench turn).
  `SELECT r.* FROM unnest($1::text[], $2::bigint[]) AS c(conversation_key, next_position)
         CROSS JOIN LATERAL (
           SELECT * FROM (
             SELECT t.conversation_key, t.version, 0 AS attempt, t.tenant_id, t.agent_id, t.turn,
                    t.events::jsonb AS events
               FROM turn_log t
              WHERE t.conversation_key = c.conversation_key
                AND t.version >= ((c.next_position + ${POSITIONS_PER_VERSION - 1}) / ${POSITIONS_PER_VERSION})::integer
                AND ($3::text IS NULL OR t.tenant_id = $3)
              ORDER BY t.version LIMIT $4) commits
           UNION ALL
           SELECT f.conversation_key, f.version, f.attempt, f.tenant_id, f.agent_id, f.turn, f.events::jsonb
             FROM turn_failures f
            WHERE f.conversation_key = c.conversation_key
              AND f.version >= (c.next_position / ${POSITIONS_PER_VERSION})::integer
              AND f.version::bigint * ${POSITIONS_PER_VERSION} + f.attempt >= c.next_position
              AND ($3::text IS NULL OR f.tenant_id = $3)
           ORDER BY version, attempt LIMIT $4) r`,
);

/** Records how far each conversation of a group was delivered and extends its claim, or gives the claim up. */
const ACKNOWLEDGE_STATEMENT = statement<
  [
    destination: string,
    conversationKeys: string[],
    owner: string,
    leaseMs: number,
    nextPositions: number[],
    releases: boolean[],
  ],
  { conversation_key: string }
>(
  'relay_acknowledge',
  `WITH acknowledged AS (
           UPDATE event_relay_backlog b
              SET next_position = a.next_position,
                  lease_owner = CASE WHEN a.release THEN NULL ELSE b.lease_owner END,
                  lease_expires_at = CASE WHEN a.release THEN NULL ELSE now() + $4 * interval '1 millisecond' END
             FROM unnest($2::text[], $5::bigint[], $6::boolean[]) AS a(conversation_key, next_position, release)
            WHERE b.destination = $1 AND b.conversation_key = a.conversation_key AND b.lease_owner = $3
           RETURNING b.conversation_key
         )
         SELECT conversation_key FROM acknowledged`,
);

const RELEASE_STATEMENT = statement<[destination: string, owner: string]>(
  'relay_release',
  `UPDATE event_relay_backlog SET lease_owner = NULL, lease_expires_at = NULL
          WHERE destination = $1 AND lease_owner = $2`,
);

/** The records between each backlog row's next and last positions. */
const PENDING_RECORDS = `
  SELECT t.created_at, t.events FROM event_relay_backlog b
    JOIN turn_log t ON t.conversation_key = b.conversation_key
     AND t.version >= ((b.next_position + ${POSITIONS_PER_VERSION - 1}) / ${POSITIONS_PER_VERSION})::integer
     AND t.version <= (b.last_position / ${POSITIONS_PER_VERSION})::integer
   WHERE b.destination = $1 AND ($2::text IS NULL OR t.tenant_id = $2)
  UNION ALL
  SELECT f.created_at, f.events FROM event_relay_backlog b
    JOIN turn_failures f ON f.conversation_key = b.conversation_key
     AND f.version::bigint * ${POSITIONS_PER_VERSION} + f.attempt BETWEEN b.next_position AND b.last_position
   WHERE b.destination = $1 AND ($2::text IS NULL OR f.tenant_id = $2)`;

/** The destination's expiry when it is relayed now: `$3` days ahead, or never (null). */
const EXPIRY = `COALESCE(now() + $3 * interval '1 day', 'infinity'::timestamptz)`;

const MEASURE_STATEMENT = statement<
  [destination: string, tenant: string | null, retentionDays: number | null],
  { commits: number; events: number; oldest: Date | null }
>(
  'relay_measure',
  // Also keeps the destination's registration alive (one write an hour at most).
  `WITH relayed AS (
           UPDATE event_relay_destinations SET expires_at = ${EXPIRY}
            WHERE destination = $1 AND expires_at < ${EXPIRY} - interval '1 hour'
         ), pending AS (${PENDING_RECORDS})
         SELECT count(*)::integer AS commits,
                COALESCE(sum(jsonb_array_length(events::jsonb)), 0)::integer AS events,
                min(created_at) AS oldest
           FROM pending`,
);

/**
 * The relay's SQL. What conversations publish is in the turn log (commits) and `turn_failures` (failed runs); per
 * destination the backlog holds one row per conversation with undelivered records, written by a trigger in the
 * transaction of each record, with the claim of the replica relaying it.
 */
const REGISTER_STATEMENT = statement<
  [destination: string, tenant: string | null, retentionDays: number | null]
>(
  'relay_register',
  `WITH stale AS (
         DELETE FROM event_relay_backlog
          WHERE destination = $1
            AND EXISTS (SELECT 1 FROM event_relay_destinations WHERE destination = $1 AND expires_at <= now())
       )
       INSERT INTO event_relay_destinations (destination, tenant_id, expires_at) VALUES ($1, $2, ${EXPIRY})
       ON CONFLICT (destination) DO UPDATE SET tenant_id = EXCLUDED.tenant_id, expires_at = EXCLUDED.expires_at`,
);

const RENEW_STATEMENT = statement<[destination: string, owner: string, leaseMs: number]>(
  'relay_renew',
  `UPDATE event_relay_backlog b SET lease_expires_at = now() + $3 * interval '1 millisecond'
         FROM (SELECT conversation_key FROM event_relay_backlog
                WHERE destination = $1 AND lease_owner = $2 FOR UPDATE SKIP LOCKED) AS free
        WHERE b.destination = $1 AND b.conversation_key = free.conversation_key AND b.lease_owner = $2`,
);

const FORGET_STATEMENT = statement<[conversationKey: string]>(
  'relay_forget',
  `DELETE FROM event_relay_backlog WHERE conversation_key = $1`,
);

@Injectable()
export class EventRelayStore {
  constructor(private readonly database: DatabaseService) {}

  /**
   * Registers a destination (or renews its registration): records are queued for it from now on, only its tenant's
   * when it has one, until `retentionDays` after the last time a replica relayed it (null: for ever). A destination
   * whose registration had expired starts afresh, without the records queued before.
   */
  async register(destination: string, tenant: string | null, retentionDays: number | null): Promise<void> {
    await this.database.run(REGISTER_STATEMENT, [destination, tenant, retentionDays]);
  }

  /**
   * Claims up to `limit` of the destination's conversations with undelivered records, oldest queued first,
   * skipping those another replica holds; returns the ones now held.
   */
  async claim(
    destination: string,
    owner: string,
    leaseMs: number,
    limit: number,
  ): Promise<ClaimedConversation[]> {
    return this.database.run(CLAIM_STATEMENT, [destination, owner, leaseMs, limit]);
  }

  /** The records of `claimed` from their next positions, at most `perConversation` each, in each one's order. */
  async read(
    claimed: ClaimedConversation[],
    tenant: string | null,
    perConversation: number,
  ): Promise<PendingRecord[]> {
    return this.database.run(READ_STATEMENT, [
      claimed.map((conversation) => conversation.conversation_key),
      claimed.map((conversation) => conversation.next_position),
      tenant,
      perConversation,
    ]);
  }

  /**
   * Records delivered positions (at most one per conversation) and extends their claims, or gives a claim up
   * (`release`). Returns the conversations whose claim was still held; a missing one was taken over by another
   * replica.
   */
  async acknowledge(
    destination: string,
    owner: string,
    leaseMs: number,
    acknowledgements: Acknowledgement[],
  ): Promise<ReadonlySet<string>> {
    const rows = await this.database.run(ACKNOWLEDGE_STATEMENT, [
      destination,
      acknowledgements.map((a) => a.conversation_key),
      owner,
      leaseMs,
      acknowledgements.map((a) => a.next_position),
      acknowledgements.map((a) => a.release),
    ]);
    return new Set(rows.map((row) => row.conversation_key));
  }

  /**
   * Keeps the claims alive while a delivery takes long (webhook retries). It runs beside the pass's group
   * acknowledgements, which lock several of the same rows in their own order: skipping a row one of them holds
   * (that acknowledgement extends or ends its claim anyway) means the two never wait on each other, so never
   * deadlock.
   */
  async renew(destination: string, owner: string, leaseMs: number): Promise<void> {
    await this.database.run(RENEW_STATEMENT, [destination, owner, leaseMs]);
  }

  async release(destination: string, owner: string): Promise<void> {
    await this.database.run(RELEASE_STATEMENT, [destination, owner]);
  }

  /**
   * The destination's lag (records queued and not delivered, their events, the oldest one's time), in one
   * snapshot; renews its registration for `retentionDays` (null: for ever).
   */
  async measure(destination: string, tenant: string | null, retentionDays: number | null): Promise<RelayLag> {
    const rows = await this.database.run(MEASURE_STATEMENT, [destination, tenant, retentionDays]);
    const row = rows[0];
    return { commits: row.commits, events: row.events, oldest: row.oldest ? new Date(row.oldest) : null };
  }

  /** Drops a purged conversation from every destination's backlog (its records are gone). */
  async forget(conversationKey: string): Promise<void> {
    await this.database.run(FORGET_STATEMENT, [conversationKey]);
  }
}
