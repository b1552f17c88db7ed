import { Injectable } from '@nestjs/common';
import type { StoredEvent } from '@agent/contracts';
import { DatabaseService, NamedStatement } from '@agent/database';

/** A committed turn log row a destination has not acknowledged yet. */
export interface PendingCommit {
  conversation_key: string;
  version: number;
  /** The commit's transaction id (xid8 as decimal text): the relay's order. */
  commit_xid: string;
  tenant_id: string;
  agent_id: string;
  turn: number;
  /** As stored: each payload without the envelope fields the row's columns hold (see `rowEnvelope`). */
  events: Pick<StoredEvent, 'name' | 'payload'>[];
}

/** A delivered commit to record, and whether its conversation's claim is given up with it. */
export interface Acknowledgement {
  commit: PendingCommit;
  release: boolean;
}

/** Where a destination stands on one conversation it has just claimed. */
export interface ClaimedPosition {
  conversation_key: string;
  delivered_xid: string | null;
  delivered_version: number | null;
}

/** How far a destination lags behind the turn log. */
export interface RelayLag {
  commits: number;
  events: number;
  oldest: Date | null;
}

/** The rows of a destination's conversations that lie beyond its acknowledged position (above its watermark). */
const PENDING = `
  FROM turn_log t
  JOIN event_relay_destinations d ON d.destination = $1
  LEFT JOIN event_relay_positions p ON p.destination = $1 AND p.conversation_key = t.conversation_key
 WHERE t.commit_xid >= d.watermark AND ($2::text IS NULL OR t.tenant_id = $2)
   AND (p.delivered_xid IS NULL OR (t.commit_xid, t.version) > (p.delivered_xid, p.delivered_version))`;

/**
 * The relay's statements, run on every pass (the acknowledgements once per group of commits): named, so each
 * connection plans them once.
 */
const PENDING_STATEMENT: NamedStatement = {
  name: 'relay_pending',
  // The envelope goes back in the relay, not through turn_log_events: that SQL function costs Postgres several
  // times the cast alone (0.7 against 0.1-0.15 ms per commit of a bench turn).
  text: `SELECT t.conversation_key, t.version, t.commit_xid::text AS commit_xid, t.tenant_id, t.agent_id, t.turn,
                t.events::jsonb AS events
         ${PENDING}
           AND (p.lease_owner IS NULL OR p.lease_expires_at < now() OR p.lease_owner = $3)
         ORDER BY t.commit_xid, t.version
         LIMIT $4`,
};

const CLAIM_STATEMENT: NamedStatement = {
  name: 'relay_claim',
  text: `INSERT INTO event_relay_positions AS p (destination, conversation_key, lease_owner, lease_expires_at)
         SELECT $1, key, $3, now() + $4 * interval '1 millisecond' FROM unnest($2::text[]) AS key
         ON CONFLICT (destination, conversation_key) DO UPDATE
            SET lease_owner = EXCLUDED.lease_owner, lease_expires_at = EXCLUDED.lease_expires_at, updated_at = now()
          WHERE p.lease_owner IS NULL OR p.lease_expires_at < now() OR p.lease_owner = EXCLUDED.lease_owner
         RETURNING conversation_key, delivered_xid::text AS delivered_xid, delivered_version`,
};

/** Records each delivered commit of a group and extends its claim, or gives the claim up with it. */
const ACKNOWLEDGE_STATEMENT: NamedStatement = {
  name: 'relay_acknowledge',
  text: `UPDATE event_relay_positions p
            SET delivered_xid = a.xid, delivered_version = a.version, updated_at = now(),
                lease_owner = CASE WHEN a.release THEN NULL ELSE p.lease_owner END,
                lease_expires_at = CASE WHEN a.release THEN NULL ELSE now() + $4 * interval '1 millisecond' END
           FROM unnest($2::text[], $5::xid8[], $6::integer[], $7::boolean[]) AS a(conversation_key, xid, version, release)
          WHERE p.destination = $1 AND p.conversation_key = a.conversation_key AND p.lease_owner = $3
         RETURNING p.conversation_key`,
};

const RELEASE_STATEMENT: NamedStatement = {
  name: 'relay_release',
  text: `UPDATE event_relay_positions SET lease_owner = NULL, lease_expires_at = NULL
          WHERE destination = $1 AND lease_owner = $2`,
};

