import { conversationKeyOf, type StoredEvent } from '@agent/contracts';
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
  const turn = commit.turn;
  // Runs over every field of every event of every turn: a switch, not a lookup table built per commit.
  const derived = (key: string, value: unknown): boolean => {
    switch (key) {
      case 'tenant_id':
        return value === tenant_id;
      case 'agent_id':
        return value === agent_id;
      case 'conversation_key':
        return value === conversation_key;
      case 'turn':
        return value === turn;
      case 'session_id':
        return typeof value === 'string' && conversation_key === conversationKeyOf(tenant_id, value);
      default:
        return false;
    }
  };
  return commit.events.map((event) => {
    const payload: Record<string, unknown> = {};
    for (const key of Object.keys(event.payload)) {
      const value = event.payload[key];
      if (!derived(key, value)) payload[key] = value;
    }
    return { name: event.name, payload };
  });
}
