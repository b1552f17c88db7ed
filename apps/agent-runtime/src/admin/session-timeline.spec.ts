import { eventRows } from '@agent/testing/event-rows';
import { oldestMessageTurn, timelineTurns } from './session-timeline';

const event = eventRows();

const head = {
  turn: 2,
  user_text: 'e o que está incluso?',
  final_answer: 'Inclui 50GB.',
  history: [
    { role: 'user' as const, content: 'Qual é o meu plano?', turn: 1 },
    { role: 'assistant' as const, content: 'Controle 50GB.', turn: 1 },
  ],
};

describe('timelineTurns', () => {
  const events = [
    event(1, 'AGENT_STARTED'),
    event(1, 'guardrails.input.completed', {
      blocked: false,
      codes: [],
      decisions: [
        { code: 'PINJ', action: 'allow', allowed: true, reason: 'clean', latency_ms: 3 },
        { code: 'TOX', allowed: false },
        'not a decision',
      ],
    }),
    event(1, 'router.continuity', {
      decision: 'ROUTE',
      confidence: 0.98,
      accepted: true,
      route_bypassed: false,
      fallback_reason: null,
      latency_ms: 9,
      reason: 'new subject',
    }),
    event(1, 'llm.call', {
      profile: 'route_continuity',
      model: 'mini',
      latency_ms: 9,
      prompt_tokens: 300,
      completion_tokens: 12,
      outcome: 'ok',
    }),
    event(1, 'llm.call', {
      profile: 'route_continuity',
      model: 'mini',
      latency_ms: 5.5,
      prompt_tokens: 300,
      completion_tokens: 12,
      outcome: 'timeout',
    }),
    event(1, 'router.decision', { route: 'product_agent', intent: 'plano', method: 'llm', confidence: 0.9 }),
    event(1, 'AGENT_COMPLETED', {
      route: 'product_agent',
      latency_ms: 40,
      nodes: [
        { node: 'input_guardrails', duration_ms: 4, outcome: 'ok' },
        { node: 'route', duration_ms: 20, outcome: 'ok' },
      ],
    }),
    event(2, 'checkpoint.recovery.skip_corrupt', { version: 2, reason: 'checksum mismatch' }),
    event(2, 'AGENT_STARTED'),
    event(2, 'workflow.node.completed', { node: 'route', duration_ms: 7, outcome: 'error' }),
    event(2, 'guardrails.output.completed', { blocked: true, codes: ['PROM'], attempt: 1, decisions: [] }),
    event(2, 'session.end.requested', { source: 'admin', reason: 'done', at: '2025-01-01T00:00:09.000Z' }),
  ];

  it('gives each turn its messages, verdicts, timings, model calls, recoveries and operator actions', () => {
    const [first, second] = timelineTurns(events, head);
    expect(first).toMatchObject({
      turn: 1,
      route: 'product_agent',
      method: 'llm',
      route_bypassed: false,
      continuity: { decision: 'ROUTE', confidence: 0.98, accepted: true, reason: 'new subject' },
      user_message: 'Qual é o meu plano?',
      answer: 'Controle 50GB.',
      guardrails: [
        {
          stage: 'input',
          attempt: null,
          blocked: false,
          codes: [],
          rails: [
            { code: 'PINJ', action: 'allow', reason: 'clean', latency_ms: 3 },
            { code: 'TOX', action: 'block', reason: null, latency_ms: null },
          ],
        },
      ],
      nodes: [
        { node: 'input_guardrails', duration_ms: 4, outcome: 'ok' },
        { node: 'route', duration_ms: 20, outcome: 'ok' },
      ],
      model_usage: [
        {
          profile: 'route_continuity',
          model: 'mini',
          calls: 2,
          failed: 1,
          prompt_tokens: 600,
          completion_tokens: 24,
          latency_ms: 14.5,
        },
      ],
      recoveries: [],
      admin_actions: [],
    });
    expect(first.events.map((e) => e.name)).toEqual([
      'AGENT_STARTED',
      'guardrails.input.completed',
      'router.continuity',
      'llm.call',
      'llm.call',
      'router.decision',
      'AGENT_COMPLETED',
    ]);
    // The newest turn's messages come from the head state; its nodes from the per-node events.
    expect(second).toMatchObject({
      turn: 2,
      user_message: 'e o que está incluso?',
      answer: 'Inclui 50GB.',
      blocked: true,
      guardrails: [{ stage: 'output', attempt: 1, blocked: true, codes: ['PROM'], rails: [] }],
      nodes: [{ node: 'route', duration_ms: 7, outcome: 'error' }],
      recoveries: [{ kind: 'skip_corrupt', version: 2, reason: 'checksum mismatch', skipped: null }],
      admin_actions: [{ action: 'end', reason: 'done', after_turn: 2 }],
    });
    // The operator's event is an action, not part of the turn's own events.
    expect(second.events.map((e) => e.name)).not.toContain('session.end.requested');
  });

  it('leaves messages out once the bounded history dropped them', () => {
    const [first] = timelineTurns(events, { history: [] });
    expect(first).toMatchObject({ user_message: null, answer: null });
    expect(oldestMessageTurn(head)).toBe(1);
    expect(oldestMessageTurn({})).toBeNull();
  });

  it('marks a clean start after every checkpoint was corrupt', () => {
    const [turn] = timelineTurns(
      [event(3, 'checkpoint.recovery.clean_start', { skipped: 2 }), event(3, 'NOC.001')],
      {},
    );
    expect(turn.recoveries).toEqual([
      { kind: 'clean_start', version: null, reason: null, skipped: 2, found_version: null },
    ]);
  });

  it('marks missing versions below the head with the version the turn went on from', () => {
    const [turn] = timelineTurns(
      [
        event(5, 'checkpoint.recovery.version_gap', {
          expected_version: 4,
          found_version: 2,
          missing_versions: 2,
        }),
        event(5, 'AGENT_STARTED'),
      ],
      {},
    );
    expect(turn.recoveries).toEqual([
      { kind: 'version_gap', version: 4, reason: null, skipped: 2, found_version: 2 },
    ]);
  });
});
