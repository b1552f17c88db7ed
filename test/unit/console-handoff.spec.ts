import type { components } from '../../apps/console/src/api/openapi';
import { byLongestWait, pickUpOf } from '../../apps/console/src/handoff';

type Timeline = components['schemas']['SessionTimelineDto'];
type Turn = Timeline['turns'][number];

function turn(number: number, overrides: Partial<Turn> = {}, events: string[] = []): Turn {
  return {
    turn: number,
    at: `2025-01-01T00:0${number}:00.000Z`,
    route: 'billing_agent',
    intent: 'fatura',
    method: 'llm',
    confidence: 0.9,
    route_bypassed: false,
    continuity: null,
    session_control: null,
    blocked: false,
    latency_ms: 10,
    user_message: `mensagem ${number}`,
    answer: `resposta ${number}`,
    guardrails: [],
    nodes: [],
    model_usage: [],
    recoveries: [],
    admin_actions: [],
    events: events.map((name, index) => ({
      id: `${number}-${index}`,
      turn: number,
      seq: index,
      name,
      payload:
        name === 'session.human_handoff.requested'
          ? { reason: 'pediu uma pessoa', at: `2025-01-01T00:0${number}:30.000Z` }
          : {},
      created_at: '2025-01-01T00:00:00.000Z',
    })),
    ...overrides,
  };
}

function timeline(turns: Turn[]): Timeline {
  return {
    session: {
      conversation_key: 'acme:s',
      tenant_id: 'acme',
      session_id: 's',
      agent_id: 'telecom_contas',
      user_id: null,
      channel: 'web',
      status: 'handoff',
      active_agent: 'human_handoff',
      next_state: null,
      last_route: 'human_handoff',
      last_intent: 'held_for_human',
      turn_count: turns.length,
      head_version: turns.length,
      busy: false,
      created_at: '2025-01-01T00:00:00.000Z',
      updated_at: '2025-01-01T00:09:00.000Z',
    },
    state_version: turns.length,
    messages_from_turn: 1,
    turns,
  };
}

describe('pickUpOf', () => {
  it("takes the customer's request, the agent that served them and the messages held since", () => {
    const pickUp = pickUpOf(
      timeline([
        turn(1),
        turn(2, { route: 'product_agent', intent: 'plano' }),
        turn(3, { route: 'human_handoff', session_control: 'HUMAN_HANDOFF' }, [
          'session.human_handoff.requested',
        ]),
        turn(4, { blocked: true, session_control: 'HUMAN_HANDOFF' }, ['session.message.held_for_human']),
        turn(5, { blocked: true, session_control: 'HUMAN_HANDOFF' }, ['session.message.held_for_human']),
      ]),
    );
    expect(pickUp).toMatchObject({
      requestedAt: '2025-01-01T00:03:30.000Z',
      requestedBy: 'customer',
      reason: 'pediu uma pessoa',
      agent: 'product_agent',
      intent: 'plano',
      heldMessages: 2,
    });
    expect(pickUp.lastMessages.map((m) => `${m.turn}:${m.role}`)).toEqual([
      '3:customer',
      '3:answer',
      '4:customer',
      '4:answer',
      '5:customer',
      '5:answer',
    ]);
  });

  it("uses the latest request: an operator's hand-off after a resume", () => {
    const pickUp = pickUpOf(
      timeline([
        turn(1, {}, ['session.human_handoff.requested']),
        turn(2, {
          admin_actions: [
            { action: 'resume', reason: null, at: '2025-01-01T00:02:10.000Z', after_turn: 2 },
            { action: 'handoff', reason: 'VIP', at: '2025-01-01T00:02:20.000Z', after_turn: 2 },
          ],
        }),
      ]),
    );
    expect(pickUp).toMatchObject({
      requestedAt: '2025-01-01T00:02:20.000Z',
      requestedBy: 'operator',
      reason: 'VIP',
      agent: 'billing_agent',
      heldMessages: 0,
    });
  });
});

describe('byLongestWait', () => {
  it('puts the oldest request first and unknown ones last', () => {
    const entry = (requestedAt: string | null) => ({
      pickUp: requestedAt === null ? null : { ...pickUpOf(timeline([])), requestedAt },
    });
    const sorted = [entry(null), entry('2025-01-01T00:05:00Z'), entry('2025-01-01T00:01:00Z')].sort(
      byLongestWait,
    );
    expect(sorted.map((e) => e.pickUp?.requestedAt ?? null)).toEqual([
      '2025-01-01T00:01:00Z',
      '2025-01-01T00:05:00Z',
      null,
    ]);
  });
});
