import { Injectable } from '@nestjs/common';
import { AgentsService } from '@agent/agents';
import type { AgentState } from '@agent/contracts';
import { SessionControlService, SessionControlOrigin } from '@agent/session-control';

/**
 * The global session nodes as the turn graph and the admin API run them: session control's contract, and the
 * interruption of the operation that was waiting for the customer (the transaction engine's transition).
 */
@Injectable()
export class SessionNodes {
  constructor(
    private readonly sessionControl: SessionControlService,
    private readonly agents: AgentsService,
  ) {}

  humanHandoff(state: AgentState, origin: SessionControlOrigin): Partial<AgentState> {
    // The handoff first: its summary shows the operation the customer was in the middle of.
    const handoff = this.sessionControl.humanHandoff(state, origin);
    return { ...this.agents.interruptPending(state, 'human_handoff'), ...handoff };
  }

  endSession(state: AgentState, origin: SessionControlOrigin): Partial<AgentState> {
    const end = this.sessionControl.endSession(state, origin);
    return { ...this.agents.interruptPending(state, 'end_session'), ...end };
  }
}
