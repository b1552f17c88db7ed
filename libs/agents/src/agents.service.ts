import { Inject, Injectable, Logger } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { appConfig, ConfigFilesService, SERVICE_MESSAGES } from '@agent/config';
import {
  type ActiveTransaction,
  type AgentState,
  type ContentScreen,
  type DomainAgentNode,
  draftAnswer,
  type RagOutcome,
  routeTools,
  type SelectedToolCall,
  type ToolArguments,
  type TurnPatch,
  type TurnState,
  turnText,
  turnToolResults,
} from '@agent/contracts';
import {
  ChatMessage,
  ChatRequest,
  ChatResult,
  ChatTool,
  LlmError,
  LlmService,
  TextListener,
  ToolCall,
} from '@agent/llm';
import { McpService, McpToolResult, ToolDescriptor } from '@agent/mcp';
import { EventBusService, TurnContextStore } from '@agent/observability';
import { formatPassages, RagContext, RagService } from '@agent/rag';
import { AgentPrompts } from './agent-prompts';
import { stripAgentPrefix } from './answer-text';
import { ParameterExtractor } from './parameter-extractor';
import { ScreenedTools, screenPassages } from './screened-content';
import { requestContext, TransactionEngine } from './transaction.engine';

/** A first model call started before the turn was routed (`AgentsService.speculate`). */
export interface SpeculatedCall {
  request: ChatRequest;
  reply: Promise<ChatResult>;
}

/** A turn's retrieval from an agent's knowledge base, through the retrieval rails: what its prompt is given. */
export interface AgentRetrieval {
  namespace: string;
  query: string;
  context: RagContext;
}

/**
 * What `run` asks of a speculative start before doing the work itself. `retrieval`: the draft's retrieval when it
 * was made from `namespace` for `query`, else null; what it recorded (its rails' decisions, its events) becomes
 * the turn's. `take`: the speculative reply when it was made for exactly `request`, else null (the draft is then
 * dropped). `onText` hears the reply's text: what the model wrote so far at once, the rest as it arrives (the
 * whole text at the end when the call did not stream). A draft that fails after `onText` heard some of it also
 * answers null.
 */
export interface FirstReplyDraft {
  retrieval(namespace: string, query: string): Promise<RagContext | null>;
  take(request: ChatRequest, onText?: TextListener): Promise<ChatResult | null>;
}

/** History messages an agent sees. */
const HISTORY_WINDOW = 12;

/**
 * Facade of AgentsModule: one runtime for the four domain agents. A turn either resumes the conversation's
 * transaction (parameters or confirmation) or runs the agent's model with the intent's MCP tools in a
 * bounded tool-call loop, with long-term memory and, for agents with a rag_namespace, retrieved passages.
 */
@Injectable()
export class AgentsService {
  private readonly logger = new Logger(AgentsService.name);
  /** Said when the agent's LLM cannot answer (not configured, timeout, error). */
  private readonly unavailable: string;

  constructor(
    private readonly files: ConfigFilesService,
    private readonly llm: LlmService,
    private readonly mcp: McpService,
    private readonly rag: RagService,
    private readonly prompts: AgentPrompts,
    private readonly transactions: TransactionEngine,
    private readonly extractor: ParameterExtractor,
    private readonly events: EventBusService,
    @Inject(appConfig.KEY) app: ConfigType<typeof appConfig>,
  ) {
    this.unavailable = SERVICE_MESSAGES[app.DEFAULT_LANGUAGE].agent_unavailable;
  }

  /**
   * One agent turn. `screen` runs the retrieval and tool guardrails: every retrieved passage and every tool
   * result passes it before the model or an answer sees it.
   */
  async run(
    node: DomainAgentNode,
    state: TurnState,
    screen: ContentScreen,
    draft?: FirstReplyDraft,
  ): Promise<TurnPatch> {
    const tools = new ScreenedTools(this.mcp, screen, state);
    const resumable = this.transactions.resumable(state);
    let interruption: TurnPatch = {};
    let interruptedNote: string | null = null;
    if (resumable) {
      const shifted = state.transaction_interruption === 'intent_shift';
      if (!shifted && resumable.transaction.agent === node) {
        // Abandonment, replacement and corrections are read from the reply inside the transaction.
        return this.transactions.resume(state, resumable, tools);
      }
      // The router sent the turn to another intent or agent: an operation started now replaces this one.
      const reason = shifted ? 'intent_shift' : 'routed_to_another_agent';
      interruption = this.transactions.interrupt(state, resumable.transaction, reason);
      interruptedNote = `${this.transactions.wording.message('interrupted', resumable.transaction)} (motivo: ${reason})`;
    }
    const patch = await this.answer(node, { ...state, ...interruption }, interruptedNote, {
      tools,
      screen,
      replaced: resumable && interruptedNote ? resumable.transaction : null,
      draft: interruptedNote === null ? draft : undefined,
    });
    return { ...interruption, ...patch };
  }

