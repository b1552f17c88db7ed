import { Inject, Injectable } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { sessionControlConfig } from '@agent/config';
import { AgentState, HUMAN_HANDOFF_REQUESTED_STATE, SESSION_ENDED_STATE } from '@agent/contracts';
import { EventBusService, MetricsService } from '@agent/observability';

export type SessionControlSource = 'continuity' | 'admin';

/** Facade of SessionControlModule: the global human_handoff / end_session nodes and the session gate. */
@Injectable()
export class SessionControlService {
  constructor(
    @Inject(sessionControlConfig.KEY) private readonly config: ConfigType<typeof sessionControlConfig>,
    private readonly events: EventBusService,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * First check of input_guardrails: an ended session rejects the turn; a held handoff keeps the bot silent.
   * Returns the state patch of the rejection, or null when the turn may proceed.
   */
  gate(state: AgentState): Partial<AgentState> | null {
    if (state.session_ended === true) {
      this.events.emit('session.message.rejected_after_end', {});
      return {
        answer: this.config.SESSION_ALREADY_ENDED_MESSAGE,
        final_answer: this.config.SESSION_ALREADY_ENDED_MESSAGE,
        blocked: true,
        session_control: 'END_SESSION',
        session_ended: true,
        human_handoff_requested: false,
        next_state: SESSION_ENDED_STATE,
        route: 'end_session',
        intent: 'session_already_ended',
        mcp_tools: [],
        mcp_results: [],
      };
    }
    if (state.human_handoff_held === true) {
      this.events.emit('session.message.held_for_human', {});
      return {
        answer: this.config.HUMAN_HANDOFF_PENDING_MESSAGE,
        final_answer: this.config.HUMAN_HANDOFF_PENDING_MESSAGE,
        blocked: true,
        session_control: 'HUMAN_HANDOFF',
        session_ended: false,
        human_handoff_requested: true,
        next_state: HUMAN_HANDOFF_REQUESTED_STATE,
        route: 'human_handoff',
        intent: 'held_for_human',
        mcp_tools: [],
        mcp_results: [],
      };
    }
    return null;
  }

  /** The `human_handoff` node: no agent, tool or RAG runs; the event is the integration contract. */
  humanHandoff(
    state: AgentState,
    source: SessionControlSource = 'continuity',
    reason?: string,
  ): Partial<AgentState> {
    this.events.emit('session.human_handoff.requested', {
      reason: reason ?? decisionReason(state),
      source,
    });
    this.metrics.sessionsHandedOff.inc({ source });
    return {
      answer: this.config.HUMAN_HANDOFF_MESSAGE,
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
  endSession(
    state: AgentState,
    source: SessionControlSource = 'continuity',
    reason?: string,
  ): Partial<AgentState> {
    this.events.emit('session.end.requested', {
      reason: reason ?? decisionReason(state),
      source,
    });
    this.metrics.sessionsEnded.inc({ source });
    return {
      answer: this.config.END_SESSION_MESSAGE,
      session_control: 'END_SESSION',
      session_ended: true,
      human_handoff_requested: false,
      human_handoff_held: false,
      next_state: SESSION_ENDED_STATE,
      mcp_tools: [],
      mcp_results: [],
    };
  }

  /** Clears a held handoff (admin resume): later turns run normally. */
  resume(): Partial<AgentState> {
    this.events.emit('session.resumed', { source: 'admin' });
    return {
      human_handoff_held: false,
      human_handoff_requested: false,
      session_control: '',
      next_state: null,
    };
  }

  get messages(): { handoff: string; end: string } {
    return { handoff: this.config.HUMAN_HANDOFF_MESSAGE, end: this.config.END_SESSION_MESSAGE };
  }
}

function decisionReason(state: AgentState): string {
  const reason = state.route_decision?.reason;
  return typeof reason === 'string' ? reason : '';
}
