import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { ConfigFilesService, continuityConfig } from '@agent/config';
import {
  ClassifiedRoute,
  ContinuityDecision,
  ContinuityFallbackReason,
  ContinuitySignal,
  DomainAgentNode,
  hasPendingTransaction,
  HUMAN_HANDOFF_REQUESTED_STATE,
  RouteDecision,
  SESSION_ENDED_STATE,
  SessionControl,
  TurnState,
  turnText,
} from '@agent/contracts';
import { LlmService, StructuredFailureReason } from '@agent/llm';
import { EventBusService } from '@agent/observability';
import { continuityOutput } from './continuity.output';
import {
  classifierInput,
  CONTINUITY_SYSTEM_PROMPT,
  nonEmptyString,
  targetIntent,
  truncate,
} from './continuity.prompt';

export interface ContinuityOutcome {
  signal: ContinuitySignal;
  /** The accepted decision (CONTINUE with an active agent, HUMAN_HANDOFF, END_SESSION), or null → Enterprise Router. */
  decision: RouteDecision | null;
  /** An accepted ROUTE that names one enabled intent: the router takes it instead of asking its own model. */
  route: ClassifiedRoute | null;
}

/** Longest model reason kept in events, signals and decisions. */
const REASON_MAX_CHARS = 500;

const DEFAULT_REASONS: Record<'CONTINUE' | SessionControl, string> = {
  CONTINUE: 'the message continues under the active agent',
  HUMAN_HANDOFF: 'the user asked to be served by a person',
  END_SESSION: 'the user asked to end the conversation',
};

/** States that belong to a session-control node; a continued agent must not inherit them. */
const SESSION_STATES: ReadonlySet<string> = new Set([HUMAN_HANDOFF_REQUESTED_STATE, SESSION_ENDED_STATE]);

interface Classification {
  decision: ContinuityDecision;
  confidence: number;
  reason: string;
  /** The capability or pending topic a ROUTE names, as the model wrote it. */
  target: string | null;
  /** Set when the classifier gave no usable answer: the label is then ROUTE with confidence 0. */
  failure: ContinuityFallbackReason | null;
}

/**
 * Facade of ContinuityModule: the semantic stickiness classifier. One small-model call per turn decides whether
 * the active agent keeps the turn (the Enterprise Router is skipped), the user wants a person or the end of
 * the session, or the router must decide. Only the model's label, its confidence and two technical facts
 * (the threshold and whether the active agent exists) decide the outcome; every failure routes normally.
 */
@Injectable()
export class ContinuityService implements OnModuleInit {
  private readonly logger = new Logger(ContinuityService.name);
  /**
   * On unless switched off, but only where the classifier's profile has a model: without one, a call per turn
   * could only fail, so there is none (and no log line per turn), exactly as with the feature off.
   */
  readonly enabled: boolean;
  /** Why the feature is off, for the start-up line; null when it is on. */
  private readonly offReason: string | null;

  constructor(
    @Inject(continuityConfig.KEY) private readonly config: ConfigType<typeof continuityConfig>,
    private readonly files: ConfigFilesService,
    private readonly llm: LlmService,
    private readonly events: EventBusService,
  ) {
    const profile = llm.resolveProfile(config.ROUTE_STICKINESS_LLM_PROFILE);
    this.offReason = !config.ENABLE_ROUTE_STICKINESS
      ? 'ENABLE_ROUTE_STICKINESS=false'
      : profile === null
        ? `the classifier profile "${config.ROUTE_STICKINESS_LLM_PROFILE}" is not defined`
        : profile.reachable
          ? null
          : `the classifier profile "${profile.name}" has ${profile.missing ?? 'no model'}`;
    this.enabled = this.offReason === null;
  }

  /** The one line that says whether stickiness runs, and why not. */
  onModuleInit(): void {
    if (this.offReason === null) {
      this.logger.log(
        `Route stickiness on: profile ${this.profileName}, strategy ${this.config.ROUTE_STICKINESS_STRATEGY}`,
      );
    } else {
      this.logger.log(`Route stickiness off: ${this.offReason}; the Enterprise Router decides every turn`);
    }
  }

  get profileName(): string {
    return this.config.ROUTE_STICKINESS_LLM_PROFILE;
  }

