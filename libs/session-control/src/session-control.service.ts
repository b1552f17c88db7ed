import { Inject, Injectable } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { appConfig, SERVICE_MESSAGES, sessionControlConfig } from '@agent/config';
import {
  AgentState,
  BLOCKED_ROUTE,
  HandoffRequest,
  HUMAN_HANDOFF_REQUESTED_STATE,
  promptHistory,
  RouteDecision,
  SESSION_ENDED_STATE,
  SessionControl,
  TurnPatch,
  TurnState,
} from '@agent/contracts';
import { EventBusService } from '@agent/observability';

/**
 * Who asked for a session control: the turn's routing, on the customer's message (`continuity`), or an operator
 * through the admin API, outside any turn, with a reason.
 */
export type SessionControlOrigin =
  { source: 'continuity'; userText: string } | { source: 'admin'; reason: string };

/** Facade of SessionControlModule: the global human_handoff / end_session nodes and the session gate. */
@Injectable()
export class SessionControlService {
  private readonly texts: { handoff: string; end: string; alreadyEnded: string; handoffPending: string };

  constructor(
    @Inject(sessionControlConfig.KEY) private readonly config: ConfigType<typeof sessionControlConfig>,
    @Inject(appConfig.KEY) app: ConfigType<typeof appConfig>,
    private readonly events: EventBusService,
  ) {
    const catalogue = SERVICE_MESSAGES[app.DEFAULT_LANGUAGE];
    this.texts = {
      handoff: config.HUMAN_HANDOFF_MESSAGE ?? catalogue.human_handoff,
      end: config.END_SESSION_MESSAGE ?? catalogue.end_session,
      alreadyEnded: config.SESSION_ALREADY_ENDED_MESSAGE ?? catalogue.session_already_ended,
      handoffPending: config.HUMAN_HANDOFF_PENDING_MESSAGE ?? catalogue.human_handoff_pending,
    };
  }

  /**
   * First check of input_guardrails: an ended session rejects the turn; a held handoff keeps the bot silent.
   * Returns the state patch of the rejection, or null when the turn may proceed. The rejection describes this
   * turn completely (route_decision included), so the response never shows the decision of an earlier turn.
   */
  gate(state: TurnState): TurnPatch | null {
    // next_state is checked too: a state that reached SESSION_ENDED by any path is ended, whatever the flag says.
    if (state.session_ended === true || state.next_state === SESSION_ENDED_STATE) {
      this.events.emit('session.message.rejected_after_end', { message_id: state.message_id });
      return this.rejection('END_SESSION', this.texts.alreadyEnded);
    }
    if (state.human_handoff_held === true) {
      this.events.emit('session.message.held_for_human', { message_id: state.message_id });
      return this.rejection('HUMAN_HANDOFF', this.texts.handoffPending);
    }
    return null;
  }

  /**
   * The `human_handoff` node: no agent, tool or RAG runs. The event is the integration contract: it carries
   * what a person needs to pick the conversation up.
   */
  humanHandoff(state: AgentState, origin: SessionControlOrigin): TurnPatch {
    this.events.emit('session.human_handoff.requested', handoffRequest(state, origin));
    return {
      answer: this.texts.handoff,
      session_control: 'HUMAN_HANDOFF',
      human_handoff_requested: true,
      session_ended: false,
      next_state: HUMAN_HANDOFF_REQUESTED_STATE,
      human_handoff_held: this.config.HUMAN_HANDOFF_MODE === 'hold',
      mcp_tools: [],
      mcp_results: [],
    };
  }

  /** The `end_session` node; `session.end.requested` is emitted before persistence. */
  endSession(state: AgentState, origin: SessionControlOrigin): TurnPatch {
    this.events.emit('session.end.requested', { reason: reasonOf(state, origin), source: origin.source });
    return {
      answer: this.texts.end,
      session_control: 'END_SESSION',
      session_ended: true,
      human_handoff_requested: false,
      human_handoff_held: false,
      next_state: SESSION_ENDED_STATE,
      mcp_tools: [],
      mcp_results: [],
    };
  }

  /** A person took the waiting conversation (admin claim); the state does not change. */
  claim(claimedBy: string): TurnPatch {
    this.events.emit('session.handoff.claimed', { source: 'admin', claimed_by: claimedBy });
    return {};
  }

  /** Clears a held handoff (admin resume): later turns run normally. */
  resume(claimedBy: string | null = null): TurnPatch {
    this.events.emit('session.resumed', { source: 'admin', claimed_by: claimedBy });
    return {
      human_handoff_held: false,
      human_handoff_requested: false,
      session_control: '',
      next_state: null,
    };
  }

  private rejection(control: SessionControl, message: string): TurnPatch {
    const ended = control === 'END_SESSION';
    const decision: RouteDecision = {
      route: ended ? 'end_session' : 'human_handoff',
      agent: null,
      intent: ended ? 'session_already_ended' : 'held_for_human',
      domain: null,
      mcp_tools: [],
      confidence: 1,
      method: 'guardrail',
      reason: ended ? 'the session has ended' : 'the session is waiting for a person',
      next_state: ended ? SESSION_ENDED_STATE : HUMAN_HANDOFF_REQUESTED_STATE,
      route_bypassed: false,
      metadata: { session_control: control, gate: ended ? 'session_ended' : 'held_for_human' },
    };
    return {
      answer: message,
      final_answer: message,
      blocked: true,
      session_control: control,
      session_ended: ended,
      human_handoff_requested: !ended,
      next_state: decision.next_state,
      route: decision.route,
      intent: decision.intent,
      route_decision: decision,
      mcp_tools: [],
      mcp_results: [],
    };
  }

  get messages(): { handoff: string; end: string } {
    return { handoff: this.texts.handoff, end: this.texts.end };
  }
}

/** Messages of the conversation a handoff request shows. */
const HANDOFF_LAST_MESSAGES = 6;
/** Routes that are not an agent serving the customer. */
const NON_AGENT_ROUTES = new Set(['human_handoff', 'end_session', BLOCKED_ROUTE]);

function handoffRequest(state: AgentState, origin: SessionControlOrigin): HandoffRequest {
  const history = promptHistory(state.history);
  // The agent serving the conversation is the one that answered last: this turn's routing already says handoff.
  const served = [...history]
    .reverse()
    .find((m) => m.role === 'assistant' && m.route !== undefined && !NON_AGENT_ROUTES.has(m.route));
  return {
    reason: reasonOf(state, origin),
    source: origin.source,
    channel: state.channel ?? null,
    user_id: state.user_id ?? null,
    active_agent: served?.route ?? null,
    intent: served?.intent ?? null,
    pending_transaction: state.active_transaction ?? state.pending_tool_call ?? null,
    user_text: origin.source === 'continuity' ? origin.userText : null,
    last_messages: history.slice(-HANDOFF_LAST_MESSAGES).map((m) => ({
      role: m.role,
      content: m.content,
      ...(m.turn === undefined ? {} : { turn: m.turn }),
    })),
  };
}

/** An operator's reason, else the routing decision's that sent the turn to the session control. */
function reasonOf(state: AgentState, origin: SessionControlOrigin): string {
  return origin.source === 'admin' ? origin.reason : (state.route_decision?.reason ?? '');
}
