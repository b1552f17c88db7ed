import { randomUUID } from 'node:crypto';
import { ConfigType } from '@nestjs/config';
import { IntentConfig, routingConfig, RoutingFile, StatePolicyConfig, ToolsFile } from '@agent/config';
import {
  ClassifiedRoute,
  DomainAgentNode,
  HandledTopic,
  PendingTopic,
  RouteDecision,
  RouteMetadata,
  routeTools,
  TurnPatch,
  TurnState,
  turnText,
} from '@agent/contracts';
import { LlmService } from '@agent/llm';
import { EventBusService } from '@agent/observability';
import { IntentCatalogue, STATE_INTENT_PREFIX } from './intent-catalogue';
import { KeywordMatch } from './keyword-matcher';
import {
  ClassifyContext,
  IntentClassification,
  IntentRejection,
  LlmIntentClassifier,
} from './llm-intent-classifier';
import { fillTopics, readPendingTopics } from './pending-topics';
import { AgentRunner, TurnSupervisor } from './supervisor';

export type RouteSettlement = 'deterministic' | 'state_policy' | 'model';

const FALLBACK_CONFIDENCE = 0.1;
/** Topics `handled_topics` keeps, newest last: the state stays bounded. */
const HANDLED_TOPICS_KEPT = 20;

/** Why the LLM stage did not decide, as decision metadata. */
function rejectionMetadata(rejection: IntentRejection): RouteMetadata {
  return {
    llm_rejection: rejection.reason,
    llm_rejection_detail: rejection.detail,
    ...(rejection.intent !== undefined ? { llm_intent: rejection.intent } : {}),
    ...(rejection.confidence !== undefined ? { llm_confidence: rejection.confidence } : {}),
  };
}

/**
 * The Enterprise Router of one routing file (docs/architecture.md). Decision order: state policy → keyword
 * stage → LLM stage → fallback agent (`router.strategy: llm_first` swaps the two middle stages). Every decision
 * is complete, names a graph node, and is published as `router.decision`.
 */
export class Router {
  private readonly catalogue: IntentCatalogue;
  private readonly classifier: LlmIntentClassifier;
  private readonly supervisor: TurnSupervisor;

  constructor(
    private readonly file: RoutingFile,
    tools: ToolsFile,
    private readonly events: EventBusService,
    llm: LlmService,
    private readonly env: ConfigType<typeof routingConfig>,
  ) {
    const router = file.router;
    this.catalogue = new IntentCatalogue(file, tools);
    this.classifier = new LlmIntentClassifier(
      llm,
      this.catalogue,
      router.llm_profile,
      router.confidence_threshold,
    );
    this.supervisor = new TurnSupervisor(llm, this.catalogue, events, {
      profile: router.llm_profile,
      threshold: router.confidence_threshold,
      fallbackAgent: this.fallbackAgent,
      settings: file.supervisor,
      llmEnabled: env.ENABLE_LLM_ROUTER,
    });
  }

  get mode(): 'router' | 'supervisor' {
    return this.file.router.mode;
  }

  /** A graph agent: ConfigFilesService rejects a fallback_agent that is not one. */
  private get fallbackAgent(): DomainAgentNode {
    return this.file.router.fallback_agent;
  }

  /**
   * Decides the route of a turn that continuity did not keep. `classified`, the intent an accepted ROUTE verdict
   * of the continuity classifier names, stands in for the router's model where `settlement` says `model`: the
   * classifier already judged the message against the same catalogue, so a second model call would repeat it.
   */
  async route(state: TurnState, classified: ClassifiedRoute | null = null): Promise<RouteDecision> {
    const decision =
      this.mode === 'supervisor' ? this.supervisorDecision(state) : await this.decide(state, classified);
    this.events.emit('router.decision', {
      route: decision.route,
      intent: decision.intent,
      method: decision.method,
      confidence: decision.confidence,
      reason: decision.reason,
      domain: decision.domain,
      mcp_tools: decision.mcp_tools,
    });
    return decision;
  }

