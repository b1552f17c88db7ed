import { Inject, Injectable } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { randomUUID } from 'node:crypto';
import { AgentsService } from '@agent/agents';
import { checkpointConfig, ConfigFilesService, continuityConfig } from '@agent/config';
import { ContinuityOutcome, ContinuityService } from '@agent/continuity';
import {
  AgentProfile,
  AgentState,
  BLOCKED_ROUTE,
  ContentScreen,
  DomainAgentNode,
  HandoffTransfer,
  HistoryMessage,
  isDomainAgentNode,
  promptHistory,
  RailDecision,
  RouteDecision,
} from '@agent/contracts';
import { GuardrailsService, reportedCodes } from '@agent/guardrails';
import { JudgesService } from '@agent/judges';
import { MemoryService } from '@agent/memory';
import { EventBusService, NodeTelemetryService, TurnContext, TurnContextStore } from '@agent/observability';
import { RoutingService } from '@agent/routing';
import { SessionControlService } from '@agent/session-control';
import { openAnswerStream } from './answer-stream';
import { SessionNodes } from './session-nodes';
import { END, nextNode, WorkflowNode } from './workflow.graph';

type NodePatch = Partial<AgentState>;

/** Work run in its own event buffer (see `WorkflowService.isolated`). */
interface Isolated<T> {
  result: T;
  adopt(): void;
  keepCostOnly(): void;
}

/** What a turn holds outside the state its nodes see. */
interface TurnScope {
  /** The conversation's whole stored history, blocked turns included; nodes see only `promptHistory` of it. */
  storedHistory: HistoryMessage[];
}

/** The turn graph (docs/architecture.md#the-turn); `runTurn` is its public entry point. */
@Injectable()
export class WorkflowService {
  private readonly nodes: Record<WorkflowNode, (state: AgentState, scope: TurnScope) => Promise<NodePatch>>;
  /** Retrieval and tool guardrails, handed to every agent run. */
  private readonly screen: ContentScreen;

  constructor(
    private readonly files: ConfigFilesService,
    @Inject(checkpointConfig.KEY) private readonly checkpointEnv: ConfigType<typeof checkpointConfig>,
    @Inject(continuityConfig.KEY) private readonly continuityEnv: ConfigType<typeof continuityConfig>,
    private readonly events: EventBusService,
    private readonly telemetry: NodeTelemetryService,
    private readonly guardrails: GuardrailsService,
    private readonly memory: MemoryService,
    private readonly continuity: ContinuityService,
    private readonly routing: RoutingService,
    private readonly sessionControl: SessionControlService,
    private readonly sessionNodes: SessionNodes,
    private readonly agents: AgentsService,
    private readonly judges: JudgesService,
  ) {
    this.screen = guardrails.contentScreen();
    const agentNode = (node: DomainAgentNode) => async (state: AgentState) => {
      const patch = await this.agents.run(node, state, this.screen);
      return { ...patch, ...this.routing.followUp(state, patch) };
    };
    this.nodes = {
      input_guardrails: (s) => this.inputGuardrails(s),
      load_long_term_memory: (s) => this.loadLongTermMemory(s),
      routing_decision: (s) => this.routingDecision(s),
      billing_agent: agentNode('billing_agent'),
      product_agent: agentNode('product_agent'),
      orders_agent: agentNode('orders_agent'),
      support_agent: agentNode('support_agent'),
      handoff: (s) => this.agentHandoff(s),
      human_handoff: (s) => Promise.resolve(this.sessionNodes.humanHandoff(s)),
      end_session: (s) => Promise.resolve(this.sessionNodes.endSession(s)),
      supervisor_agent: (s) => this.supervisorAgent(s),
      output_supervisor: (s) => this.outputSupervisor(s),
      output_guardrails: (s) => this.outputGuardrails(s),
      judge: (s) => this.judge(s),
      supervisor_review: (s) => this.supervisorReview(s),
      persist_long_term_memory: (s) => this.persistLongTermMemory(s),
      persist: (s, scope) => Promise.resolve(this.persist(s, scope)),
    };
  }

