import { Inject, Injectable } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { randomUUID } from 'node:crypto';
import { AgentsService } from '@agent/agents';
import { checkpointConfig, ConfigFilesService, continuityConfig } from '@agent/config';
import { ContinuityService } from '@agent/continuity';
import {
  AgentProfile,
  AgentState,
  BLOCKED_ROUTE,
  ContentScreen,
  DomainAgentNode,
  draftAnswer,
  HandoffTransfer,
  HistoryMessage,
  promptHistory,
  routedTurn,
  turnAnswer,
  TurnFrame,
  turnRailDecisions,
  TurnState,
  turnText,
} from '@agent/contracts';
import { GuardrailsService } from '@agent/guardrails';
import { JudgesService } from '@agent/judges';
import { MemoryService } from '@agent/memory';
import { EventBusService, NodeTelemetryService, TurnContextStore } from '@agent/observability';
import { RoutingService } from '@agent/routing';
import { SessionControlOrigin, SessionControlService } from '@agent/session-control';
import { firstTextMs, openAnswerStream } from './answer-stream';
import { SessionNodes } from './session-nodes';
import { AgentDraft, DraftStart } from './agent-draft';
import { inputBlocked, RoutingChoreography } from './routing-choreography';
import { ContinueShare, shouldSpeculate } from './speculation-policy';
import { END, FixedNode, isFixedNode, nextNode, TurnAgents, WorkflowNode } from './workflow.graph';

/** What a node changes: never the turn's frame, but for the text of a message the input rails withheld. */
type NodePatch = Partial<Omit<AgentState, Exclude<keyof TurnFrame, 'user_text'>>>;

/** What a turn holds outside the state its nodes see. */
interface TurnScope {
  /** The conversation's whole stored history, blocked turns included; nodes see only `promptHistory` of it. */
  storedHistory: HistoryMessage[];
  /** The agent's speculative first call, once the verdict allowed the turn and routing kept that agent. */
  draft?: AgentDraft;
  /** The shadow router's comparison of a CONTINUE turn, which `persist` waits for so the turn stores it. */
  shadow?: Promise<unknown>;
}