  /** A person or the end of the session took the turn: the operation waiting for the customer ends unrun. */
  interruptPending(state: AgentState, reason: 'human_handoff' | 'end_session'): TurnPatch {
    return this.transactions.interruptPending(state, reason);
  }

  /** Whether the agent retrieves from a knowledge base before its first model call. */
  hasKnowledgeBase(node: DomainAgentNode): boolean {
    return Boolean(this.files.agents.graph_agents[node].rag_namespace);
  }

  /**
   * The retrieval `run` would make for `state` before its first model call; null when the agent has no
   * knowledge base or `run` would not start with its model (a transaction to resume or interrupt). `signal`
   * gives it up: its model calls (embedding, rails) are cancelled and it rejects.
   */
  async speculativeRetrieval(
    node: DomainAgentNode,
    state: TurnState,
    screen: ContentScreen,
    signal: AbortSignal,
  ): Promise<AgentRetrieval | null> {
    const { state_domain: domain, rag_namespace: namespace } = this.files.agents.graph_agents[node];
    if (!namespace || this.transactions.resumable(state)) return null;
    const query = turnText(state);
    return { namespace, query, context: await this.retrieve(domain, namespace, state, screen, signal) };
  }

  /**
   * Starts now, with `signal`, the first model call `run` would make for `state` given `retrieval` (from
   * `speculativeRetrieval`), and says which request it sent; null when `run` would not start with the agent's
   * model (a transaction to resume or interrupt). Nothing else of the turn runs: no tool is called and no state
   * is written. With `onText` the call streams to it.
   */
  async speculate(
    node: DomainAgentNode,
    state: TurnState,
    retrieval: AgentRetrieval | null,
    signal: AbortSignal,
    onText?: TextListener,
  ): Promise<SpeculatedCall | null> {
    if (this.transactions.resumable(state)) return null;
    const { request } = await this.prepare(node, state, null, retrieval?.context ?? null);
    if (signal.aborted) return null;
    const reply = this.llm.chat({ ...request, signal, ...(onText ? { onText } : {}) });
    // The caller may drop the call without waiting for it.
    reply.catch(() => undefined);
    return { request, reply };
  }

  /** A new answer for the same turn, following the output supervisor's guidance; null when it cannot. */
  async regenerate(node: DomainAgentNode, state: TurnState, guidance: string): Promise<string | null> {
    const graphAgent = this.files.agents.graph_agents[node];
    const toolFacts = turnToolResults(state).length
      ? [`Resultados de ferramentas deste turno (JSON): ${JSON.stringify(state.mcp_results)}`]
      : [];
    const messages: ChatMessage[] = [
      { role: 'system', content: this.prompts.systemPrompt(node, state, toolFacts) },
      ...this.history(state),
      { role: 'user', content: turnText(state) },
      { role: 'assistant', content: draftAnswer(state) },
      {
        role: 'system',
        content: `Reescreva a resposta anterior seguindo esta orientação de supervisão: ${guidance}`,
      },
    ];
    try {
      const result = await this.llm.chat({ profile: graphAgent.llm_profile, messages });
      return stripAgentPrefix(result.content ?? '', this.prompts.answerPrefix) || null;
    } catch (error) {
      if (!(error instanceof LlmError)) throw error;
      return null;
    }
  }

  /** The system prompt of a graph agent for the state's agent_id (kept for callers of the old facade). */
  systemPrompt(node: DomainAgentNode, state: TurnState): string {
    return this.prompts.systemPrompt(node, state);
  }

  /**
   * The agent's retrieval for the turn: the draft's when it retrieved the same (its records join the turn), else
   * its own; null for an agent without a knowledge base.
   */
  private async knowledge(
    node: DomainAgentNode,
    state: TurnState,
    screen: ContentScreen,
    draft: FirstReplyDraft | undefined,
  ): Promise<RagContext | null> {
    const { state_domain: domain, rag_namespace: namespace } = this.files.agents.graph_agents[node];
    if (!namespace) return null;
    return (
      (await draft?.retrieval(namespace, turnText(state))) ??
      (await this.retrieve(domain, namespace, state, screen))
    );
  }

