import { Injectable } from '@nestjs/common';
import { DatabaseService } from '@agent/database';
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

interface DeadLetterRow extends Omit<DeadLetter, 'created_at' | 'redelivered_at'> {
  created_at: Date;
  redelivered_at: Date | null;
}

const COLUMNS = `id::text AS id, destination, tenant_id, event_id, event_name, body, attempts, last_error,
                 created_at, redelivered_at`;

function view(row: DeadLetterRow): DeadLetter {
  return {
    ...row,
    created_at: new Date(row.created_at).toISOString(),
    redelivered_at: row.redelivered_at ? new Date(row.redelivered_at).toISOString() : null,
  };
}

@Injectable()
export class DeadLetterStore {
  constructor(private readonly database: DatabaseService) {}

  async record(
    letter: Omit<DeadLetter, 'id' | 'created_at' | 'redelivered_at'> & { conversation_key: string },
  ): Promise<void> {
    await this.database.dataSource.query(
      `INSERT INTO event_dead_letters
         (destination, tenant_id, conversation_key, event_id, event_name, body, attempts, last_error)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8)`,
      [
        letter.destination,
        letter.tenant_id,
        letter.conversation_key,
        letter.event_id,
        letter.event_name,
        JSON.stringify(letter.body),
        letter.attempts,
        letter.last_error,
      ],
    );
  }

  /** A purged conversation's letters; returns how many went. */
  async deleteConversation(conversationKey: string): Promise<number> {
    const [, deleted]: [unknown[], number] = await this.database.dataSource.query(
      `DELETE FROM event_dead_letters WHERE conversation_key = $1`,
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

  /** Letters created before `before`: they age out with the turn log they were copied from. */
  async deleteExpired(before: Date): Promise<number> {
    const [, deleted]: [unknown[], number] = await this.database.dataSource.query(
      `DELETE FROM event_dead_letters WHERE created_at < $1`,
      [before.toISOString()],
    );
    return deleted;
  }

  /** Newest first; `tenantId` undefined covers every tenant, `redelivered` undefined both states. */
  async list(filter: { tenantId?: string; redelivered?: boolean; limit: number }): Promise<DeadLetter[]> {
    const rows: DeadLetterRow[] = await this.database.dataSource.query(
      `SELECT ${COLUMNS} FROM event_dead_letters
        WHERE ($1::text IS NULL OR tenant_id = $1)
          AND ($2::boolean IS NULL OR (redelivered_at IS NOT NULL) = $2)
        ORDER BY id DESC LIMIT $3`,
      [filter.tenantId ?? null, filter.redelivered ?? null, filter.limit],
    );
    return rows.map(view);
  }

  async get(id: string): Promise<DeadLetter | null> {
    const rows: DeadLetterRow[] = await this.database.dataSource.query(
      `SELECT ${COLUMNS} FROM event_dead_letters WHERE id = $1::bigint`,
      [id],
    );
    return rows.length > 0 ? view(rows[0]) : null;
  }

  /** Counts one more attempt; a successful one marks the letter redelivered. */
  async attempted(id: string, outcome: { delivered: boolean; error: string | null }): Promise<DeadLetter> {
    const [rows]: [DeadLetterRow[], number] = await this.database.dataSource.query(
      `UPDATE event_dead_letters
          SET attempts = attempts + 1, last_error = COALESCE($3, last_error),
              redelivered_at = CASE WHEN $2 THEN now() ELSE redelivered_at END
        WHERE id = $1::bigint
       RETURNING ${COLUMNS}`,
      [id, outcome.delivered, outcome.error],
    );
    return view(rows[0]);
  }
}
