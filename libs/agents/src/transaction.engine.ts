import { Inject, Injectable, Logger } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { appConfig, ConfigFilesService, ToolConfig } from '@agent/config';
import {
  ActiveTransaction,
  AgentState,
  ClientMetadata,
  DomainAgentNode,
  McpToolResult,
  PendingToolCall,
  routeTools,
  ToolArguments,
  TurnState,
  turnText,
} from '@agent/contracts';
import { ChatMessage, LlmError, LlmService } from '@agent/llm';
import { McpService } from '@agent/mcp';
import { EventBusService } from '@agent/observability';
import { AgentPrompts } from './agent-prompts';
import { stripAgentPrefix } from './answer-text';
import { ConfirmationClassifier } from './confirmation-classifier';
import { ParameterExtractor } from './parameter-extractor';
import { ScreenedTools } from './screened-content';
import { TransactionSettings, transactionSettingsSchema, TransactionTexts } from './transaction-settings';
import { TransactionEvent, TransactionInterruption } from './transaction.events';
import { begin } from './transaction.flow';
import {
  confirmationLost,
  interrupted,
  onConfirmation,
  onParameters,
  sessionTookOver,
} from './transaction.machine';
import {
  CompositionRequest,
  ToolRequest,
  TransactionPatch,
  TransactionRules,
  TransactionStep,
  TransactionTurn,
} from './transaction.step';
import { TransactionWording } from './transaction.wording';

export const TRANSACTION_SETTINGS_FILE = 'prompts/transactions.yaml';

/** The state of a transaction a turn may resume. */
export interface ResumableTransaction {
  transaction: ActiveTransaction;
  pending: PendingToolCall | null;
}

/**
 * Transactional tools: collect the arguments in `requires`, run the side-effect-free pre-validation, ask for
 * confirmation, and execute once with confirmed: true and an idempotency key. The states are
 * COLLECTING_<state_domain>_PARAMETERS and WAITING_<state_domain>_CONFIRMATION, the state_domain coming from
 * agents.yaml graph_agents. The decisions are the state machine's (transaction.machine.ts); this engine reads
 * the customer's reply with the models, runs the calls the machine asks for and emits its events in order.
 */
@Injectable()
export class TransactionEngine {
  private readonly logger = new Logger(TransactionEngine.name);
  readonly settings: TransactionSettings;
  /** The customer-facing texts, in the language the deployment is configured for. */
  readonly wording: TransactionWording;

  constructor(
    private readonly files: ConfigFilesService,
    private readonly mcp: McpService,
    private readonly llm: LlmService,
    private readonly extractor: ParameterExtractor,
    private readonly classifier: ConfirmationClassifier,
    private readonly prompts: AgentPrompts,
    private readonly events: EventBusService,
    @Inject(appConfig.KEY) app: ConfigType<typeof appConfig>,
  ) {
    this.settings = existsSync(files.path(TRANSACTION_SETTINGS_FILE))
      ? files.load(TRANSACTION_SETTINGS_FILE, transactionSettingsSchema)
      : transactionSettingsSchema.parse({});
    this.wording = new TransactionWording(new TransactionTexts(this.settings, app.DEFAULT_LANGUAGE), (name) =>
      mcp.toolConfig(name),
    );
  }

  /** The active transaction of the state (validated with the state when its checkpoint was loaded). */
  resumable(state: TurnState): ResumableTransaction | null {
    if (!state.active_transaction) return null;
    return { transaction: state.active_transaction, pending: state.pending_tool_call ?? null };
  }

  /** A transactional tool the model called (see `begin`). */
  start(
    node: DomainAgentNode,
    state: TurnState,
    toolName: string,
    modelArguments: ToolArguments,
    turnResults: McpToolResult[],
    tools: ScreenedTools,
    replaced: ActiveTransaction | null = null,
  ): Promise<TransactionPatch> {
    const turn = this.turn(state);
    return this.run(turn, tools, begin(turn, node, toolName, modelArguments, turnResults, replaced));
  }

  /** The turn after the agent asked for parameters or for a confirmation: the reply read, then its transition. */
  async resume(
    state: TurnState,
    resumable: ResumableTransaction,
    tools: ScreenedTools,
  ): Promise<TransactionPatch> {
    const { transaction, pending } = resumable;
    const turn = this.turn(state);
    if (transaction.status === 'COLLECTING_PARAMETERS') {
      const reading = await this.extractor.read({
        toolName: transaction.tool_name,
        config: this.tool(transaction.tool_name),
        operation: this.wording.operation(transaction.tool_name),
        fields: transaction.missing_parameters,
        alternatives: this.alternatives(state, transaction),
        text: turnText(state),
        profile: this.settings.extraction_profile,
        minConfidence: this.settings.confirmation_min_confidence,
      });
      return this.run(turn, tools, onParameters(turn, transaction, reading));
    }
    if (!pending || pending.transaction_id !== transaction.transaction_id) {
      return this.run(turn, tools, confirmationLost(turn, transaction));
    }
    const properties = this.tool(transaction.tool_name).args_schema.properties;
    const decision = await this.classifier.classify({
      operation: `${this.wording.operation(transaction.tool_name)} (${this.wording.arguments(transaction.tool_name, pending.arguments)})`,
      question: lastAssistantMessage(state),
      message: turnText(state),
      history: state.history,
      minConfidence: this.settings.confirmation_min_confidence,
      fields: Object.keys(properties).map((name) => ({
        name,
        description: properties[name].description ?? '',
        value: pending.arguments[name] ?? null,
      })),
      alternatives: this.alternatives(state, transaction),
    });
    return this.run(turn, tools, onConfirmation(turn, transaction, pending, decision));
  }

