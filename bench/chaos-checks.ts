import { outOfOrder } from '../test/support/nats';

/** A message a client saw answered 200: its conversation, its id and the turn number of the answer. */
export interface Acknowledged {
  conversation_key: string;
  message_id: string;
  turn: number;
}

/** A row of the turn log: one committed turn. */
export interface StoredTurn {
  conversation_key: string;
  version: number;
  turn: number;
}

/** A row of the idempotency records: the message a committed turn answered. */
export interface StoredMessage {
  conversation_key: string;
  message_id: string;
  turn: number;
}

export interface StoredSession {
  conversation_key: string;
  head_version: number;
  turn_count: number;
}

export interface TurnFindings {
  /** Acknowledged messages not stored as the turn the client was told. */
  lost: string[];
  /** Turns stored more than once: a turn without its message, or two messages answered with one turn. */
  duplicated: string[];
  /** Conversations whose versions are not 1..n in one line (a gap, a turn number off, a head elsewhere). */
  forks: string[];
}

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(key(item));
    if (group) group.push(item);
    else groups.set(key(item), [item]);
  }
  return groups;
}

/**
 * What the database says about the acknowledged turns: each stored exactly once, as the turn its answer named,
 * and every conversation's history one line of versions 1..n.
 */
export function checkTurns(
  acknowledged: Acknowledged[],
  turns: StoredTurn[],
  messages: StoredMessage[],
  sessions: StoredSession[],
): TurnFindings {
  const stored = new Map(messages.map((m) => [`${m.conversation_key}/${m.message_id}`, m]));
  const versions = new Set(turns.map((t) => `${t.conversation_key}:${t.version}`));
  const lost = acknowledged
    .filter((ack) => {
      const message = stored.get(`${ack.conversation_key}/${ack.message_id}`);
      return message?.turn !== ack.turn || !versions.has(`${ack.conversation_key}:${ack.turn}`);
    })
    .map((ack) => `${ack.conversation_key}/${ack.message_id} (turn ${ack.turn})`);

  const duplicated: string[] = [];
  const messagesOf = groupBy(messages, (m) => m.conversation_key);
  for (const [key, rows] of groupBy(turns, (t) => t.conversation_key)) {
    const answered = messagesOf.get(key)?.length ?? 0;
    if (rows.length > answered) duplicated.push(`${key}: ${rows.length} turns for ${answered} messages`);
  }
  for (const [key, acks] of groupBy(acknowledged, (a) => `${a.conversation_key}:${a.turn}`)) {
    const ids = new Set(acks.map((a) => a.message_id));
    if (ids.size > 1) duplicated.push(`${key} answered ${[...ids].join(', ')}`);
  }

  const forks: string[] = [];
  const sessionOf = new Map(sessions.map((s) => [s.conversation_key, s]));
  for (const [key, rows] of groupBy(turns, (t) => t.conversation_key)) {
    const ordered = [...rows].sort((a, b) => a.version - b.version);
    const inLine = ordered.every((row, index) => row.version === index + 1 && row.turn === row.version);
    const session = sessionOf.get(key);
    const head = ordered.length;
    if (!inLine || session?.head_version !== head || session.turn_count !== head) {
      forks.push(
        `${key}: versions ${ordered.map((r) => `${r.version}/t${r.turn}`).join(',')}; ` +
          `head ${session?.head_version ?? 'none'}, turn_count ${session?.turn_count ?? 'none'}`,
      );
    }
  }
  return { lost, duplicated, forks };
}

export interface EventFindings {
  expected: number;
  received: number;
  missing: string[];
  /** Ids the consumer received more than once. */
  duplicated: string[];
  /** Per conversation, an id that came after a later one (see `outOfOrder`). */
  outOfOrder: string[];
}

/** What the consumer received against the events the committed turns hold: each once, in each one's order. */
export function checkEvents(expected: string[], received: { id: string }[]): EventFindings {
  const counts = new Map<string, number>();
  for (const event of received) counts.set(event.id, (counts.get(event.id) ?? 0) + 1);
  // A repeat is reported as one; the order is that of each id's first arrival.
  const seen = new Set<string>();
  const firsts = received.filter((event) => !seen.has(event.id) && seen.add(event.id));
  return {
    expected: expected.length,
    received: received.length,
    missing: expected.filter((id) => !counts.has(id)),
    duplicated: [...counts].filter(([, n]) => n > 1).map(([id, n]) => `${id} ×${n}`),
    outOfOrder: outOfOrder(firsts),
  };
}