  /**
   * Runs one turn through the graph. Emits NOC.001 and AGENT_STARTED first; on an escaping exception marks the
   * workflow failed with NOC.005 {error, exception_type} and a workflow_telemetry.failed record, both outside the
   * turn's events (which the failure discards: `EventBusService.emitFailure`), and rethrows.
   */
  async runTurn(initial: AgentState): Promise<AgentState> {
    const workflowId = initial.workflow_id ?? randomUUID();
    this.events.emit('NOC.001', { channel: initial.channel, message_id: initial.message_id });
    this.events.emit('AGENT_STARTED', { workflow_id: workflowId });
    const started = performance.now();
    let running: WorkflowNode | null = null;
    try {
      // Every node, and so every prompt built in this turn, sees the history without blocked turns.
      const scope: TurnScope = { storedHistory: initial.history ?? [] };
      let state: AgentState = {
        ...initial,
        workflow_id: workflowId,
        agent_profile: this.agentProfile(initial.agent_id),
        history: promptHistory(scope.storedHistory),
      };
      let node: WorkflowNode | typeof END = 'input_guardrails';
      const fallback = this.fallbackAgent(state);
      while (node !== END) {
        const current: WorkflowNode = node;
        running = current;
        const patch = await this.telemetry.run(current, () => this.nodes[current](state, scope));
        state = { ...state, ...patch };
        const stream = TurnContextStore.current()?.stream;
        if (current === 'persist') {
          const firstReleased = stream?.firstReleasedAt;
          this.events.emit('AGENT_COMPLETED', {
            route: state.route,
            intent: state.intent,
            answer_chars: (state.final_answer ?? '').length,
            latency_ms: Math.round(performance.now() - started),
            // Streamed turns: when the first answer text left (null: none left before the turn completed).
            first_text_ms: firstReleased === undefined ? null : Math.round(firstReleased - started),
            nodes: [...(TurnContextStore.current()?.nodes ?? [])],
          });
        }
        node = nextNode(current, state, fallback);
        // Streaming: the routing facts, and the answer's release opens only once routing decided.
        if (current === 'routing_decision' && stream) openAnswerStream(stream, state, node, this.guardrails);
      }
      return state;
    } catch (error) {
      const failure = {
        error: error instanceof Error ? error.message : String(error),
        exception_type: error instanceof Error ? error.constructor.name : typeof error,
      };
      this.events.emitFailure('NOC.005', failure);
      this.events.emitFailure('workflow_telemetry.failed', {
        workflow: 'agent_workflow',
        workflow_id: workflowId,
        node: running,
        ...failure,
        duration_ms: Math.round(performance.now() - started),
      });
      throw error;
    }
  }

  /** Where a route that names no node goes: the agent_id's routing file's fallback agent, a graph agent by validation. */
  private fallbackAgent(state: AgentState): DomainAgentNode {
    return this.files.routings.for(state.agent_id).router.fallback_agent as DomainAgentNode;
  }

  /** The agents.yaml identity of the conversation's agent_id (validated at the edge), as the checkpoint keeps it. */
  private agentProfile(agentId: string | undefined): AgentProfile {
    const agents = this.files.agents;
    const id = agentId && Object.hasOwn(agents.agents, agentId) ? agentId : agents.default_agent_id;
    const profile = agents.agents[id];
    return {
      agent_id: id,
      name: profile.name,
      domain: profile.domain,
      description: profile.description,
      metadata: profile.metadata,
    };
  }

  /** Session gate, then the input rails' deterministic part (the model's verdict runs beside routing). */
  private async inputGuardrails(state: AgentState): Promise<NodePatch> {
    const rejection = this.sessionControl.gate(state);
    if (rejection) return rejection;
    const result = await this.guardrails.runInput(state);
    if (!result.blocked) {
      return { sanitized_input: result.sanitizedText, guardrail_decisions: result.decisions };
    }
    const blocked = inputBlocked(state, result.message ?? '', result.decisions);
    // An oversized message is kept as its length and hash: its text would bloat every later checkpoint.
    const withheld = result.withheldText;
    return withheld === undefined ? blocked : { ...blocked, user_text: withheld, sanitized_input: withheld };
  }

  private async loadLongTermMemory(state: AgentState): Promise<NodePatch> {
    try {
      const loaded = await this.memory.load(state);
      return { long_term_memories: loaded.items, long_term_memory_context: loaded.context };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.events.emit('long_term_memory.load.failed', { error: message });
      return { long_term_memories: [], long_term_memory_context: '', long_term_memory_load_error: message };
    }
  }