  /** The turn went to another intent or agent: the transaction ends without running. */
  interrupt(
    state: TurnState,
    transaction: ActiveTransaction,
    reason: TransactionInterruption,
  ): TransactionPatch {
    const step = interrupted(state, transaction, reason);
    this.emitAll(step.events);
    return step.patch;
  }

  /** A person or the end of the session took the turn (see `sessionTookOver`). */
  interruptPending(state: AgentState, reason: 'human_handoff' | 'end_session'): TransactionPatch {
    const step = sessionTookOver(state, reason);
    this.emitAll(step.events);
    return step.patch;
  }

  /** Runs a step to its end: its events, then the calls it asks for, each result feeding the next step. */
  private async run(
    turn: TransactionTurn,
    tools: ScreenedTools,
    first: TransactionStep,
  ): Promise<TransactionPatch> {
    let step = first;
    for (;;) {
      this.emitAll(step.events);
      switch (step.kind) {
        case 'done':
          return step.patch;
        case 'call':
          step = step.then(await this.call(turn.state, tools, step.request));
          break;
        case 'compose':
          step = step.then(await this.compose(turn.state, step.request));
          break;
      }
    }
  }

  private call(state: TurnState, tools: ScreenedTools, request: ToolRequest): Promise<McpToolResult> {
    if (request.purpose === 'pre_validation') {
      return tools.callTool(request.tool_name, request.arguments, { context: requestContext(state) });
    }
    const { pending } = request;
    return tools.call(
      { tool_name: pending.tool_name, server: pending.server, arguments: pending.arguments },
      { confirmed: true, idempotencyKey: request.idempotency_key },
    );
  }

  /** The answer after execution: the agent's model explains the tool result; null when it cannot. */
  private async compose(
    state: TurnState,
    { transaction, result, status }: CompositionRequest,
  ): Promise<string | null> {
    const node = transaction.agent;
    const operation = `${transaction.tool_name} (${this.wording.operation(transaction.tool_name)})`;
    const instruction =
      status === 'COMPLETED'
        ? `A operação ${operation} foi executada após a confirmação do cliente. Resultado (JSON): ` +
          `${JSON.stringify(result.result)}. Informe o cliente de forma breve, usando somente esse resultado.`
        : `A operação ${operation} falhou após a confirmação do cliente: ${this.wording.customerError(result)}. ` +
          'Explique ao cliente de forma breve que nada foi alterado, sem detalhes técnicos.';
    const messages: ChatMessage[] = [
      { role: 'system', content: this.prompts.systemPrompt(node, state) },
      ...state.history.slice(-12).map((m): ChatMessage => ({ role: m.role, content: m.content })),
      { role: 'user', content: turnText(state) },
      { role: 'system', content: instruction },
    ];
    try {
      const reply = await this.llm.chat({
        profile: this.files.agents.graph_agents[node].llm_profile,
        messages,
      });
      return stripAgentPrefix(reply.content ?? '', this.prompts.answerPrefix) || null;
    } catch (error) {
      if (!(error instanceof LlmError)) throw error;
      if (error.kind !== 'not_configured') {
        this.logger.warn(`could not compose the answer of ${transaction.tool_name}: ${error.message}`);
      }
      return null;
    }
  }

  private emitAll(events: readonly TransactionEvent[]): void {
    for (const event of events) this.events.emit(event.name, { ...event.transaction, ...event.details });
  }

  /** The machine's view of this turn: lookups bound to its agent_id, text and request context. */
  private turn(state: TurnState): TransactionTurn {
    const rules: TransactionRules = {
      maxAttempts: this.settings.max_attempts,
      wording: this.wording,
      tool: (name) => this.tool(name),
      stateDomain: (node) => this.files.agents.graph_agents[node].state_domain,
      confirmationRequired: (name) =>
        this.files.toolPolicies.for(state.agent_id).require_confirmation[name] ??
        this.tool(name).require_confirmation,
      prepare: (name, args) =>
        this.mcp.prepareCall(name, args, {
          context: requestContext(state),
          requireComplete: false,
          agentId: state.agent_id,
        }),
      refuse: (name, error) => this.mcp.refuse(name, error),
      patternValues: (name, config, fields) =>
        this.extractor.byPattern(name, config, fields, turnText(state)),
      newId: () => randomUUID(),
      now: () => new Date().toISOString(),
    };
    return { state, rules };
  }

  /** The other transactional operations the turn's intent allows: what a customer may switch to. */
  private alternatives(
    state: TurnState,
    transaction: ActiveTransaction,
  ): { name: string; description: string }[] {
    return [...new Set(routeTools(state))].flatMap((name) => {
      const config = this.mcp.toolConfig(name);
      return name !== transaction.tool_name && config?.operation_type === 'transactional' && !config.internal
        ? [{ name, description: `${this.wording.operation(name)}: ${config.description}` }]
        : [];
    });
  }

  private tool(toolName: string): ToolConfig {
    const config = this.mcp.toolConfig(toolName);
    if (!config) throw new Error(`tool ${toolName} is not declared in tools.yaml`);
    return config;
  }
}

/** Values a tool's `map` may read: the message metadata (msisdn from the channel, ...) and the caller's ids. */
export function requestContext(state: TurnState): ClientMetadata {
  return {
    ...state.metadata,
    ...(state.user_id ? { user_id: state.user_id } : {}),
    tenant_id: state.tenant_id,
  };
}

function lastAssistantMessage(state: TurnState): string {
  const history = state.history;
  for (let i = history.length - 1; i >= 0; i--) {
    if (history[i].role === 'assistant') return history[i].content;
  }
  return '';
}