const ADVANCE_STATEMENT: NamedStatement = {
  name: 'relay_advance',
  text: `WITH pending AS (
           SELECT t.commit_xid, t.created_at, jsonb_array_length(t.events::jsonb) AS events ${PENDING}
         ), target AS (
           SELECT least(pg_snapshot_xmin(pg_current_snapshot()), (SELECT min(commit_xid) FROM pending)) AS watermark
         ), advanced AS (
           UPDATE event_relay_destinations d SET watermark = target.watermark FROM target
            WHERE d.destination = $1 AND target.watermark > d.watermark
           RETURNING d.watermark
         ), forgotten AS (
           DELETE FROM event_relay_positions p USING advanced a
            WHERE p.destination = $1 AND (p.delivered_xid IS NULL OR p.delivered_xid < a.watermark)
              AND (p.lease_owner IS NULL OR p.lease_expires_at < now())
         )
         SELECT count(*)::integer AS commits, COALESCE(sum(events), 0)::integer AS events,
                min(created_at) AS oldest
           FROM pending`,
};

/**
 * The relay's SQL. The turn log is the outbox; per destination a watermark (every commit below it is delivered)
 * and per conversation the last acknowledged commit with the claim of the replica relaying it.
 */
@Injectable()
export class EventRelayStore {
  constructor(private readonly database: DatabaseService) {}

  /** A new destination starts with the commits that follow its first registration. */
  async register(destination: string): Promise<void> {
    await this.database.dataSource.query(
      `INSERT INTO event_relay_destinations (destination, watermark)
       VALUES ($1, pg_snapshot_xmin(pg_current_snapshot())) ON CONFLICT (destination) DO NOTHING`,
      [destination],
    );
  }

  /** The oldest pending commits, skipping conversations another replica holds. */
  async pending(
    destination: string,
    tenant: string | null,
    owner: string,
    limit: number,
  ): Promise<PendingCommit[]> {
    return this.database.run<PendingCommit>(PENDING_STATEMENT, [destination, tenant, owner, limit]);
  }

  /** Claims the conversations nobody else holds (or whose holder's claim lapsed); returns those now held. */
  async claim(
    destination: string,
    conversationKeys: string[],
    owner: string,
    leaseMs: number,
  ): Promise<ClaimedPosition[]> {
    return this.database.run<ClaimedPosition>(CLAIM_STATEMENT, [
      destination,
      conversationKeys,
      owner,
      leaseMs,
    ]);
  }

  /**
   * Records delivered commits (at most one per conversation) and extends their claims, or gives a claim up with
   * its commit (`release`: the pass has nothing more of that conversation). Returns the conversations whose claim
   * was still held; a missing one was taken over by another replica.
   */
  async acknowledge(
    destination: string,
    owner: string,
    leaseMs: number,
    acknowledgements: Acknowledgement[],
  ): Promise<ReadonlySet<string>> {
    const rows = await this.database.run<{ conversation_key: string }>(ACKNOWLEDGE_STATEMENT, [
      destination,
      acknowledgements.map((a) => a.commit.conversation_key),
      owner,
      leaseMs,
      acknowledgements.map((a) => a.commit.commit_xid),
      acknowledgements.map((a) => a.commit.version),
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
    await this.database.dataSource.query(
      `UPDATE event_relay_positions p SET lease_expires_at = now() + $3 * interval '1 millisecond'
         FROM (SELECT conversation_key FROM event_relay_positions
                WHERE destination = $1 AND lease_owner = $2 FOR UPDATE SKIP LOCKED) AS free
        WHERE p.destination = $1 AND p.conversation_key = free.conversation_key AND p.lease_owner = $2`,
      [destination, owner, leaseMs],
    );
  }

  async release(destination: string, owner: string): Promise<void> {
    await this.database.run(RELEASE_STATEMENT, [destination, owner]);
  }

  /**
   * Moves the watermark up to the oldest pending commit, but never past a transaction still running (its commit
   * may yet appear below), measures the lag, and forgets the positions the watermark has passed. One snapshot
   * serves the three, so a commit counted as delivered is one this statement saw delivered.
   */
  async advance(destination: string, tenant: string | null): Promise<RelayLag> {
    const rows = await this.database.run<{ commits: number; events: number; oldest: Date | null }>(
      ADVANCE_STATEMENT,
      [destination, tenant],
    );
    const row = rows[0];
    return { commits: row.commits, events: row.events, oldest: row.oldest ? new Date(row.oldest) : null };
  }
}