  /**
   * What `route(state)` needs, known in microseconds without running it: `deterministic` when the decision
   * comes without the router's model (a keyword match, supervisor mode, the model stage off), `state_policy`
   * when a pending state holds the turn and the model only checks for an interruption, `model` when the
   * intent stage decides. Lets a caller start the model early only when it will be needed.
   */
  settlement(state: TurnState): RouteSettlement {
    if (this.mode === 'supervisor') return 'deterministic';
    const llmRouter = this.env.ENABLE_LLM_ROUTER;
    if (this.catalogue.policy(state.next_state)) return llmRouter ? 'state_policy' : 'deterministic';
    if (!llmRouter) return 'deterministic';
    if (this.file.router.strategy === 'llm_first') return 'model';
    return this.keywordSettles(turnText(state)) ? 'deterministic' : 'model';
  }

  /** The agents whose intents' keywords the message matches, in microseconds and without a model. */
  keywordAgents(state: TurnState): ReadonlySet<string> {
    return this.catalogue.keywords.agentsMatched(turnText(state));
  }

  /**
   * The decision the keyword stage takes alone for this message, known without running `route` and without an
   * event: null when it would not settle the turn (supervisor mode, llm_first, a pending state, no keyword or
   * keywords of several agents).
   */
  keywordRoute(state: TurnState): RouteDecision | null {
    if (this.mode === 'supervisor' || this.file.router.strategy === 'llm_first') return null;
    if (this.catalogue.policy(state.next_state)) return null;
    const message = turnText(state);
    const keyword = this.catalogue.keywords.match(message);
    return keyword && this.keywordSettles(message) ? this.keywordDecision(state, keyword, {}) : null;
  }

  /** The `supervisor_agent` node (supervisor mode): plan, run each topic isolated, compose one answer. */
  superviseTurn(state: TurnState, runAgent: AgentRunner): Promise<TurnPatch> {
    return this.supervisor.run(state, runAgent);
  }

  private async decide(state: TurnState, classified: ClassifiedRoute | null): Promise<RouteDecision> {
    const message = turnText(state);
    const policy = this.catalogue.policy(state.next_state);
    if (policy) return this.statePolicy(state, message, policy);
    const carried = this.env.ENABLE_LLM_ROUTER ? this.catalogue.intent(classified?.intent) : undefined;
    const pending = readPendingTopics(state, this.catalogue);
    const context: ClassifyContext = {
      active_agent: state.active_agent ?? null,
      previous_intent: this.catalogue.previousIntent(state)?.name ?? null,
      pending_topics: pending.map((topic) => ({ intent: topic.intent, label: topic.label })),
    };
    if (this.file.router.strategy === 'llm_first') {
      if (carried && classified) return this.classifiedDecision(state, carried, classified);
      const llm = await this.llmStage(message, context);
      if (llm.accepted) return this.llmDecision(state, llm, {});
      const rejected = rejectionMetadata(llm);
      const keyword = this.catalogue.keywords.match(message);
      return keyword ? this.keywordDecision(state, keyword, rejected) : this.fallbackDecision(rejected);
    }
    const keyword = this.catalogue.keywords.match(message);
    if (keyword && this.keywordSettles(message)) return this.keywordDecision(state, keyword, {});
    if (carried && classified) return this.classifiedDecision(state, carried, classified);
    const llm = await this.llmStage(message, context);
    if (llm.accepted) return this.llmDecision(state, llm, keyword ? { keyword_agents: 'several' } : {});
    const rejected = rejectionMetadata(llm);
    return keyword ? this.keywordDecision(state, keyword, rejected) : this.fallbackDecision(rejected);
  }

  /**
   * Whether the keyword stage decides alone (keyword_first): a keyword matched and names one agent. Keywords
   * of several agents may be several requests in one message, which only the model can tell apart.
   */
  private keywordSettles(message: string): boolean {
    const agents = this.catalogue.keywords.agentsMatched(message).size;
    return agents === 1 || (agents > 1 && !this.env.ENABLE_LLM_ROUTER);
  }

