import type { StoredEvent } from '@agent/contracts';
import type { TurnCommit } from './checkpoint.types';

/** An event as its turn log row stores it. */
export type TurnLogEvent = Pick<StoredEvent, 'name' | 'payload'>;

/**
 * The commit's events as its turn log row stores them: each payload without the envelope fields whose values the
 * row holds itself (tenant_id, agent_id, conversation_key, turn, and session_id when the key is
 * `tenant_id:session_id`). Readers put them back: the database's `turn_log_events` function (TurnLogEnvelope
 * migration) for the session_events view, `rowEnvelope` (@agent/contracts) for the event relay. A field whose
 * value differs from the row's stays in the payload and wins over the row's.
 */
export function turnLogEvents(commit: TurnCommit): TurnLogEvent[] {
  const { tenant_id, agent_id, conversation_key } = commit.identity;
  const row = new Map<string, unknown>([
    ['tenant_id', tenant_id],
    ['agent_id', agent_id],
    ['conversation_key', conversation_key],
    ['turn', commit.turn],
  ]);
  return commit.events.map((event) => {
    const payload: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(event.payload)) {
      const derived =
        key === 'session_id'
          ? typeof value === 'string' && conversation_key === `${tenant_id}:${value}`
          : row.has(key) && row.get(key) === value;
      if (!derived) payload[key] = value;
    }
    return { name: event.name, payload };
  });
}
