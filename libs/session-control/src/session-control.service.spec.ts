import type { AgentState, StoredEvent } from '@agent/contracts';
import { parseEnvNamespace } from '@agent/config';
import { EventBusService, MetricsService, TurnContext, TurnContextStore } from '@agent/observability';
import { listeningBus } from '@agent/testing/listening-bus';
import { activeTransactionOf, decisionOf, pendingToolCallOf, turnStateOf } from '@agent/testing/states';
import { SessionControlOrigin, SessionControlService } from './session-control.service';

function build(env: Record<string, string> = {}): {
  service: SessionControlService;
  metrics: MetricsService;
  bus: EventBusService;
} {
  const { events: bus, metrics } = listeningBus();
  const service = new SessionControlService(
    parseEnvNamespace('sessionControl', env),
    parseEnvNamespace('app', env),
    bus,
  );
  return { service, metrics, bus };
}

/**
 * Runs `work` inside a turn context and returns its result with the events it emitted; with `bus`, the events
 * are then published as a commit publishes them.
 */
async function inTurn<T>(
  work: () => T,
  bus?: EventBusService,
): Promise<{ result: T; events: StoredEvent[] }> {
  const context: TurnContext = {
    request_id: 'r1',
    tenant_id: 'acme',
    agent_id: 'telecom_contas',
    session_id: 's1',
    conversation_key: 'acme:s1',
    turn: 3,
    events: [],
    nodes: [],
  };
  const result = await TurnContextStore.run(context, () => Promise.resolve(work()));
  bus?.publishCommitted(context);
  return { result, events: context.events };
}

/** A session control the turn's routing decided, on the customer's message. */
const customer = (userText = 'oi'): SessionControlOrigin => ({ source: 'continuity', userText });

const pendingCall = pendingToolCallOf(activeTransactionOf());
const pendingConfirmation: AgentState = {
  active_agent: 'orders_agent',
  next_state: 'WAITING_ORDER_CONFIRMATION',
  pending_tool_call: pendingCall,
  confirmation_required: true,
  route_decision: decisionOf({ reason: 'the user asked for a person' }),
};