  /**
   * Router mode, after the agent answered: records the topic served in `handled_topics`, keeps the message's
   * other requests in `pending_topics` and offers them at the end of the answer once no transaction waits for
   * the customer. An offered topic the next turn does not take up is dropped: the customer moved on.
   */
  followUp(state: TurnState, patch: TurnPatch): TurnPatch {
    if (this.mode !== 'router') return {};
    const served = this.catalogue.intent(state.intent);
    const more = (state.route_decision?.metadata.more_intents ?? []).flatMap((name) => {
      const intent = this.catalogue.intent(name);
      return intent && intent !== served ? [intent] : [];
    });
    const waiting = readPendingTopics(state, this.catalogue).filter(
      (topic) => topic.status === 'deferred' && topic.intent !== served?.name,
    );
    const message = turnText(state);
    const planId = `rt-${randomUUID().slice(0, 12)}`;
    const added: PendingTopic[] = more
      .filter((intent) => !waiting.some((topic) => topic.intent === intent.name))
      .map((intent, index) => ({
        operation_id: `op-${index + 2}`,
        plan_id: planId,
        intent: intent.name,
        agent: intent.agent,
        domain: intent.domain,
        tools: [...intent.mcp_tools],
        label: intent.label ?? intent.name,
        source_text: message,
        disposition: 'defer',
        status: 'deferred',
        reason: 'multi_intent',
        created_turn: state.turn,
      }));
    const pending = [...waiting, ...added];
    // A confirmation or a parameter question ends the answer: an offer after it would muddle it.
    const offer = this.catalogue.policy(patch.next_state ?? null) ? [] : pending;
    const offered = offer.length
      ? fillTopics(
          this.file.supervisor.pending_topics_offer_message,
          offer.map((topic) => topic.label),
        )
      : null;
    return {
      pending_topics: pending.map((topic) =>
        offer.includes(topic) ? { ...topic, status: 'offered' as const } : topic,
      ),
      ...(offered ? { answer: `${patch.answer ?? ''}\n\n${offered}` } : {}),
      ...(served ? { handled_topics: this.handled(state, served) } : {}),
    };
  }

  /** `handled_topics` with this turn's topic: a follow-up on the same topic extends its entry. */
  private handled(state: TurnState, intent: IntentConfig): HandledTopic[] {
    const handled = state.handled_topics ?? [];
    const last = handled[handled.length - 1];
    if (last?.intent === intent.name) {
      return [...handled.slice(0, -1), { ...last, last_turn: state.turn }];
    }
    const entry: HandledTopic = {
      intent: intent.name,
      agent: intent.agent,
      domain: intent.domain,
      label: intent.label ?? intent.name,
      first_turn: state.turn,
      last_turn: state.turn,
    };
    return [...handled, entry].slice(-HANDLED_TOPICS_KEPT);
  }

  /**
   * A pending confirmation or parameter collection keeps its agent. Only the LLM stage can take the turn away,
   * with a different intent at or above the threshold: a keyword is not enough, because parameter answers
   * often contain catalogue words ("pedido 123", "a fatura de março"). With ENABLE_LLM_ROUTER=false it holds.
   */
  private async statePolicy(
    state: TurnState,
    message: string,
    policy: StatePolicyConfig,
  ): Promise<RouteDecision> {
    const recorded = this.catalogue.transactionIntent(state);
    const transactionIntent = recorded?.agent === policy.agent ? recorded : undefined;
    const hold = (check: RouteMetadata): RouteDecision => ({
      route: policy.agent,
      agent: policy.agent,
      intent: `${STATE_INTENT_PREFIX}${policy.state}`,
      domain: transactionIntent?.domain ?? state.domain ?? null,
      mcp_tools: transactionIntent ? [...transactionIntent.mcp_tools] : [...routeTools(state)],
      confidence: 1,
      method: 'state_policy',
      reason: policy.description || `pending state ${policy.state}`,
      next_state: policy.state,
      route_bypassed: false,
      metadata: { state_policy: policy.state, transaction_intent: transactionIntent?.name ?? null, ...check },
    });
    if (!this.env.ENABLE_LLM_ROUTER) return hold({ interruption_check: 'llm_router_disabled' });
    const llm = await this.classifier.classify(message, {
      active_agent: policy.agent,
      previous_intent: transactionIntent?.name ?? null,
      transaction: {
        state: policy.state,
        agent: policy.agent,
        intent: transactionIntent?.name ?? null,
        missing_parameters: state.missing_parameters ?? [],
      },
    });
    if (!llm.accepted) {
      return hold({ interruption_check: llm.reason, ...rejectionMetadata(llm) });
    }
    const sameTopic = transactionIntent
      ? llm.intent.name === transactionIntent.name
      : llm.intent.agent === policy.agent;
    if (sameTopic) {
      return hold({
        interruption_check: 'same_intent',
        llm_intent: llm.intent.name,
        llm_confidence: llm.confidence,
      });
    }
    return this.llmDecision(state, llm, {
      transaction_interruption: 'intent_shift',
      interrupted_state: policy.state,
      interrupted_agent: policy.agent,
      interrupted_intent: transactionIntent?.name ?? null,
      interruption_source: 'llm',
    });
  }

