import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, Not, Repository } from 'typeorm';
import { DatabaseService } from '@agent/database';
import { DeadLetterEntity, DeliveryAttemptEntity } from './events.entities';
import type { EventDocument } from './outbound-event';

/** A webhook delivery that failed every attempt. */
export interface DeadLetter {
  id: string;
  destination: string;
  tenant_id: string;
  event_id: string;
  event_name: string;
  body: EventDocument;
  attempts: number;
  last_error: string;
  created_at: string;
  redelivered_at: string | null;
}

type DeadLetterRow = Omit<DeadLetterEntity, 'conversation_key' | 'redelivery_claimed_until'>;

const COLUMNS = `id::text AS id, destination, tenant_id, event_id, event_name, body, attempts, last_error,
                 created_at, redelivered_at`;

/** What the admin API shows: the row without its conversation key (the event id carries it). */
function view(row: DeadLetterRow): DeadLetter {
  return {
    id: row.id,
    destination: row.destination,
    tenant_id: row.tenant_id,
    event_id: row.event_id,
    event_name: row.event_name,
    body: row.body,
    attempts: row.attempts,
    last_error: row.last_error,
    created_at: new Date(row.created_at).toISOString(),
    redelivered_at: row.redelivered_at ? new Date(row.redelivered_at).toISOString() : null,
  };
}

/** The failed attempts of a webhook event still being retried, and when the next one is due. */
export interface PendingAttempts {
  attempts: number;
  next_attempt_at: Date;
  last_error: string;
}

/** Dead letters, and the attempts of events on their way to becoming one. */
@Injectable()
export class DeadLetterStore {
  constructor(
    private readonly database: DatabaseService,
    @InjectRepository(DeadLetterEntity) private readonly letters: Repository<DeadLetterEntity>,
    @InjectRepository(DeliveryAttemptEntity) private readonly attempts: Repository<DeliveryAttemptEntity>,
  ) {}

  /**
   * Records the letter and forgets the event's attempts, in one statement. Nothing is recorded when the row that
   * held the event is gone (its conversation was purged, or aged out, while the event was being retried): the turn
   * log row of its version, or the failed run's record in `turn_failures`, the only row a failure on a
   * conversation's first turn (version 0) has.
   */
  async record(
    letter: Omit<DeadLetter, 'id' | 'created_at' | 'redelivered_at'> & {
      conversation_key: string;
      version: number;
    },
  ): Promise<void> {
    await this.database.dataSource.query(
      `WITH attempts_gone AS (
         DELETE FROM event_delivery_attempts WHERE destination = $1 AND event_id = $4
       )
       INSERT INTO event_dead_letters
         (destination, tenant_id, conversation_key, event_id, event_name, body, attempts, last_error)
       SELECT $1, $2, $3, $4, $5, $6::jsonb, $7, $8
        WHERE EXISTS (SELECT 1 FROM turn_log WHERE conversation_key = $3 AND version = $9)
           OR EXISTS (SELECT 1 FROM turn_failures WHERE conversation_key = $3 AND version = $9)`,
      [
        letter.destination,
        letter.tenant_id,
        letter.conversation_key,
        letter.event_id,
        letter.event_name,
        JSON.stringify(letter.body),
        letter.attempts,
        letter.last_error,
        letter.version,
      ],
    );
  }

  /** The attempts an event has had so far on a destination (by any replica), or null when none failed. */
  async pendingAttempts(destination: string, eventId: string): Promise<PendingAttempts | null> {
    return this.attempts.findOne({
      select: { attempts: true, next_attempt_at: true, last_error: true },
      where: { destination, event_id: eventId },
    });
  }

  /** Counts the failed attempts of an event so far and when the next one is due. */
  async attemptFailed(
    destination: string,
    event: { id: string; conversation_key: string },
    failed: PendingAttempts,
  ): Promise<void> {
    await this.database.dataSource.query(
      `INSERT INTO event_delivery_attempts
         (destination, event_id, conversation_key, attempts, next_attempt_at, last_error)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (destination, event_id) DO UPDATE
          SET attempts = EXCLUDED.attempts, next_attempt_at = EXCLUDED.next_attempt_at,
              last_error = EXCLUDED.last_error, updated_at = now()`,
      [
        destination,
        event.id,
        event.conversation_key,
        failed.attempts,
        failed.next_attempt_at.toISOString(),
        failed.last_error,
      ],
    );
  }

