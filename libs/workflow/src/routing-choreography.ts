import type { ConfigType } from '@nestjs/config';
import type { continuityConfig } from '@agent/config';
import type { ContinuityOutcome, ContinuityService } from '@agent/continuity';
import {
  BLOCKED_ROUTE,
  RailDecision,
  RouteDecision,
  TurnPatch,
  turnRailDecisions,
  TurnState,
} from '@agent/contracts';
import { GuardrailsService, reportedCodes } from '@agent/guardrails';
import type { RoutingService } from '@agent/routing';
import { isolated, Isolated } from './event-fork';

type NodePatch = TurnPatch;

/** How continuity and the Enterprise Router share a turn (ROUTE_STICKINESS_STRATEGY). */
type StickinessStrategy = ConfigType<typeof continuityConfig>['ROUTE_STICKINESS_STRATEGY'];

/** What the choreography needs of the feature services. */
export interface RoutingPorts {
  guardrails: Pick<GuardrailsService, 'inputVerdict'>;
  continuity: Pick<ContinuityService, 'enabled' | 'evaluate' | 'shouldShadow' | 'runShadow'>;
  routing: Pick<RoutingService, 'route' | 'settlement'>;
  strategy: StickinessStrategy;
}

interface Routed {
  outcome: ContinuityOutcome | null;
  routed: RouteDecision | null;
}

/**
 * The `routing_decision` node's choreography: the guardrail model's input verdict beside routing, and within
 * routing the continuity classifier beside the Enterprise Router where the strategy says so. Every run that
 * may be discarded records into its own event buffer (`isolated`), so only what the turn takes reads as its own.
 */
export class RoutingChoreography {
  constructor(private readonly ports: RoutingPorts) {}

  /**
   * The verdict and routing start together. A BLOCK discards the routing result (only its model costs stay on
   * record), so no agent, tool or memory write runs; otherwise routing's events join the turn and its decision
   * applies.
   */
  /** `onShadow` hears the shadow comparison a CONTINUE turn starts (it never rejects), for the turn to await. */
  async decide(
    state: TurnState,
    onShadow: (comparison: Promise<unknown>) => void = () => undefined,
  ): Promise<NodePatch> {
    const routing = isolated(() => this.route(state), 'input_guardrail_block');
    // A blocked turn discards routing before it settles: never let it become an unhandled rejection.
    routing.catch(() => undefined);
    const verdict = await this.ports.guardrails.inputVerdict(state);
    const decisions = [...turnRailDecisions(state), ...verdict.decisions];
    if (verdict.blocked) {
      void routing.then(
        (run) => run.keepCostOnly(),
        () => undefined,
      );
      return inputBlocked(state, verdict.message ?? '', decisions);
    }
    const run = await routing;
    run.adopt();
    return { ...this.routed(state, run.result, onShadow), guardrail_decisions: decisions };
  }

  /**
   * Continuity first (when enabled), so a person or the end of the session is always reachable; then the
   * Enterprise Router (or the supervisor plan) exactly as if the feature were off.
   */
  private routed(
    state: TurnState,
    { outcome, routed }: Routed,
    onShadow: (comparison: Promise<unknown>) => void,
  ): NodePatch {
    const decision = outcome?.decision ?? routed;
    if (!decision) throw new Error('routing produced no decision');
    const { continuity } = this.ports;
    if (outcome?.decision && outcome.signal.decision === 'CONTINUE' && continuity.shouldShadow()) {
      const kept = outcome.decision.agent ?? '';
      // Beside the agent: the shadow router never changes the turn; it records agreement in the turn's events,
      // so the turn stores them only once it is done (see WorkflowService).
      onShadow(
        continuity.runShadow(state, kept, async () => (await this.isolatedRoute(state, 'shadow')).result),
      );
    }
    const sessionControl = decision.metadata.session_control ?? '';
    const interruption = decision.metadata.transaction_interruption;
    return {
      route: decision.route,
      intent: decision.intent,
      route_decision: decision,
      domain: decision.domain ?? undefined,
      mcp_tools: decision.mcp_tools,
      next_state: decision.next_state,
      active_agent: decision.agent ?? undefined,
      route_bypassed: decision.method === 'continuity',
      session_control: sessionControl,
      human_handoff_requested: sessionControl === 'HUMAN_HANDOFF',
      session_ended: sessionControl === 'END_SESSION',
      continuity_signal: outcome?.signal,
      ...(interruption === undefined ? {} : { transaction_interruption: interruption }),
    };
  }

  /**
   * Continuity first, then the Enterprise Router only when continuity did not decide (sequential); a ROUTE
   * verdict that names an intent stands in for the router's model (`RoutingService.route`).
   * Speculation starts the router together with the classifier: a ROUTE turn waits for max(classifier, router)
   * instead of their sum; when continuity decides, or names the intent of a turn only the router's model would
   * settle, the router's result is discarded and only the cost of its LLM calls stays on record. `speculative`
   * does it on every turn; `adaptive` only when the router's model will decide the intent, since a keyword match
   * or a pending state costs microseconds without it.
   */
  private async route(state: TurnState): Promise<Routed> {
    const { continuity, routing, strategy } = this.ports;
    if (!continuity.enabled) return { outcome: null, routed: await routing.route(state) };
    const settlement = routing.settlement(state);
    const speculate = strategy === 'speculative' || (strategy === 'adaptive' && settlement === 'model');
    if (!speculate) {
      const outcome = await continuity.evaluate(state);
      if (outcome?.decision) return { outcome, routed: null };
      return { outcome, routed: await routing.route(state, outcome?.route ?? null) };
    }
    const speculative = this.isolatedRoute(state, 'speculative');
    // The speculation may be discarded before it settles: never let it become an unhandled rejection.
    speculative.catch(() => undefined);
    const outcome = await continuity.evaluate(state);
    const classified = settlement === 'model' ? (outcome?.route ?? null) : null;
    if (outcome?.decision || classified) {
      void speculative.then(
        (run) => run.keepCostOnly(),
        () => undefined,
      );
      return { outcome, routed: classified ? await routing.route(state, classified) : null };
    }
    const run = await speculative;
    run.adopt();
    return { outcome, routed: run.result };
  }

  /** The Enterprise Router in its own event buffer. */
  private isolatedRoute(
    state: TurnState,
    purpose: 'speculative' | 'shadow',
  ): Promise<Isolated<RouteDecision>> {
    return isolated(() => this.ports.routing.route(state), purpose);
  }
}

/** The patch of a turn the input guardrails blocked: the safe message, and nothing routed. */
export function inputBlocked(state: TurnState, message: string, decisions: RailDecision[]): NodePatch {
  const decision: RouteDecision = {
    route: BLOCKED_ROUTE,
    agent: null,
    intent: 'input_guardrail_blocked',
    domain: null,
    mcp_tools: [],
    confidence: 1,
    method: 'guardrail',
    reason: 'input guardrail blocked the message',
    next_state: state.next_state ?? null,
    route_bypassed: false,
    metadata: { codes: reportedCodes(decisions.filter((d) => !d.allowed)) },
  };
  return {
    blocked: true,
    answer: message,
    guardrail_decisions: decisions,
    route: BLOCKED_ROUTE,
    intent: 'input_guardrail_blocked',
    route_decision: decision,
    mcp_tools: [],
    mcp_results: [],
    judge_results: [],
  };
}