  /** The agent's tools and prompt for the turn, given its retrieval, and the request of its first model call. */
  private async prepare(
    node: DomainAgentNode,
    state: TurnState,
    interruptedNote: string | null,
    rag: RagContext | null,
  ) {
    const graphAgent = this.files.agents.graph_agents[node];
    const maxToolSteps =
      this.files.toolPolicies.for(state.agent_id).max_tool_steps ?? graphAgent.max_tool_steps;
    const allowed = this.allowedTools(state);
    const tools =
      allowed.length > 0 && maxToolSteps > 0
        ? await this.mcp.describeTools(allowed, { agentId: state.agent_id })
        : [];
    const extra: string[] = [];
    if (rag) extra.push(ragSection(rag));
    if (interruptedNote) extra.push(`Operação pendente encerrada neste turno: ${interruptedNote}`);
    const messages: ChatMessage[] = [
      { role: 'system', content: this.prompts.systemPrompt(node, state, extra) },
      ...this.history(state),
      { role: 'user', content: turnText(state) },
    ];
    const requestAt = (step: number): ChatRequest => {
      const offer = step < maxToolSteps ? tools.map(toChatTool) : [];
      return { profile: graphAgent.llm_profile, messages, ...(offer.length > 0 ? { tools: offer } : {}) };
    };
    return { allowed, messages, requestAt, request: requestAt(0) };
  }

  private async answer(
    node: DomainAgentNode,
    state: TurnState,
    interruptedNote: string | null,
    guarded: {
      tools: ScreenedTools;
      screen: ContentScreen;
      replaced: ActiveTransaction | null;
      draft: FirstReplyDraft | undefined;
    },
  ): Promise<TurnPatch> {
    const rag = await this.knowledge(node, state, guarded.screen, guarded.draft);
    const { allowed, messages, requestAt } = await this.prepare(node, state, interruptedNote, rag);
    const results: McpToolResult[] = [];
    const base: TurnPatch = {
      available_mcp_tools: allowed,
      rag_results: rag && 'documents' in rag ? rag.documents : [],
      context: { ...state.context, agent: node, ...(rag ? { rag: withoutDocuments(rag) } : {}) },
      next_state: null,
      confirmation_required: false,
    };
    let selected: SelectedToolCall | null = null;
    // A streamed turn: each reply's text goes to the client through the output rails as the model writes it.
    const streamed = TurnContextStore.current()?.stream?.answer;
    try {
      for (let step = 0; ; step++) {
        const request = requestAt(step);
        const begin = () => streamed?.begin((raw) => stripAgentPrefix(raw, this.prompts.answerPrefix));
        begin();
        // A speculative first call counts only when it sent exactly this request. Its text reaches the stream
        // only now, after the verdict and the classifier allowed the turn: what it wrote so far, then the rest
        // as it arrives.
        const draft = step === 0 ? guarded.draft : undefined;
        const drafted = draft
          ? await draft.take(request, streamed ? (delta) => streamed.write(delta) : undefined)
          : null;
        // A draft that failed after some of its text was written is not this call's beginning.
        if (draft && !drafted) begin();
        const reply =
          drafted ??
          (await this.llm.chat(
            streamed ? { ...request, onText: (delta: string) => streamed.write(delta) } : request,
          ));
        const offer = request.tools ?? [];
        if (reply.toolCalls.length === 0 || offer.length === 0) {
          await streamed?.end();
          const answer = stripAgentPrefix(reply.content ?? '', this.prompts.answerPrefix);
          return {
            ...base,
            answer: answer || this.unavailable,
            mcp_results: results,
            selected_tool_call: selected,
          };
        }
        messages.push({
          role: 'assistant',
          content: reply.content,
          tool_calls: reply.toolCalls.map((call) => ({
            id: call.id,
            type: 'function' as const,
            function: { name: call.name, arguments: call.arguments },
          })),
        });
        for (const call of reply.toolCalls) {
          const args = parseArguments(call);
          selected = { tool_name: call.name, arguments: args ?? {}, call_id: call.id };
          const config = allowed.includes(call.name) ? this.mcp.toolConfig(call.name) : null;
          if (config?.operation_type === 'transactional' && args !== null) {
            // A transaction takes over the turn: its own messages ask for parameters or confirmation.
            const patch = await this.transactions.start(
              node,
              state,
              call.name,
              args,
              results,
              guarded.tools,
              guarded.replaced,
            );
            return { ...base, ...patch };
          }
          const result = await this.readOnlyCall(call, args, allowed, state, guarded.tools);
          results.push(result);
          messages.push({
            role: 'tool',
            tool_call_id: call.id,
            content: JSON.stringify(toolMessage(result)),
          });
        }
      }
    } catch (error) {
      if (!(error instanceof LlmError)) throw error;
      // A missing model was said once at start-up; each turn without one is not news.
      if (error.kind !== 'not_configured') this.logger.warn(`${node} could not answer: ${error.message}`);
      return {
        ...base,
        answer: this.unavailable,
        mcp_results: results,
        selected_tool_call: selected,
      };
    }
  }