/** The turn graph (docs/architecture.md#the-turn); `runTurn` is its public entry point. */
@Injectable()
export class WorkflowService {
  private readonly nodes: Record<FixedNode, (state: TurnState, scope: TurnScope) => Promise<NodePatch>>;
  /** Retrieval and tool guardrails, handed to every agent run. */
  private readonly screen: ContentScreen;
  private readonly choreography: RoutingChoreography;
  /** The adaptive speculation policy's record of how often each agent keeps the turn. */
  private readonly continueShare = new ContinueShare();

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
    this.choreography = new RoutingChoreography({
      guardrails,
      continuity,
      routing,
      strategy: continuityEnv.ROUTE_STICKINESS_STRATEGY,
    });
    this.nodes = {
      input_guardrails: (s) => this.inputGuardrails(s),
      load_long_term_memory: (s) => this.loadLongTermMemory(s),
      routing_decision: (s, scope) => this.routingDecision(s, scope),
      handoff: (s) => this.agentHandoff(s),
      human_handoff: (s) => Promise.resolve(this.sessionNodes.humanHandoff(s, customerOrigin(s))),
      end_session: (s) => Promise.resolve(this.sessionNodes.endSession(s, customerOrigin(s))),
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
  async runTurn(initial: TurnState): Promise<TurnState> {
    const workflowId = initial.workflow_id ?? randomUUID();
    this.events.emit('NOC.001', { channel: initial.channel, message_id: initial.message_id });
    this.events.emit('AGENT_STARTED', { workflow_id: workflowId });
    const started = performance.now();
    let running: WorkflowNode | null = null;
    const scope: TurnScope = { storedHistory: initial.history ?? [] };
    try {
      // Every node, and so every prompt built in this turn, sees the history without blocked turns.
      let state: TurnState = {
        ...initial,
        workflow_id: workflowId,
        agent_profile: this.agentProfile(initial.agent_id),
        history: promptHistory(scope.storedHistory),
      };
      let node: WorkflowNode = 'input_guardrails';
      const agents = this.turnAgents(state);
      while (node !== END) {
        const current: WorkflowNode = node;
        running = current;
        // A shadow comparison slower than the agent holds the turn here, so its record is stored with the turn.
        if (current === 'persist') await scope.shadow;
        const patch = await this.telemetry.run(current, () =>
          isFixedNode(current) ? this.nodes[current](state, scope) : this.agentNode(current, state, scope),
        );
        state = { ...state, ...patch };
        const stream = TurnContextStore.current()?.stream;
        if (current === 'persist') {
          this.events.emit('AGENT_COMPLETED', {
            route: state.route,
            intent: state.intent,
            answer_chars: turnAnswer(state).length,
            latency_ms: Math.round(performance.now() - started),
            // Streamed turns: when the first answer text left (null: none left before the turn completed).
            first_text_ms: firstTextMs(stream, started),
            nodes: [...(TurnContextStore.current()?.nodes ?? [])],
          });
        }
        node = nextNode(current, state, agents);
        // Streaming: the routing facts, and the answer's release opens only once routing decided.
        if (current === 'routing_decision' && stream) {
          openAnswerStream(stream, state, node, agents, this.guardrails);
        }
      }
      return state;
    } catch (error) {
      const failure = {
        error: error instanceof Error ? error.message : String(error),
        exception_type: error instanceof Error ? error.constructor.name : typeof error,
      };
      void this.dropDraft(scope);
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
  private fallbackAgent(state: TurnState): DomainAgentNode {
    return this.files.routings.for(state.agent_id).router.fallback_agent;
  }

  /** The configured domain agents of a turn: the graph routes only to those and to its fixed nodes. */
  private turnAgents(state: TurnState): TurnAgents {
    return { fallback: this.fallbackAgent(state), isAgent: (name) => this.files.isGraphAgent(name) };
  }

  /** A domain agent's node: any agents.yaml graph agent runs the same way, with its own configuration. */
  private async agentNode(node: DomainAgentNode, state: TurnState, scope: TurnScope): Promise<NodePatch> {
    const draft = scope.draft?.node === node ? scope.draft : undefined;
    try {
      const patch = await this.agents.run(node, state, this.screen, draft);
      return { ...patch, ...this.routing.followUp(state, patch) };
    } finally {
      await this.dropDraft(scope);
    }
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
  private async inputGuardrails(state: TurnState): Promise<NodePatch> {
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

  private async loadLongTermMemory(state: TurnState): Promise<NodePatch> {
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
   * The choreography of the verdict and routing (`RoutingChoreography`) with, where the policy says so, the
   * active agent's first model call beside them (`AgentDraft`). The draft is kept for the agent node only when
   * the verdict allowed the turn and routing kept that agent; on a block, a route elsewhere, a handoff or the end
   * of the session its request is cancelled and only its cost stays on record.
   */
  private async routingDecision(state: TurnState, scope: TurnScope): Promise<NodePatch> {
    // The keyword signals are read only where the agent's first call may start early.
    const speculating = this.continuity.enabled && this.continuityEnv.AGENT_SPECULATIVE_START !== 'off';
    const keywordAgents = speculating ? this.routing.keywordAgents(state) : null;
    const draft = keywordAgents ? this.startDraft(state, keywordAgents, scope) : null;
    scope.draft = draft ?? undefined;
    const patch = await this.choreography.decide(state, (comparison) => {
      scope.shadow = comparison;
    });
    const agent = continuedAgent(state, (name) => this.files.isGraphAgent(name));
    // The adaptive policy's record: how often the active agent keeps, as it was, a turn no keyword speaks to.
    const signal = patch.continuity_signal;
    if (agent && keywordAgents?.size === 0 && signal && !patch.blocked) {
      this.continueShare.record(
        state.agent_id,
        agent,
        signal.decision === 'CONTINUE' && patch.route === agent,
      );
    }
    const kept =
      draft &&
      !patch.blocked &&
      patch.route === draft.node &&
      !patch.human_handoff_requested &&
      !patch.session_ended;
    if (!kept) await this.dropDraft(scope);
    return patch;
  }

  /**
   * The first call of the agent the turn most likely goes to, started now when the policy says so; else null. A
   * keyword that alone names an agent names the target, with that keyword decision's intent and tools (routing
   * takes them when it leaves the agent or moves it to the keyword's intent); otherwise the active agent, with the
   * state a CONTINUE would give it (the tools of the decision that made it active).
   */
  private startDraft(
    state: TurnState,
    keywordAgents: ReadonlySet<string>,
    scope: TurnScope,
  ): AgentDraft | null {
    const isAgent = (name: unknown): name is DomainAgentNode => this.files.isGraphAgent(name);
    const keyword = this.routing.keywordRoute(state);
    const named =
      keyword && isAgent(keyword.agent) ? { agent: keyword.agent, tools: keyword.mcp_tools } : null;
    const agent = named?.agent ?? continuedAgent(state, isAgent);
    if (!agent) return null;
    const signals = {
      agent,
      pending: Boolean(state.active_transaction) || this.routing.settlement(state) === 'state_policy',
      previousBlocked: scope.storedHistory.at(-1)?.blocked === true,
      keywordAgents,
      history: this.continueShare.of(state.agent_id, agent),
    };
    if (!shouldSpeculate(this.continuityEnv, signals)) return null;
    const predicted: TurnState = {
      ...state,
      route: agent,
      active_agent: agent,
      ...(named ? { mcp_tools: named.tools } : {}),
    };
    const call: DraftStart['call'] = (retrieval, signal, onText) =>
      this.agents.speculate(agent, predicted, retrieval, signal, onText);
    if (!this.agents.hasKnowledgeBase(agent)) return new AgentDraft(agent, { call });
    return new AgentDraft(agent, {
      retrieve: (signal) => this.agents.speculativeRetrieval(agent, predicted, this.screen, signal),
      call,
    });
  }

  private async dropDraft(scope: TurnScope): Promise<void> {
    const draft = scope.draft;
    scope.draft = undefined;
    await draft?.discard();
  }

  /** Agent-to-agent transfer: records it and hands the turn to the target agent. */
  private async agentHandoff(state: TurnState): Promise<NodePatch> {
    const decision = state.route_decision;
    const to = decision?.metadata.handoff_target ?? this.fallbackAgent(state);
    const transfer: HandoffTransfer = {
      // routing_decision already made the target the active agent; the router records where the turn came from.
      from: decision?.metadata.handoff_from ?? state.active_agent ?? null,
      to,
      reason: decision?.reason ?? '',
      turn: state.turn,
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
  private supervisorAgent(state: TurnState): Promise<NodePatch> {
    return this.routing.superviseTurn(state, (node, isolated) =>
      this.agents.run(node, isolated, this.screen),
    );
  }

  /**
   * The answer bounded to AGENT_MAX_ANSWER_CHARS, then the output rails over it; RETRY regenerates it through
   * the agent that produced it, each regeneration bounded too.
   */
  private async outputSupervisor(state: TurnState): Promise<NodePatch> {
    const producer = this.files.isGraphAgent(state.route)
      ? state.route
      : this.files.isGraphAgent(state.active_agent)
        ? state.active_agent
        : null;
    const answer = this.guardrails.boundAnswer(draftAnswer(state));
    const bounded: NodePatch = answer === draftAnswer(state) ? {} : { answer };
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

  private async outputGuardrails(state: TurnState): Promise<NodePatch> {
    if (state.blocked) return { final_answer: turnAnswer(state) };
    if (state.output_guardrails_already_applied) {
      return { final_answer: turnAnswer(state) };
    }
    const result = await this.guardrails.runOutput(state);
    return {
      final_answer: result.answer,
      blocked: result.blocked,
      guardrail_decisions: [...turnRailDecisions(state), ...result.decisions],
    };
  }

  private async judge(state: TurnState): Promise<NodePatch> {
    return { judge_results: await this.judges.evaluate(routedTurn(state)) };
  }

  private async supervisorReview(state: TurnState): Promise<NodePatch> {
    const review = await this.judges.review(routedTurn(state));
    return { final_answer: review.answer };
  }

  private async persistLongTermMemory(state: TurnState): Promise<NodePatch> {
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
  private persist(state: TurnState, scope: TurnScope): NodePatch {
    const at = new Date().toISOString();
    const answer = turnAnswer(state);
    const flag = state.route === BLOCKED_ROUTE ? { blocked: true } : {};
    const turnMessages: HistoryMessage[] = [
      // The masked text: what the input rails kept from a model now never reaches one through the history.
      {
        role: 'user',
        content: turnText(state),
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

/** A session control the turn's routing decided, on the customer's message. */
function customerOrigin(state: TurnState): SessionControlOrigin {
  return { source: 'continuity', userText: turnText(state) };
}

/**
 * The agent a turn would continue with: the active domain agent, when the decision that made it active is the
 * state's (its tools are those a CONTINUE keeps, so the speculative request can match the real one).
 */
function continuedAgent(
  state: TurnState,
  isAgent: (name: unknown) => name is DomainAgentNode,
): DomainAgentNode | null {
  const agent = state.active_agent;
  return isAgent(agent) && state.route_decision?.agent === agent ? agent : null;
}
