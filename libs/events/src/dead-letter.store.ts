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

  async record(letter: Omit<DeadLetter, 'id' | 'created_at' | 'redelivered_at'>): Promise<void> {
    await this.database.dataSource.query(
      `INSERT INTO event_dead_letters (destination, tenant_id, event_id, event_name, body, attempts, last_error)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7)`,
      [
        letter.destination,
        letter.tenant_id,
        letter.event_id,
        letter.event_name,
        JSON.stringify(letter.body),
        letter.attempts,
        letter.last_error,
      ],
    );
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
