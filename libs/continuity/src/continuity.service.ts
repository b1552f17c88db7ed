import { Inject, Injectable } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { continuityConfig } from '@agent/config';
import type { AgentState, ContinuitySignal, RouteDecision } from '@agent/contracts';

export interface ContinuityOutcome {
  signal: ContinuitySignal;
  /** The accepted decision (CONTINUE with an active agent, HUMAN_HANDOFF, END_SESSION), or null → Enterprise Router. */
  decision: RouteDecision | null;
}

/** Facade of ContinuityModule: the semantic stickiness classifier. */
@Injectable()
export class ContinuityService {
  constructor(@Inject(continuityConfig.KEY) private readonly config: ConfigType<typeof continuityConfig>) {}

  get enabled(): boolean {
    return this.config.ENABLE_ROUTE_STICKINESS;
  }

  /** Null when the feature is disabled: no classifier call at all. */
  evaluate(state: AgentState): Promise<ContinuityOutcome | null> {
    void state;
    return Promise.resolve(null);
  }
}
