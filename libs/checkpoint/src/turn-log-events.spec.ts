import { conversationKeyOf } from '@agent/contracts';
import type { TurnCommit } from './checkpoint.types';
import { turnLogEvents } from './turn-log-events';

const identity = {
  conversation_key: conversationKeyOf('acme', 's-1'),
  tenant_id: 'acme',
  session_id: 's-1',
  agent_id: 'telecom_contas',
};
const envelope = {
  tenant_id: 'acme',
  agent_id: 'telecom_contas',
  session_id: 's-1',
  conversation_key: 'acme:s-1',
};

function commitOf(payloads: Record<string, unknown>[], conversation = identity): TurnCommit {
  return {
    identity: conversation,
    leaseToken: 't',
    parentVersion: null,
    turn: 3,
    state: {},
    status: 'active',
    events: payloads.map((payload) => ({ name: 'GRL.002', payload, at: '2026-01-01T00:00:00.000Z' })),
  };
}

describe('turnLogEvents', () => {
  it('leaves out the envelope fields equal to the row and keeps the rest, at included', () => {
    const payload = { ...envelope, turn: 3, code: 'PINJ', at: '2026-01-01T00:00:00.000Z' };
    expect(turnLogEvents(commitOf([payload]))).toEqual([
      { name: 'GRL.002', payload: { code: 'PINJ', at: '2026-01-01T00:00:00.000Z' } },
    ]);
    // The published payload is not touched.
    expect(payload).toMatchObject(envelope);
  });

  it('keeps an envelope field whose value differs from the row, so readers get it back as published', () => {
    const stored = turnLogEvents(commitOf([{ ...envelope, turn: '3', agent_id: null, tenant_id: 'other' }]));
    expect(stored[0].payload).toEqual({ turn: '3', agent_id: null, tenant_id: 'other' });
  });

  it('leaves session_id out only when the conversation key is tenant:session', () => {
    const odd = { ...identity, conversation_key: conversationKeyOf('acme-s', '1') };
    const stored = turnLogEvents(commitOf([{ ...envelope, conversation_key: odd.conversation_key }], odd));
    expect(stored[0].payload).toEqual({ session_id: 's-1' });
  });
});
