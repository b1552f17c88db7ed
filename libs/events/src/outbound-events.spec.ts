import { outboundEvents } from './event-relay.service';
import type { PendingRecord } from './event-relay.store';

const commit = (events: PendingRecord['events'], attempt = 0): PendingRecord => ({
  conversation_key: 'acme:s-1',
  version: 7,
  attempt,
  tenant_id: 'acme',
  agent_id: 'telecom_contas',
  turn: 3,
  events,
});

describe('outboundEvents', () => {
  it('gives every stored payload its envelope back from the row, with ids by version and position', () => {
    const events = outboundEvents(
      commit([
        { name: 'NOC.001', payload: { channel: 'web', at: '2026-12-01T00:00:00.000Z' } },
        { name: 'AGENT_COMPLETED', payload: { route: 'billing_agent' } },
      ]),
    );
    expect(events.map((event) => [event.id, event.seq, event.name])).toEqual([
      ['acme:s-1:7:1', 1, 'NOC.001'],
      ['acme:s-1:7:2', 2, 'AGENT_COMPLETED'],
    ]);
    expect(events[0].payload).toEqual({
      tenant_id: 'acme',
      agent_id: 'telecom_contas',
      session_id: 's-1',
      conversation_key: 'acme:s-1',
      turn: 3,
      channel: 'web',
      at: '2026-12-01T00:00:00.000Z',
    });
  });

  it("numbers a failed run's events after the head it ran on", () => {
    const events = outboundEvents(commit([{ name: 'NOC.005', payload: { error: 'x' } }], 2));
    expect(events.map((event) => [event.id, event.version, event.seq])).toEqual([['acme:s-1:7.2:1', 7, 1]]);
  });

  it('keeps a field the payload stored because it differed from the row, and payloads stored whole', () => {
    const whole = {
      tenant_id: 'acme',
      agent_id: 'telecom_contas',
      session_id: 's-1',
      conversation_key: 'acme:s-1',
      turn: 3,
      reason: 'x',
    };
    const [own, earlier] = outboundEvents(
      commit([
        { name: 'session.ended', payload: { agent_id: 'other_agent', turn: 2 } },
        { name: 'session.ended', payload: whole },
      ]),
    );
    expect(own.payload).toMatchObject({ agent_id: 'other_agent', turn: 2, session_id: 's-1' });
    expect(earlier.payload).toEqual(whole);
  });
});