  private async readOnlyCall(
    call: ToolCall,
    args: ToolArguments | null,
    allowed: readonly string[],
    state: TurnState,
    tools: ScreenedTools,
  ): Promise<McpToolResult> {
    if (!allowed.includes(call.name)) {
      return this.mcp.refuse(call.name, {
        code: 'tool_not_allowed',
        message: `tool ${call.name} is not available for this request`,
      });
    }
    if (args === null) {
      return this.mcp.refuse(call.name, {
        code: 'malformed_arguments',
        message: 'arguments are not a JSON object',
      });
    }
    const config = this.mcp.toolConfig(call.name);
    const fromText = config
      ? this.extractor.byPattern(
          call.name,
          config,
          Object.keys(config.args_schema.properties).filter((field) => args[field] === undefined),
          turnText(state),
        )
      : {};
    return tools.callTool(call.name, { ...fromText, ...args }, { context: requestContext(state) });
  }

  /**
   * The intent's mcp_tools, restricted to declared, non-internal tools and to the agent_id's tool policy: the
   * allowlist offered to the model.
   */
  private allowedTools(state: TurnState): string[] {
    const policy = this.files.toolPolicies.for(state.agent_id).allowed_tools;
    return [...new Set(routeTools(state))].filter((name) => {
      const config = this.mcp.toolConfig(name);
      return config !== null && !config.internal && (policy?.includes(name) ?? true);
    });
  }

  /** Retrieval through the retrieval rails: what they block never reaches the prompt, the state or the events. */
  private async retrieve(
    domain: string,
    namespace: string,
    state: TurnState,
    screen: ContentScreen,
    signal?: AbortSignal,
  ): Promise<RagContext> {
    const context = await this.screenedContext(
      await this.rag.retrieveContext(turnText(state), namespace, signal),
      screen,
      state,
      signal,
    );
    this.events.emit(`IC.${domain}_RAG_CONTEXT_EVALUATED`, {
      namespace,
      status: context.status,
      document_count: 'documents' in context ? context.documents.length : 0,
      technical_error: context.status === 'error',
    });
    if (context.status === 'executed') {
      this.events.emit(`IC.${domain}_RAG_CONTEXT_RETRIEVED`, {
        namespace,
        document_count: context.documents.length,
        top_document_ids: context.top_document_ids,
      });
    }
    return context;
  }

  /** The retrieval with only the passages the rails let through (masked where they sanitized). */
  private async screenedContext(
    context: RagContext,
    screen: ContentScreen,
    state: TurnState,
    signal: AbortSignal | undefined,
  ): Promise<RagContext> {
    if (context.status !== 'executed') return context;
    const documents = await screenPassages(context.documents, screen, state, signal);
    return {
      ...context,
      status: documents.length > 0 ? 'executed' : 'empty',
      document_count: documents.length,
      top_document_ids: documents.map((d) => d.document_id),
      top_scores: documents.map((d) => d.score),
      documents,
      withheld_passages: context.documents.length - documents.length,
    };
  }

  private history(state: TurnState): ChatMessage[] {
    return state.history
      .slice(-HISTORY_WINDOW)
      .map((m): ChatMessage => ({ role: m.role, content: m.content }));
  }
}

function toChatTool(tool: ToolDescriptor): ChatTool {
  return {
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}

function parseArguments(call: ToolCall): ToolArguments | null {
  if (call.arguments.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(call.arguments);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as ToolArguments)
      : null;
  } catch {
    return null;
  }
}

/** What the model reads back from a tool: the outcome, without the router's bookkeeping. */
function toolMessage(result: McpToolResult): Pick<McpToolResult, 'ok' | 'result'> & Partial<McpToolResult> {
  return result.ok
    ? { ok: true, result: result.result }
    : { ok: false, error: result.error, result: result.result };
}

function ragSection(rag: RagContext): string {
  if (rag.status === 'error') {
    return (
      'Base de conhecimento: indisponível neste turno por um erro técnico (technical_error_in_rag). ' +
      'Não invente informações de planos ou serviços; use as ferramentas ou diga que não consegue consultar agora.'
    );
  }
  if (rag.status === 'disabled') return '';
  return `Trechos da base de conhecimento (cite apenas o que estiver aqui):\n${formatPassages(rag.documents ?? [])}`;
}

/** The retrieval as the state's `context.rag` keeps it: its passages are in `rag_results`. */
function withoutDocuments(rag: RagContext): RagOutcome {
  if (!('documents' in rag)) return rag;
  const { documents: _documents, ...outcome } = rag;
  return outcome;
}