  /**
   * The guardrail model's input verdict and routing start together. Routing's events wait in their own buffer:
   * a BLOCK discards the routing result (only its model costs stay on record), so no agent, tool or memory
   * write runs; otherwise routing's events join the turn and its decision applies.
   */
  private async routingDecision(state: AgentState): Promise<NodePatch> {
    const routing = this.isolated(() => this.decide(state), 'input_guardrail_block');
    // A blocked turn discards routing before it settles: never let it become an unhandled rejection.
    routing.catch(() => undefined);
    const verdict = await this.guardrails.inputVerdict(state);
    const decisions = [...(state.guardrail_decisions ?? []), ...verdict.decisions];
    if (verdict.blocked) {
      void routing.then(
        (run) => run.keepCostOnly(),
        () => undefined,
      );
      return inputBlocked(state, verdict.message ?? '', decisions);
    }
    const run = await routing;
    run.adopt();
    return { ...this.routed(state, run.result), guardrail_decisions: decisions };
  }

  /**
   * Continuity first (when enabled), so a person or the end of the session is always reachable; then the
   * Enterprise Router (or the supervisor plan) exactly as if the feature were off.
   */
  private routed(
    state: AgentState,
    { outcome, routed }: { outcome: ContinuityOutcome | null; routed: RouteDecision | null },
  ): NodePatch {
    const decision = outcome?.decision ?? routed;
    if (!decision) throw new Error('routing produced no decision');
    if (outcome?.decision && outcome.signal.decision === 'CONTINUE' && this.continuity.shouldShadow()) {
      const kept = outcome.decision.agent ?? '';
      // Off the critical path: the shadow router never delays or changes the turn; it records agreement.
      void this.continuity.runShadow(
        state,
        kept,
        async () => (await this.isolatedRoute(state, 'shadow')).result,
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
  private async decide(
    state: AgentState,
  ): Promise<{ outcome: ContinuityOutcome | null; routed: RouteDecision | null }> {
    if (!this.continuity.enabled) return { outcome: null, routed: await this.routing.route(state) };
    const strategy = this.continuityEnv.ROUTE_STICKINESS_STRATEGY;
    const settlement = this.routing.settlement(state);
    const speculate = strategy === 'speculative' || (strategy === 'adaptive' && settlement === 'model');
    if (!speculate) {
      const outcome = await this.continuity.evaluate(state);
      if (outcome?.decision) return { outcome, routed: null };
      return { outcome, routed: await this.routing.route(state, outcome?.route ?? null) };
    }
    const speculative = this.isolatedRoute(state, 'speculative');
    // The speculation may be discarded before it settles: never let it become an unhandled rejection.
    speculative.catch(() => undefined);
    const outcome = await this.continuity.evaluate(state);
    const classified = settlement === 'model' ? (outcome?.route ?? null) : null;
    if (outcome?.decision || classified) {
      void speculative.then(
        (run) => run.keepCostOnly(),
        () => undefined,
      );
      return { outcome, routed: classified ? await this.routing.route(state, classified) : null };
    }
    const run = await speculative;
    run.adopt();
    return { outcome, routed: run.result };
  }

  /** The Enterprise Router in its own event buffer (see `isolated`). */
  private isolatedRoute(
    state: AgentState,
    purpose: 'speculative' | 'shadow',
  ): Promise<Isolated<RouteDecision>> {
    return this.isolated(() => this.routing.route(state), purpose);
  }

  /**
   * Runs `work` with its own event buffer, so a speculative, shadow or discarded decision never reads as the
   * turn's. `adopt` moves its events into the turn; `keepCostOnly` keeps only its llm.call records, marked with
   * the purpose they were discarded for.
   */
  private async isolated<T>(work: () => Promise<T>, purpose: string): Promise<Isolated<T>> {
    const parent = TurnContextStore.current();
    const child: TurnContext | undefined = parent ? { ...parent, events: [], nodes: [] } : undefined;
    const result = child ? await TurnContextStore.run(child, work) : await work();
    return {
      result,
      adopt: () => {
        if (!parent || !child) return;
        parent.events.push(...child.events);
        // Work the adopted run left going (a discarded speculative router) records into the turn from now on.
        child.events = parent.events;
      },
      keepCostOnly: () =>
        parent?.events.push(
          ...(child?.events ?? [])
            .filter((e) => e.name === 'llm.call')
            .map((e) => ({ ...e, payload: { ...e.payload, [purpose]: 'discarded' } })),
        ),
    };
  }

  /** Agent-to-agent transfer: records it and hands the turn to the target agent. */
  private async agentHandoff(state: AgentState): Promise<NodePatch> {
    const decision = state.route_decision;
    const to = decision?.metadata.handoff_target ?? this.fallbackAgent(state);
    const transfer: HandoffTransfer = {
      // routing_decision already made the target the active agent; the router records where the turn came from.
      from: decision?.metadata.handoff_from ?? state.active_agent ?? null,
      to,
      reason: decision?.reason ?? '',
      turn: state.turn ?? null,
    };
    const patch = await this.agents.run(to, state, this.screen);
    return {
      ...patch,
      ...this.routing.followUp(state, patch),
      active_agent: to,
      handoff_transfers: [...(state.handoff_transfers ?? []), transfer],
    };
  }

  /** Supervisor mode: RoutingService plans the intents and runs each agent on an isolated copy of the state. */
  private supervisorAgent(state: AgentState): Promise<NodePatch> {
    return this.routing.superviseTurn(state, (node, isolated) =>
      this.agents.run(node, isolated, this.screen),
    );
  }

  /**
   * The answer bounded to AGENT_MAX_ANSWER_CHARS, then the output rails over it; RETRY regenerates it through
   * the agent that produced it, each regeneration bounded too.
   */
  private async outputSupervisor(state: AgentState): Promise<NodePatch> {
    const producer = isDomainAgentNode(state.route)
      ? state.route
      : isDomainAgentNode(state.active_agent)
        ? state.active_agent
        : null;
    const answer = this.guardrails.boundAnswer(state.answer ?? '');
    const bounded: NodePatch = answer === (state.answer ?? '') ? {} : { answer };
    const patch = await this.guardrails.superviseOutput(
      { ...state, ...bounded },
      async (guidance, rejected) => {
        if (!producer) return null;
        const regenerated = await this.agents.regenerate(producer, { ...state, answer: rejected }, guidance);
        return regenerated === null ? null : this.guardrails.boundAnswer(regenerated);
      },
    );
    return { ...bounded, ...patch };
  }

  private async outputGuardrails(state: AgentState): Promise<NodePatch> {
    if (state.blocked) return { final_answer: state.final_answer ?? state.answer ?? '' };
    if (state.output_guardrails_already_applied) {
      return { final_answer: state.final_answer ?? state.answer ?? '' };
    }
    const result = await this.guardrails.runOutput(state);
    return {
      final_answer: result.answer,
      blocked: result.blocked,
      guardrail_decisions: [...(state.guardrail_decisions ?? []), ...result.decisions],
    };
  }

  private async judge(state: AgentState): Promise<NodePatch> {
    return { judge_results: await this.judges.evaluate(state) };
  }

  private async supervisorReview(state: AgentState): Promise<NodePatch> {
    const review = await this.judges.review(state);
    return { final_answer: review.answer };
  }

  private async persistLongTermMemory(state: AgentState): Promise<NodePatch> {
    try {
      const result = await this.memory.persistTurn(state, this.screen);
      for (const fact of result.rejected ?? []) this.events.emit('long_term_memory.fact.rejected', fact);
      this.events.emit('long_term_memory.persist.completed', { saved: result.saved });
      return { long_term_memory_write_result: result };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.events.emit('long_term_memory.persist.failed', { error: message });
      return { long_term_memory_write_result: { saved: 0, error: message } };
    }
  }

  /**
   * Appends the turn to the bounded stored history (an input-blocked turn flagged, for audit only); the store
   * commit itself happens after the graph.
   */
  private persist(state: AgentState, scope: TurnScope): NodePatch {
    const at = new Date().toISOString();
    const answer = state.final_answer ?? state.answer ?? '';
    const flag = state.route === BLOCKED_ROUTE ? { blocked: true } : {};
    const turnMessages: HistoryMessage[] = [
      // The masked text: what the input rails kept from a model now never reaches one through the history.
      {
        role: 'user',
        content: state.sanitized_input ?? state.user_text ?? '',
        turn: state.turn,
        at,
        ...flag,
      },
      {
        role: 'assistant',
        content: answer,
        turn: state.turn,
        route: state.route,
        intent: state.intent,
        at,
        ...flag,
      },
    ];
    const history = [...scope.storedHistory, ...turnMessages].slice(-this.checkpointEnv.MEMORY_HISTORY_LIMIT);
    return { final_answer: answer, history };
  }
}

/** The patch of a turn the input guardrails blocked: the safe message, and nothing routed. */
function inputBlocked(state: AgentState, message: string, decisions: RailDecision[]): NodePatch {
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
