import { Injectable } from '@nestjs/common';
import { ConfigFilesService } from '@agent/config';
import type { AgentState, DomainAgentNode, RouteDecision } from '@agent/contracts';

/** Runs one domain agent on the given (isolated) state; supplied by the workflow. */
export type AgentRunner = (node: DomainAgentNode, state: AgentState) => Promise<Partial<AgentState>>;
import { EventBusService } from '@agent/observability';

/** Facade of RoutingModule: the Enterprise Router. */
@Injectable()
export class RoutingService {
  constructor(
    private readonly files: ConfigFilesService,
    private readonly events: EventBusService,
  ) {}

  get mode(): 'router' | 'supervisor' {
    return this.files.routing.router.mode;
  }

  /** Decides the route of a turn that continuity did not keep. */
  route(state: AgentState): Promise<RouteDecision> {
    void state;
    const fallback = this.files.routing.router.fallback_agent;
    const decision: RouteDecision = {
      route: fallback,
      agent: fallback,
      intent: 'fallback',
      domain: null,
      mcp_tools: [],
      confidence: 0.1,
      method: 'fallback',
      reason: 'no routing stage matched',
      next_state: null,
      route_bypassed: false,
      metadata: {},
    };
    this.events.emit('router.decision', {
      route: decision.route,
      intent: decision.intent,
      method: decision.method,
      confidence: decision.confidence,
    });
    return Promise.resolve(decision);
  }

  /** The `supervisor_agent` node (ROUTING_MODE=supervisor). */
  superviseTurn(state: AgentState, runAgent: AgentRunner): Promise<Partial<AgentState>> {
    return runAgent(this.files.routing.router.fallback_agent as DomainAgentNode, state);
  }
}