  /** The event was delivered after failed attempts: they are forgotten. */
  async attemptsSettled(destination: string, eventId: string): Promise<void> {
    await this.attempts.delete({ destination, event_id: eventId });
  }

  /** A purged conversation's letters (and its events' pending attempts); returns how many letters went. */
  async deleteConversation(conversationKey: string): Promise<number> {
    const [, deleted]: [unknown[], number] = await this.database.dataSource.query(
      `WITH attempts_gone AS (DELETE FROM event_delivery_attempts WHERE conversation_key = $1)
       DELETE FROM event_dead_letters WHERE conversation_key = $1`,
      [conversationKey],
    );
    return deleted;
  }

  /**
   * The letters of a subject's conversations in a tenant (of one agent when given): those whose session's
   * user_id is the subject key. Returns how many went.
   */
  async deleteSubject(subject: {
    tenant_id: string;
    agent_id: string | null;
    subject_key: string;
  }): Promise<number> {
    const [, deleted]: [unknown[], number] = await this.database.dataSource.query(
      `DELETE FROM event_dead_letters l USING sessions s
        WHERE s.conversation_key = l.conversation_key AND s.tenant_id = $1 AND s.user_id = $3
          AND ($2::text IS NULL OR s.agent_id = $2)`,
      [subject.tenant_id, subject.agent_id, subject.subject_key],
    );
    return deleted;
  }

  /**
   * Letters created before `before`: they age out with the turn log they were copied from; so do attempts left
   * by events no relay retries any more. Returns how many letters went.
   */
  async deleteExpired(before: Date): Promise<number> {
    const [, deleted]: [unknown[], number] = await this.database.dataSource.query(
      `WITH attempts_gone AS (DELETE FROM event_delivery_attempts WHERE updated_at < $1)
       DELETE FROM event_dead_letters WHERE created_at < $1`,
      [before.toISOString()],
    );
    return deleted;
  }

  /** Newest first; `tenantId` undefined covers every tenant, `redelivered` undefined both states. */
  async list(filter: { tenantId?: string; redelivered?: boolean; limit: number }): Promise<DeadLetter[]> {
    const rows = await this.letters.find({
      where: {
        tenant_id: filter.tenantId,
        redelivered_at:
          filter.redelivered === undefined ? undefined : filter.redelivered ? Not(IsNull()) : IsNull(),
      },
      order: { id: 'DESC' },
      take: filter.limit,
    });
    return rows.map(view);
  }

  async get(id: string): Promise<DeadLetter | null> {
    const row = await this.letters.findOneBy({ id });
    return row ? view(row) : null;
  }

  /**
   * Takes a letter not yet redelivered for one redelivery attempt, counted now, for `holdMs`: no other redelivery
   * (from any replica) starts meanwhile. Returns the attempt's number, which fences its outcome, or null when the
   * letter is delivered already, gone, or held by another redelivery whose claim has not lapsed.
   */
  async claimRedelivery(id: string, holdMs: number): Promise<number | null> {
    const [rows]: [{ attempts: number }[], number] = await this.database.dataSource.query(
      `UPDATE event_dead_letters
          SET attempts = attempts + 1, redelivery_claimed_until = now() + $2::integer * interval '1 millisecond'
        WHERE id = $1::bigint AND redelivered_at IS NULL
          AND (redelivery_claimed_until IS NULL OR redelivery_claimed_until <= now())
       RETURNING attempts`,
      [id, holdMs],
    );
    return rows.length > 0 ? rows[0].attempts : null;
  }

  /**
   * The outcome of the claimed attempt `attempt`: a successful one marks the letter redelivered; either way the
   * claim ends. Null when the letter went meanwhile (purged), or another redelivery took it after the claim lapsed.
   */
  async redeliveryDone(
    id: string,
    attempt: number,
    outcome: { delivered: boolean; error: string | null },
  ): Promise<DeadLetter | null> {
    const [rows]: [DeadLetterRow[], number] = await this.database.dataSource.query(
      `UPDATE event_dead_letters
          SET last_error = COALESCE($3, last_error), redelivery_claimed_until = NULL,
              redelivered_at = CASE WHEN $2 THEN now() ELSE redelivered_at END
        WHERE id = $1::bigint AND attempts = $4
       RETURNING ${COLUMNS}`,
      [id, outcome.delivered, outcome.error, attempt],
    );
    return rows.length > 0 ? view(rows[0]) : null;
  }
}