describe('SessionControlService', () => {
  describe('gate', () => {
    it('lets a normal turn through', async () => {
      const { result, events } = await inTurn(() => build().service.gate(turnStateOf({ user_text: 'oi' })));
      expect(result).toBeNull();
      expect(events).toHaveLength(0);
    });

    it('rejects every turn of an ended session with SESSION_ALREADY_ENDED_MESSAGE', async () => {
      const { service } = build({ SESSION_ALREADY_ENDED_MESSAGE: 'Already over.' });
      const { result, events } = await inTurn(() =>
        service.gate(
          turnStateOf({
            session_ended: true,
            message_id: 'm9',
            route_decision: decisionOf({ route: 'end_session' }),
          }),
        ),
      );
      expect(result).toMatchObject({
        answer: 'Already over.',
        final_answer: 'Already over.',
        blocked: true,
        session_control: 'END_SESSION',
        session_ended: true,
        human_handoff_requested: false,
        next_state: 'SESSION_ENDED',
        route: 'end_session',
        intent: 'session_already_ended',
        mcp_tools: [],
        route_decision: {
          route: 'end_session',
          method: 'guardrail',
          route_bypassed: false,
          metadata: { session_control: 'END_SESSION', gate: 'session_ended' },
        },
      });
      expect(events.map((e) => e.name)).toEqual(['session.message.rejected_after_end']);
      expect(events[0].payload).toMatchObject({ message_id: 'm9', session_id: 's1', turn: 3 });
    });

    it('treats a SESSION_ENDED next_state as ended even without the flag', async () => {
      const { result } = await inTurn(() =>
        build().service.gate(turnStateOf({ next_state: 'SESSION_ENDED' })),
      );
      expect(result).toMatchObject({ blocked: true, session_ended: true });
    });

    it('keeps the bot silent while a handoff is held', async () => {
      const { service } = build({ HUMAN_HANDOFF_PENDING_MESSAGE: 'Wait for a person.' });
      const { result, events } = await inTurn(() => service.gate(turnStateOf({ human_handoff_held: true })));
      expect(result).toMatchObject({
        answer: 'Wait for a person.',
        blocked: true,
        session_control: 'HUMAN_HANDOFF',
        session_ended: false,
        human_handoff_requested: true,
        next_state: 'HUMAN_HANDOFF_REQUESTED',
        route: 'human_handoff',
        intent: 'held_for_human',
      });
      expect(events.map((e) => e.name)).toEqual(['session.message.held_for_human']);
    });

    it('an ended session wins over a held handoff', async () => {
      const { result, events } = await inTurn(() =>
        build().service.gate(turnStateOf({ session_ended: true, human_handoff_held: true })),
      );
      expect(result?.session_control).toBe('END_SESSION');
      expect(events.map((e) => e.name)).toEqual(['session.message.rejected_after_end']);
    });
  });

  describe('human_handoff node', () => {
    it('sets the handoff contract, emits the event and counts it (notify mode)', async () => {
      const { service, metrics, bus } = build({ HUMAN_HANDOFF_MESSAGE: 'A person will help you.' });
      const { result, events } = await inTurn(
        () =>
          service.humanHandoff({ route_decision: decisionOf({ reason: 'asks for a person' }) }, customer()),
        bus,
      );
      expect(result).toEqual({
        answer: 'A person will help you.',
        session_control: 'HUMAN_HANDOFF',
        human_handoff_requested: true,
        session_ended: false,
        next_state: 'HUMAN_HANDOFF_REQUESTED',
        human_handoff_held: false,
        mcp_tools: [],
        mcp_results: [],
      });
      expect(events.map((e) => e.name)).toEqual(['session.human_handoff.requested']);
      expect(events[0].payload).toMatchObject({ reason: 'asks for a person', source: 'continuity' });
      expect((await metrics.sessionsHandedOff.get()).values).toEqual([
        expect.objectContaining({ labels: { source: 'continuity' }, value: 1 }),
      ]);
    });

    it('the request carries what a person needs to pick the conversation up', async () => {
      const history = Array.from({ length: 8 }, (_, i) => ({
        role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
        content: `m${i}`,
        turn: Math.floor(i / 2) + 1,
        ...(i % 2 === 1 ? { route: 'orders_agent', intent: 'orders_cancel' } : {}),
      }));
      const { events } = await inTurn(() =>
        build().service.humanHandoff(
          {
            ...pendingConfirmation,
            active_agent: undefined,
            intent: 'human_handoff',
            channel: 'whatsapp',
            user_id: 'u-9',
            history,
          },
          customer('quero uma pessoa'),
        ),
      );
      expect(events[0].payload).toMatchObject({
        reason: 'the user asked for a person',
        source: 'continuity',
        channel: 'whatsapp',
        user_id: 'u-9',
        active_agent: 'orders_agent',
        intent: 'orders_cancel',
        pending_transaction: pendingCall,
        user_text: 'quero uma pessoa',
        last_messages: history.slice(-6).map(({ role, content, turn }) => ({ role, content, turn })),
      });
    });

    it('holds the session in hold mode', async () => {
      const { result } = await inTurn(() =>
        build({ HUMAN_HANDOFF_MODE: 'hold' }).service.humanHandoff({}, customer()),
      );
      expect(result.human_handoff_held).toBe(true);
    });

    it('an admin handoff records its source and reason', async () => {
      const { service, metrics, bus } = build();
      const { events } = await inTurn(
        () => service.humanHandoff({}, { source: 'admin', reason: 'operator request' }),
        bus,
      );
      expect(events[0].payload).toMatchObject({ reason: 'operator request', source: 'admin' });
      expect((await metrics.sessionsHandedOff.get()).values[0].labels).toEqual({ source: 'admin' });
    });
  });

  describe('end_session node', () => {
    it('sets the end contract and emits session.end.requested', async () => {
      const { service, metrics, bus } = build({ END_SESSION_MESSAGE: 'Bye.' });
      const { result, events } = await inTurn(
        () =>
          service.endSession(
            { route_decision: decisionOf({ reason: 'done' }), human_handoff_held: true },
            customer(),
          ),
        bus,
      );
      expect(result).toEqual({
        answer: 'Bye.',
        session_control: 'END_SESSION',
        session_ended: true,
        human_handoff_requested: false,
        human_handoff_held: false,
        next_state: 'SESSION_ENDED',
        mcp_tools: [],
        mcp_results: [],
      });
      expect(events.map((e) => e.name)).toEqual(['session.end.requested']);
      expect(events[0].payload).toMatchObject({ reason: 'done', source: 'continuity' });
      expect((await metrics.sessionsEnded.get()).values[0]).toMatchObject({ value: 1 });
    });

    it('uses the default messages', () => {
      expect(build().service.messages).toEqual({
        handoff: 'Vou encaminhar seu atendimento para uma pessoa.',
        end: 'Atendimento encerrado. Obrigado pelo contato.',
      });
    });
  });

  it('resume clears a held handoff so later turns run normally', async () => {
    const { service } = build({ HUMAN_HANDOFF_MODE: 'hold' });
    const { result, events } = await inTurn(() => service.resume());
    expect(result).toEqual({
      human_handoff_held: false,
      human_handoff_requested: false,
      session_control: '',
      next_state: null,
    });
    expect(events.map((e) => e.name)).toEqual(['session.resumed']);
    const { result: gated } = await inTurn(() => service.gate(turnStateOf({ ...result })));
    expect(gated).toBeNull();
  });
});