  /**
   * Classifies the current turn. Null when the feature is disabled (no classifier call at all) or the turn has
   * no text to classify; otherwise the signal, and the decision when one was accepted.
   */
  async evaluate(state: TurnState): Promise<ContinuityOutcome | null> {
    if (!this.enabled) return null;
    const text = turnText(state).trim();
    if (text === '') return null;

    const intents = this.files.routings.for(state.agent_id).intents.filter((intent) => intent.enabled);
    const { activeAgent, payload } = classifierInput(
      state,
      intents,
      text,
      this.config.ROUTE_STICKINESS_HISTORY_TURNS,
    );

    const started = performance.now();
    const classification = await this.classify(payload);
    const latencyMs = Math.round((performance.now() - started) * 100) / 100;

    const { decision: label, confidence } = classification;
    let fallbackReason: ContinuityFallbackReason | null = classification.failure;
    if (fallbackReason === null && label === 'CONTINUE' && activeAgent === '') {
      fallbackReason = 'no_active_agent';
    }
    if (fallbackReason === null && confidence < this.config.ROUTE_STICKINESS_CONFIDENCE_THRESHOLD) {
      fallbackReason = 'below_threshold';
    }
    const accepted = fallbackReason === null;
    const decision = accepted ? this.decisionFor(label, classification, state, activeAgent) : null;
    const routed = accepted && label === 'ROUTE' ? targetIntent(classification.target, state, intents) : null;

    const signal: ContinuitySignal = {
      decision: label,
      confidence,
      accepted,
      reason: classification.reason,
      fallback_reason: fallbackReason,
      latency_ms: latencyMs,
      profile_name: this.profileName,
    };
    this.events.emit('router.continuity', {
      decision: label,
      confidence,
      active_agent: activeAgent,
      route_bypassed: decision !== null,
      profile_name: this.profileName,
      accepted,
      fallback_reason: fallbackReason,
      latency_ms: latencyMs,
      reason: classification.reason,
    });
    return {
      signal,
      decision,
      route: routed === null ? null : { intent: routed, confidence, reason: classification.reason },
    };
  }

  /**
   * Shadow mode: whether this accepted CONTINUE turn should also run the Enterprise Router off the critical
   * path, to measure how often the router would have agreed. ROUTE_STICKINESS_SHADOW_RATE is the sampled share.
   */
  shouldShadow(): boolean {
    const rate = this.config.ROUTE_STICKINESS_SHADOW_RATE;
    return this.enabled && rate > 0 && Math.random() < rate;
  }

  /** Records the shadow router's decision against the agent continuity kept; returns whether they agreed. */
  recordShadow(continuityAgent: string, routerDecision: RouteDecision): boolean {
    const routerAgent = routerDecision.agent ?? routerDecision.route;
    const agreed = routerAgent === continuityAgent;
    this.events.emit('router.continuity.shadow', {
      continuity_agent: continuityAgent,
      router_agent: routerAgent,
      router_intent: routerDecision.intent,
      router_method: routerDecision.method,
      agreed,
    });
    return agreed;
  }

  /**
   * One shadow comparison, safe to start without awaiting: runs the router once and records the comparison.
   * Resolves to whether they agreed, or null when nothing was compared (the router failed, or the kept route is
   * not a domain agent); it never rejects, so a shadow run can never affect the turn.
   */
  async runShadow(
    state: TurnState,
    continuityAgent: string,
    route: () => Promise<RouteDecision>,
  ): Promise<boolean | null> {
    // Only a kept domain agent is comparable with the router; a session node (human_handoff, end_session)
    // would always read as a disagreement and waste a router call.
    if (this.intentsOf(state, continuityAgent).length === 0) return null;
    try {
      return this.recordShadow(continuityAgent, await route());
    } catch (error) {
      this.logger.warn(`shadow router run failed: ${String(error)}`);
      return null;
    }
  }

  private async classify(payload: string): Promise<Classification> {
    const result = await this.llm.structured({
      profile: this.profileName,
      messages: [
        { role: 'system', content: CONTINUITY_SYSTEM_PROMPT },
        { role: 'user', content: payload },
      ],
      output: continuityOutput,
      maxTokens: this.config.ROUTE_STICKINESS_MAX_TOKENS,
    });
    // Fail-safe by contract: whatever goes wrong here, the turn goes to the Enterprise Router.
    if (!result.ok) {
      if (result.reason !== 'invalid_output') {
        this.logger.warn(`continuity classifier failed, the Enterprise Router decides: ${result.detail}`);
      }
      return failure(fallbackOf(result.reason), result.reason);
    }
    return {
      decision: result.value.decision,
      confidence: result.value.confidence,
      reason: truncate((result.value.reason ?? '').trim(), REASON_MAX_CHARS),
      target: nonEmptyString(result.value.target),
      failure: null,
    };
  }

