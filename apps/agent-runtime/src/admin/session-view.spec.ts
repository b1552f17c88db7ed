import { eventRows } from '@agent/testing/event-rows';
import { adminActions, isoOf, sessionSummary, turnDecisions } from './session-view';

const event = eventRows();

describe('turnDecisions', () => {
  it('derives route, method, confidence and latency from the router and completion events', () => {
    const decisions = turnDecisions([
      event(1, 'NOC.001', {}, 17),
      event(1, 'AGENT_STARTED', {}, 17),
      event(
        1,
        'router.decision',
        { route: 'billing_agent', intent: 'fatura', method: 'keyword', confidence: 0.8 },
        17,
      ),
      event(1, 'AGENT_COMPLETED', { route: 'billing_agent', intent: 'fatura', latency_ms: 42 }, 17),
      // A later row under the same turn (an operator action's) has no time to first text.
      event(1, 'admin.note'),
    ]);
    expect(decisions).toEqual([
      {
        turn: 1,
        at: '2025-01-01T00:00:01.000Z',
        route: 'billing_agent',
        intent: 'fatura',
        method: 'keyword',
        confidence: 0.8,
        route_bypassed: false,
        continuity: null,
        session_control: null,
        blocked: false,
        latency_ms: 42,
        first_text_ms: 17,
      },
    ]);
  });

  it('reports an accepted CONTINUE as a bypass with the classifier verdict, even without router.decision', () => {
    const [decision] = turnDecisions([
      event(2, 'AGENT_STARTED'),
      event(2, 'router.continuity', {
        decision: 'CONTINUE',
        confidence: 0.97,
        accepted: true,
        active_agent: 'billing_agent',
        route_bypassed: true,
        fallback_reason: null,
        latency_ms: 12,
      }),
      event(2, 'AGENT_COMPLETED', { latency_ms: 30 }),
    ]);
    expect(decision).toMatchObject({
      turn: 2,
      route: 'billing_agent',
      method: 'continuity',
      confidence: 0.97,
      route_bypassed: true,
      continuity: {
        decision: 'CONTINUE',
        confidence: 0.97,
        accepted: true,
        fallback_reason: null,
        latency_ms: 12,
      },
    });
  });

  it('keeps a rejected classifier verdict next to the router decision that followed it', () => {
    const [decision] = turnDecisions([
      event(3, 'AGENT_STARTED'),
      event(3, 'router.continuity', {
        decision: 'CONTINUE',
        confidence: 0.4,
        accepted: false,
        route_bypassed: false,
        fallback_reason: 'below_threshold',
      }),
      event(3, 'router.decision', { route: 'product_agent', method: 'llm', confidence: 0.9 }),
      event(3, 'AGENT_COMPLETED', { route: 'product_agent', latency_ms: 50 }),
    ]);
    expect(decision).toMatchObject({
      method: 'llm',
      route_bypassed: false,
      continuity: { accepted: false, fallback_reason: 'below_threshold' },
    });
  });

  it('marks session control and blocked turns, and leaves operator events to adminActions', () => {
    const events = [
      event(1, 'AGENT_STARTED'),
      event(1, 'session.human_handoff.requested', { source: 'continuity', reason: 'asked' }),
      event(1, 'AGENT_COMPLETED', { route: 'human_handoff' }),
      event(1, 'session.end.requested', { source: 'admin', reason: 'closed by operator' }),
      event(2, 'AGENT_STARTED'),
      event(2, 'session.message.rejected_after_end'),
      event(2, 'AGENT_COMPLETED', { route: 'end_session' }),
    ];
    const decisions = turnDecisions(events);
    expect(decisions.map((d) => [d.turn, d.session_control, d.blocked])).toEqual([
      [1, 'HUMAN_HANDOFF', false],
      [2, 'END_SESSION', true],
    ]);
    expect(adminActions(events)).toEqual([
      { action: 'end', reason: 'closed by operator', at: '2025-01-01T00:00:01.000Z', after_turn: 1 },
    ]);
  });

  it('skips turns without a start event (only operator events)', () => {
    expect(turnDecisions([event(4, 'session.resumed', { source: 'admin' })])).toEqual([]);
  });
});

describe('sessionSummary', () => {
  it('reports busy only while the lease is held and unexpired, and ISO timestamps from Date or text', () => {
    const row = {
      conversation_key: 'acme:s',
      tenant_id: 'acme',
      session_id: 's',
      agent_id: 'telecom_contas',
      user_id: null,
      channel: 'web',
      status: 'active' as const,
      active_agent: 'billing_agent',
      next_state: null,
      last_route: 'billing_agent',
      last_intent: 'fatura',
      turn_count: 2,
      head_version: 2,
      lease_owner: 'x',
      lease_expires_at: new Date(2000),
      created_at: new Date(0),
      updated_at: new Date('2025-01-01T00:00:00Z'),
    };
    expect(sessionSummary(row, 1000).busy).toBe(true);
    expect(sessionSummary(row, 3000).busy).toBe(false);
    expect(sessionSummary({ ...row, lease_owner: null }, 1000).busy).toBe(false);
    expect(sessionSummary(row).created_at).toBe('1970-01-01T00:00:00.000Z');
    expect(sessionSummary(row).updated_at).toBe('2025-01-01T00:00:00.000Z');
    expect(isoOf('2025-01-01 00:00:00+00')).toBe('2025-01-01T00:00:00.000Z');
  });
});