  private llmStage(
    message: string,
    context: ClassifyContext,
  ): Promise<IntentClassification | IntentRejection> {
    if (!this.env.ENABLE_LLM_ROUTER) {
      return Promise.resolve({
        accepted: false,
        reason: 'disabled',
        detail: 'ENABLE_LLM_ROUTER=false',
        latency_ms: 0,
      });
    }
    return this.classifier.classify(message, context);
  }

  private keywordDecision(state: TurnState, match: KeywordMatch, metadata: RouteMetadata): RouteDecision {
    return this.intentDecision(state, match.intent, {
      method: 'keyword',
      confidence: match.confidence,
      reason: `keyword "${match.keyword}" (${match.strategy})`,
      metadata: { ...metadata, matched_keyword: match.keyword, keyword_match_strategy: match.strategy },
    });
  }

  private llmDecision(state: TurnState, llm: IntentClassification, metadata: RouteMetadata): RouteDecision {
    return this.intentDecision(state, llm.intent, {
      method: 'llm',
      confidence: llm.confidence,
      reason: llm.reason || `LLM router chose ${llm.intent.name}`,
      metadata: {
        ...metadata,
        ...(llm.more.length > 0 ? { more_intents: llm.more.map((intent) => intent.name) } : {}),
        llm_profile: this.file.router.llm_profile,
        llm_latency_ms: llm.latency_ms,
      },
    });
  }

  /** The continuity classifier's ROUTE target, taken as the model stage's answer: the router made no call. */
  private classifiedDecision(
    state: TurnState,
    intent: IntentConfig,
    classified: ClassifiedRoute,
  ): RouteDecision {
    const decision = this.intentDecision(state, intent, {
      method: 'continuity',
      confidence: classified.confidence,
      reason: classified.reason || `continuity classifier chose ${intent.name}`,
      metadata: { route_bypassed: true, continuity_decision: 'ROUTE' },
    });
    return { ...decision, route_bypassed: true };
  }

  /**
   * An intent's agent, straight. An intent configured with `handoff: true` goes through the `handoff` node
   * instead when another domain agent is active, so the transfer (from, to, reason) is recorded.
   */
  private intentDecision(
    state: TurnState,
    intent: IntentConfig,
    how: Pick<RouteDecision, 'method' | 'confidence' | 'reason' | 'metadata'>,
  ): RouteDecision {
    const from = state.active_agent;
    const agent = intent.agent;
    const transfer =
      intent.handoff && this.file.router.allow_handoff && this.catalogue.isAgent(from) && from !== agent;
    return {
      route: transfer ? 'handoff' : agent,
      agent: intent.agent,
      intent: intent.name,
      domain: intent.domain,
      mcp_tools: [...intent.mcp_tools],
      confidence: how.confidence,
      method: how.method,
      reason: how.reason,
      next_state: null,
      route_bypassed: false,
      metadata: transfer ? { ...how.metadata, handoff_target: agent, handoff_from: from } : how.metadata,
    };
  }

  private fallbackDecision(metadata: RouteMetadata): RouteDecision {
    const agent = this.fallbackAgent;
    return {
      route: agent,
      agent,
      intent: 'fallback',
      domain: null,
      mcp_tools: [],
      confidence: FALLBACK_CONFIDENCE,
      method: 'fallback',
      reason: 'no routing stage matched',
      next_state: null,
      route_bypassed: false,
      metadata,
    };
  }

  /**
   * Supervisor mode: the `supervisor_agent` node plans the turn. The pending state and the previous agent and
   * intent are carried, since the routing node overwrites them before the supervisor runs.
   */
  private supervisorDecision(state: TurnState): RouteDecision {
    const policy = this.catalogue.policy(state.next_state);
    return {
      route: 'supervisor_agent',
      agent: 'supervisor_agent',
      intent: 'supervisor',
      domain: null,
      mcp_tools: [],
      confidence: 1,
      method: 'supervisor',
      reason: 'supervisor mode plans the intents of the turn',
      next_state: state.next_state ?? null,
      route_bypassed: false,
      metadata: {
        previous_agent: this.catalogue.isAgent(state.active_agent) ? state.active_agent : null,
        previous_intent: this.catalogue.previousIntent(state)?.name ?? null,
        ...(policy ? { transaction_intent: this.catalogue.transactionIntent(state)?.name ?? null } : {}),
      },
    };
  }
}