  private decisionFor(
    label: ContinuityDecision,
    classification: Classification,
    state: TurnState,
    activeAgent: DomainAgentNode,
  ): RouteDecision | null {
    switch (label) {
      case 'HUMAN_HANDOFF':
      case 'END_SESSION':
        return this.sessionControlDecision(label, classification);
      case 'CONTINUE':
        return activeAgent === '' ? null : this.continueDecision(classification, state, activeAgent);
      case 'ROUTE':
        return null;
    }
  }

  private sessionControlDecision(control: SessionControl, classification: Classification): RouteDecision {
    const node = control === 'HUMAN_HANDOFF' ? 'human_handoff' : 'end_session';
    return {
      route: node,
      agent: node,
      intent: node,
      domain: null,
      mcp_tools: [],
      confidence: classification.confidence,
      method: 'continuity',
      reason: classification.reason || DEFAULT_REASONS[control],
      next_state: null,
      route_bypassed: true,
      ...(control === 'HUMAN_HANDOFF' ? { handoff: true } : {}),
      metadata: {
        session_control: control,
        route_bypassed: true,
        continuity_decision: control,
        continuity_profile: this.profileName,
      },
    };
  }

  /**
   * The active agent keeps the turn with the facts of the decision that made it active (intent, domain, tools)
   * and the current next_state, so a pending transaction goes on as if the router had kept it.
   */
  private continueDecision(
    classification: Classification,
    state: TurnState,
    activeAgent: DomainAgentNode,
  ): RouteDecision {
    const previous = state.route_decision;
    // Another decision (a blocked input, an agent handoff) may have replaced route_decision since the agent
    // became active; its intent and tools are not the agent's, so the state's own facts are used instead.
    const own = previous?.agent === activeAgent ? previous : undefined;
    const intent = this.continuedIntent(own, state, activeAgent);
    const domain = nonEmptyString(own?.domain) ?? nonEmptyString(state.domain);
    const tools = own?.mcp_tools ?? this.ownTools(state, activeAgent);
    const nextState = nonEmptyString(state.next_state);
    return {
      route: activeAgent,
      agent: activeAgent,
      intent: intent ?? 'continuity',
      domain,
      mcp_tools: tools,
      confidence: classification.confidence,
      method: 'continuity',
      reason: classification.reason || DEFAULT_REASONS.CONTINUE,
      next_state: nextState !== null && !SESSION_STATES.has(nextState) ? nextState : null,
      route_bypassed: true,
      metadata: {
        route_bypassed: true,
        continuity_decision: 'CONTINUE',
        continuity_profile: this.profileName,
      },
    };
  }

  /**
   * The intent a continued turn keeps: the previous decision's. A decision that held a pending operation's state
   * names that state (`state:<STATE>`); once nothing is pending any more (the operation ended), the turn goes on
   * with the operation's own intent instead of a state that no longer exists.
   */
  private continuedIntent(own: RouteDecision | undefined, state: TurnState, agent: string): string | null {
    if (own?.next_state && !hasPendingTransaction(state)) {
      const recorded = [own.metadata.transaction_intent, state.last_transaction?.intent];
      return recorded.find((name) => this.isIntentOf(name, state, agent)) ?? this.ownIntent(state, agent);
    }
    return nonEmptyString(own?.intent) ?? this.ownIntent(state, agent);
  }

  private isIntentOf(name: string | null | undefined, state: TurnState, agent: string): name is string {
    return this.intentsOf(state, agent).some((intent) => intent.name === name);
  }

  /** The state's intent when it is one of the active agent's enabled intents. */
  private ownIntent(state: TurnState, agent: string): string | null {
    const name = nonEmptyString(state.intent);
    return this.isIntentOf(name, state, agent) ? name : null;
  }

  /** The state's tools when they came with the agent's own intent, else every tool of the agent's intents. */
  private ownTools(state: TurnState, agent: string): string[] {
    const own = this.ownIntent(state, agent);
    if (own !== null && state.mcp_tools) return state.mcp_tools;
    return [...new Set(this.intentsOf(state, agent).flatMap((i) => i.mcp_tools))];
  }

  private intentsOf(state: TurnState, agent: string) {
    return this.files.routings.for(state.agent_id).intents.filter((i) => i.enabled && i.agent === agent);
  }
}

function failure(reason: ContinuityFallbackReason, kind: string): Classification {
  return {
    decision: 'ROUTE',
    confidence: 0,
    reason: `continuity_error:${kind}`,
    target: null,
    failure: reason,
  };
}

function fallbackOf(reason: StructuredFailureReason): ContinuityFallbackReason {
  switch (reason) {
    case 'timeout':
      return 'timeout';
    case 'invalid_output':
      return 'invalid_output';
    case 'not_configured':
    case 'http_error':
    case 'cancelled':
    case 'error':
      return 'error';
  }
}
