import { checkEvents, checkTurns, StoredMessage, StoredSession, StoredTurn } from '../../bench/chaos-checks';

const key = 'chaos:c0-0';

function conversation(turns: number): {
  acks: { conversation_key: string; message_id: string; turn: number }[];
  stored: StoredTurn[];
  messages: StoredMessage[];
  sessions: StoredSession[];
} {
  const positions = Array.from({ length: turns }, (_, index) => index + 1);
  return {
    acks: positions.map((turn) => ({ conversation_key: key, message_id: `m${turn}`, turn })),
    stored: positions.map((turn) => ({ conversation_key: key, version: turn, turn })),
    messages: positions.map((turn) => ({ conversation_key: key, message_id: `m${turn}`, turn })),
    sessions: [{ conversation_key: key, head_version: turns, turn_count: turns }],
  };
}

describe('the chaos drill checks of the stored turns', () => {
  it('finds nothing wrong when every acknowledged turn is stored once, in line', () => {
    const { acks, stored, messages, sessions } = conversation(3);
    expect(checkTurns(acks, stored, messages, sessions)).toEqual({ lost: [], duplicated: [], forks: [] });
  });

  it('reports an acknowledged turn the database does not have, or has as another turn', () => {
    const { acks, stored, messages, sessions } = conversation(3);
    const missing = checkTurns(acks, stored.slice(0, 2), messages.slice(0, 2), [
      { ...sessions[0], head_version: 2, turn_count: 2 },
    ]);
    expect(missing.lost).toEqual([`${key}/m3 (turn 3)`]);
    const renumbered = checkTurns(
      acks,
      stored,
      messages.map((m) => (m.message_id === 'm2' ? { ...m, turn: 3 } : m)),
      sessions,
    );
    expect(renumbered.lost).toEqual([`${key}/m2 (turn 2)`]);
  });

  it('reports a turn stored without its message, and two messages answered as one turn', () => {
    const { acks, stored, messages, sessions } = conversation(2);
    const extra = checkTurns(acks, [...stored, { conversation_key: key, version: 3, turn: 3 }], messages, [
      { ...sessions[0], head_version: 3, turn_count: 3 },
    ]);
    expect(extra.duplicated).toEqual([`${key}: 3 turns for 2 messages`]);
    const twice = checkTurns(
      [...acks, { conversation_key: key, message_id: 'm3', turn: 2 }],
      stored,
      messages,
      sessions,
    );
    expect(twice.duplicated).toEqual([`${key}:2 answered m2, m3`]);
  });

  it('reports a gap in the versions, a turn number off, and a head elsewhere as forks', () => {
    const { acks, messages, sessions } = conversation(3);
    const gap: StoredTurn[] = [1, 2, 4].map((version) => ({ conversation_key: key, version, turn: version }));
    expect(checkTurns(acks.slice(0, 2), gap, messages, sessions).forks).toHaveLength(1);
    const off = conversation(3).stored.map((row) => (row.version === 3 ? { ...row, turn: 4 } : row));
    expect(checkTurns(acks, off, messages, sessions).forks).toHaveLength(1);
    const { stored } = conversation(3);
    expect(checkTurns(acks, stored, messages, [{ ...sessions[0], head_version: 2 }]).forks).toHaveLength(1);
  });
});

describe('the chaos drill checks of the events', () => {
  const expected = ['k:1:1', 'k:1:2', 'k:2:1', 'j:1:1'];

  it('finds nothing wrong when each event came once, in each conversation order', () => {
    const received = ['k:1:1', 'j:1:1', 'k:1:2', 'k:2:1'].map((id) => ({ id }));
    expect(checkEvents(expected, received)).toEqual({
      expected: 4,
      received: 4,
      missing: [],
      duplicated: [],
      outOfOrder: [],
    });
  });

  it('reports a missing event, a repeat and one out of order', () => {
    const received = ['k:1:2', 'k:1:1', 'k:1:1', 'j:1:1'].map((id) => ({ id }));
    const findings = checkEvents(expected, received);
    expect(findings.missing).toEqual(['k:2:1']);
    expect(findings.duplicated).toEqual(['k:1:1 ×2']);
    expect(findings.outOfOrder).toEqual(['k:1:1 after k:1:2']);
  });
});
