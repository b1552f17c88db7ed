import { Inject, Injectable } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { ConfigFilesService, PerAgent, routingConfig } from '@agent/config';
import type { ClassifiedRoute, RouteDecision, TurnPatch, TurnState } from '@agent/contracts';
import { LlmService } from '@agent/llm';
import { EventBusService } from '@agent/observability';
import { RouteSettlement, Router } from './router';
import { AgentRunner } from './supervisor';

export type { AgentRunner } from './supervisor';
export type { RouteSettlement } from './router';

/**
 * Facade of RoutingModule: every turn goes to the Enterprise Router of its agent_id, built from that agent's
 * routing file (agents.yaml `routing`) or routing.yaml.
 */
@Injectable()
export class RoutingService {
  private readonly routers: PerAgent<Router>;

  constructor(
    files: ConfigFilesService,
    events: EventBusService,
    llm: LlmService,
    @Inject(routingConfig.KEY) env: ConfigType<typeof routingConfig>,
  ) {
    this.routers = files.routings.map((file) => new Router(file, files.tools, events, llm, env));
  }

  /** Decides the route of a turn that continuity did not keep (`classified`: see `Router.route`). */
  route(state: TurnState, classified: ClassifiedRoute | null = null): Promise<RouteDecision> {
    return this.router(state).route(state, classified);
  }

  /** What `route(state)` needs, known without running it (see `Router.settlement`). */
  settlement(state: TurnState): RouteSettlement {
    return this.router(state).settlement(state);
  }

  /** The agents whose intents' keywords the turn's message matches (see `Router.keywordAgents`). */
  keywordAgents(state: TurnState): ReadonlySet<string> {
    return this.router(state).keywordAgents(state);
  }

  /** The keyword stage's decision when it settles the turn alone (see `Router.keywordRoute`). */
  keywordRoute(state: TurnState): RouteDecision | null {
    return this.router(state).keywordRoute(state);
  }

  /** The `supervisor_agent` node (supervisor mode): plan, run each topic isolated, compose one answer. */
  superviseTurn(state: TurnState, runAgent: AgentRunner): Promise<TurnPatch> {
    return this.router(state).superviseTurn(state, runAgent);
  }

  /** Router mode, after the agent answered: handled and pending topics (see `Router.followUp`). */
  followUp(state: TurnState, patch: TurnPatch): TurnPatch {
    return this.router(state).followUp(state, patch);
  }

  private router(state: TurnState): Router {
    return this.routers.for(state.agent_id);
  }
}
