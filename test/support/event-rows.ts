import type { StoredEventRow } from '@agent/checkpoint';

/**
 * A builder of `session_events` rows for the admin views' tests: ids and sequence numbers in call order, each
 * event stamped at its turn's second, `firstTextMs` the row's time to first released text.
 */
export function eventRows(): (
  turn: number,
  name: string,
  payload?: Record<string, unknown>,
  firstTextMs?: number | null,
) => StoredEventRow {
  let id = 0;
  return (turn, name, payload = {}, firstTextMs = null) => {
    id++;
    return {
      id: String(id),
      turn,
      seq: id,
      name,
      payload: { at: `2025-01-01T00:00:0${turn}.000Z`, turn, ...payload },
      created_at: new Date('2025-01-01T00:00:00.000Z'),
      first_text_ms: firstTextMs,
    };
  };
}
