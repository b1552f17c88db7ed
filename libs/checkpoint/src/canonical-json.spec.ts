import {
  canonicalJson,
  checkpointChecksum,
  jsonbText,
  readCheckpoint,
  serializeCheckpoint,
} from './canonical-json';

describe('canonicalJson', () => {
  it('sorts keys at every level and drops undefined values', () => {
    expect(canonicalJson({ b: 1, a: { d: [{ z: 1, y: undefined, x: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[{"x":2,"z":1}]},"b":1}',
    );
  });

  it('serializes objects with toJSON (dates) as JSON.stringify does', () => {
    expect(canonicalJson({ at: new Date('2025-01-02T03:04:05.000Z') })).toBe(
      '{"at":"2025-01-02T03:04:05.000Z"}',
    );
  });

  it('replaces what Postgres jsonb rejects: NUL and lone surrogates, in values and keys', () => {
    const text = canonicalJson({ 'k\u0000': 'a\u0000b \ud800 \udc00 😀' });
    expect(JSON.parse(text)).toEqual({ 'k\ufffd': 'a\ufffdb \ufffd \ufffd 😀' });
    expect(jsonbText({ b: '\u0000', a: 1 })).toBe('{"b":"\ufffd","a":1}');
  });

  it('is stable under its own round trip, so a loaded state hashes like the saved one', () => {
    const state = { z: [1, 2.5, 1e21, 5e-7], a: 'ação', n: { y: true, x: null } };
    const once = canonicalJson(state);
    expect(canonicalJson(JSON.parse(once))).toBe(once);
  });
});

describe('checkpointChecksum', () => {
  it('covers the state and the parent version', () => {
    const state = { user_text: 'oi' };
    expect(checkpointChecksum(state, 1)).toMatch(/^[0-9a-f]{64}$/);
    expect(checkpointChecksum({ ...state }, 1)).toBe(checkpointChecksum(state, 1));
    expect(checkpointChecksum(state, 2)).not.toBe(checkpointChecksum(state, 1));
    expect(checkpointChecksum(state, null)).not.toBe(checkpointChecksum(state, 1));
    expect(checkpointChecksum({ user_text: 'oi!' }, 1)).not.toBe(checkpointChecksum(state, 1));
  });
});

describe('readCheckpoint', () => {
  const stored = (state: unknown) => {
    const { text, checksum } = serializeCheckpoint(state, 3);
    return { state_text: text, format: 2, checksum, parent_version: 3 };
  };
  const history = [{ role: 'user' as const, content: 'oi', turn: 1 }];

  it("reads what a turn carries over without validating or returning the last turn's scratch", () => {
    // A scratch key this release cannot read: the next turn clears it, so it must not cost the history.
    const row = stored({
      history,
      active_agent: 'billing_agent',
      guardrail_decisions: 'not a list',
      answer: 'x',
    });
    expect(readCheckpoint(row, 'carried over')).toEqual({
      state: { history, active_agent: 'billing_agent' },
    });
    expect(readCheckpoint(row)).toEqual({
      problem: expect.stringMatching(/^state does not match the schema at guardrail_decisions/),
    });
  });

  it('still refuses a carried-over key that does not fit, and any change to the stored text', () => {
    expect(readCheckpoint(stored({ history: 'not a list' }), 'carried over')).toEqual({
      problem: expect.stringMatching(/^state does not match the schema at history/),
    });
    const row = stored({ history });
    expect(
      readCheckpoint({ ...row, state_text: row.state_text.replace('oi', 'ok') }, 'carried over'),
    ).toEqual({
      problem: 'checksum mismatch',
    });
  });
});
