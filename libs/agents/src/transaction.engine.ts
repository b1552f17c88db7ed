import { Inject, Injectable, Logger } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { z } from 'zod';
import { appConfig, ConfigFilesService, ToolConfig } from '@agent/config';
import {
  ActiveTransaction,
  AgentState,
  collectingState,
  ClientMetadata,
  DomainAgentNode,
  EventPayload,
  noPendingTransaction,
  OperationResult,
  PendingToolCall,
  PreValidation,
  ToolArguments,
  TransactionEvidence,
  TransactionStatus,
  waitingState,
} from '@agent/contracts';
import { ChatMessage, LlmError, LlmService } from '@agent/llm';
import { MCP_UNAVAILABLE_ERROR, McpService, McpToolResult, requiredArguments } from '@agent/mcp';
import { EventBusService } from '@agent/observability';
import { AgentPrompts } from './agent-prompts';
import { stripAgentPrefix } from './answer-text';
import { ConfirmationClassifier } from './confirmation-classifier';
import { ParameterExtractor } from './parameter-extractor';
import { executedButWithheld, ScreenedTools } from './screened-content';
import {
  fillTemplate,
  TransactionMessageKey,
  TransactionSettings,
  transactionSettingsSchema,
  TransactionTexts,
} from './transaction-settings';

type Patch = Partial<AgentState>;

/*
 * What the engine reads of a tool's own JSON answer: a field of another type counts as absent, and an answer
 * that is no object reads as `{}`.
 */
const preValidationBody = z
  .object({
    eligible: z.boolean().optional().catch(undefined),
    reason: z.string().optional().catch(undefined),
    message: z.string().optional().catch(undefined),
  })
  .catch({});
const executionBody = z.object({ idempotent_replay: z.boolean().optional().catch(undefined) }).catch({});

export const TRANSACTION_SETTINGS_FILE = 'prompts/transactions.yaml';

/** Finished operations `operation_results` keeps, newest last: the state stays bounded. */
const OPERATION_RESULTS_KEPT = 20;

/** The state of a transaction a turn may resume. */
export interface ResumableTransaction {
  transaction: ActiveTransaction;
  pending: PendingToolCall | null;
}

/** The idempotency key of a confirmed call: (conversation, turn that asked, tool call). */
export function idempotencyKey(conversationKey: string, pending: PendingToolCall): string {
  const digest = createHash('sha256')
    .update(`${conversationKey}\n${pending.requested_turn ?? ''}\n${pending.call_id}\n${pending.tool_name}`)
    .digest('hex');
  return `txn-${digest}`;
}

/**
 * Transactional tools: collect the arguments in `requires`, run the side-effect-free
 * pre-validation, ask for confirmation, and execute once with confirmed: true and an idempotency key.
 * The states are COLLECTING_<state_domain>_PARAMETERS and WAITING_<state_domain>_CONFIRMATION, the
 * state_domain coming from agents.yaml graph_agents.
 */
@Injectable()
export class TransactionEngine {
  private readonly logger = new Logger(TransactionEngine.name);
  readonly settings: TransactionSettings;
  /** The customer-facing texts, in the language the deployment is configured for. */
  private readonly texts: TransactionTexts;

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
    this.texts = new TransactionTexts(this.settings, app.DEFAULT_LANGUAGE);
  }

  /** The active transaction of the state (validated with the state when its checkpoint was loaded). */
  resumable(state: AgentState): ResumableTransaction | null {
    if (!state.active_transaction) return null;
    return { transaction: state.active_transaction, pending: state.pending_tool_call ?? null };
  }

  /**
   * A transactional tool the model called: collect, pre-validate, confirm (or execute when no confirmation).
   * `replaced` is the transaction this one replaces: its values for fields of the same name carry over, unless
   * the message or the model gives new ones.
   */
  async start(
    node: DomainAgentNode,
    state: AgentState,
    toolName: string,
    modelArguments: ToolArguments,
    turnResults: McpToolResult[],
    tools: ScreenedTools,
    replaced: ActiveTransaction | null = null,
  ): Promise<Patch> {
    const config = this.toolConfig(toolName);
    const fromText = this.extractor.byPattern(
      toolName,
      config,
      requiredArguments(config).filter((field) => isMissing(modelArguments[field])),
      userText(state),
    );
    const carried = replaced
      ? Object.fromEntries(
          Object.entries(replaced.arguments).filter(
            ([field, value]) =>
              field in config.args_schema.properties &&
              !isMissing(value) &&
              isMissing(fromText[field]) &&
              isMissing(modelArguments[field]),
          ),
        )
      : {};
    const prepared = this.mcp.prepareCall(
      toolName,
      { ...carried, ...fromText, ...modelArguments },
      { context: requestContext(state), requireComplete: false, agentId: state.agent_id },
    );
    if (!prepared.ok && prepared.error.code !== 'invalid_arguments') {
      // Tools disabled or not configured: nothing to collect, the operation cannot run.
      return this.finishWithoutCall(node, state, this.mcp.refuse(toolName, prepared.error), turnResults);
    }
    const transaction: ActiveTransaction = {
      transaction_id: randomUUID(),
      tool_name: toolName,
      server: config.server,
      agent: node,
      state_domain: this.files.agents.graph_agents[node].state_domain,
      // Invalid arguments are dropped, so they are collected again like missing ones.
      arguments: prepared.ok ? prepared.call.arguments : prepared.arguments,
      status: 'COLLECTING_PARAMETERS',
      started_turn: state.turn ?? null,
      updated_turn: state.turn ?? null,
      started_from_intent: state.intent ?? null,
      intent: state.intent ?? null,
      tool_description: config.description,
      requires: requiredArguments(config),
      missing_parameters: [],
      attempts: 0,
      ...(replaced
        ? { replaces: replaced.transaction_id, carried_over: Object.keys(carried), intent: replaced.intent }
        : {}),
    };
    if (replaced) {
      this.emit('IC.TRANSACTION_REPLACED', transaction, {
        replaced_transaction_id: replaced.transaction_id,
        replaced_tool_name: replaced.tool_name,
        carried_over: Object.keys(carried),
      });
    }
    return this.advance(node, state, transaction, turnResults, false, tools);
  }

  /** The turn after the agent asked for parameters or for a confirmation. */
  async resume(
    node: DomainAgentNode,
    state: AgentState,
    resumable: ResumableTransaction,
    tools: ScreenedTools,
  ): Promise<Patch> {
    const { transaction, pending } = resumable;
    const config = this.toolConfig(transaction.tool_name);
    if (transaction.status === 'COLLECTING_PARAMETERS') {
      const reading = await this.extractor.read({
        toolName: transaction.tool_name,
        config,
        operation: this.operationLabel(transaction.tool_name),
        fields: transaction.missing_parameters,
        alternatives: this.alternatives(state, transaction),
        text: userText(state),
        profile: this.settings.extraction_profile,
        minConfidence: this.settings.confirmation_min_confidence,
      });
      this.emit('IC.TRANSACTION_REPLY_CLASSIFIED', transaction, {
        stage: 'collecting_parameters',
        action: reading.action,
        confidence: reading.confidence,
        operation: reading.operation,
      });
      if (reading.action === 'ABANDON') return this.abandon(state, transaction);
      if (reading.action === 'REPLACE' && reading.operation) {
        return this.replace(node, state, transaction, reading.operation, reading.values, tools);
      }
      const found = reading.values;
      const prepared = this.mcp.prepareCall(
        transaction.tool_name,
        { ...transaction.arguments, ...found },
        { context: requestContext(state), requireComplete: false, agentId: state.agent_id },
      );
      const merged = prepared.ok ? prepared.call.arguments : prepared.arguments;
      const progressed = transaction.missing_parameters.some((field) => !isMissing(merged[field]));
      const next: ActiveTransaction = {
        ...transaction,
        arguments: merged,
        updated_turn: state.turn ?? null,
        attempts: progressed ? 0 : transaction.attempts + 1,
      };
      if (!progressed && next.attempts >= this.settings.max_attempts) return this.giveUp(state, next);
      return this.advance(node, state, next, [], !progressed, tools);
    }
    if (!pending || pending.transaction_id !== transaction.transaction_id) {
      // The confirmation latch lost its call (older checkpoint): validate and ask again rather than guess.
      return this.validateAndConfirm(
        node,
        state,
        { ...transaction, status: 'COLLECTING_PARAMETERS' },
        [],
        tools,
      );
    }
    const properties = config.args_schema.properties;
    const decision = await this.classifier.classify({
      operation: `${this.operationLabel(transaction.tool_name)} (${this.argumentsText(transaction.tool_name, pending.arguments)})`,
      question: lastAssistantMessage(state),
      message: userText(state),
      history: state.history ?? [],
      minConfidence: this.settings.confirmation_min_confidence,
      fields: Object.keys(properties).map((name) => ({
        name,
        description: properties[name].description ?? '',
        value: pending.arguments[name] ?? null,
      })),
      alternatives: this.alternatives(state, transaction),
    });
    this.emit('IC.TRANSACTION_CONFIRMATION_CLASSIFIED', transaction, {
      decision: decision.decision,
      confidence: decision.confidence,
      accepted: decision.accepted,
      fallback_reason: decision.fallback_reason,
      ...(decision.operation ? { operation: decision.operation } : {}),
    });
    if (decision.decision === 'CONFIRM') return this.execute(node, state, transaction, pending, [], tools);
    if (decision.decision === 'CORRECT') {
      return this.correct(node, state, transaction, decision.values, tools);
    }
    if (decision.decision === 'REPLACE' && decision.operation) {
      return this.replace(node, state, transaction, decision.operation, decision.values, tools);
    }
    if (decision.decision === 'REJECT') {
      this.emit('IC.TRANSACTION_CANCELLED', transaction, { source: 'customer' });
      return this.terminal(state, transaction, 'CANCELLED', this.message('cancelled', transaction), {
        confirmation_received: false,
        tool_policy_result: { action: 'cancelled_by_user', tool_name: transaction.tool_name },
      });
    }
    const next = { ...transaction, attempts: transaction.attempts + 1, updated_turn: state.turn ?? null };
    if (next.attempts >= this.settings.max_attempts) return this.giveUp(state, next);
    return {
      answer: this.message('confirm_again', next, {
        arguments: this.argumentsText(next.tool_name, pending.arguments),
      }),
      active_transaction: next,
      pending_tool_call: pending,
      transaction_status: 'AWAITING_CONFIRMATION',
      confirmation_required: true,
      confirmation_received: false,
      next_state: waitingState(next.state_domain),
      mcp_results: [],
      tool_policy_result: {
        action: 'confirmation_unclear',
        tool_name: next.tool_name,
        decision: decision.decision,
      },
    };
  }

  /** The customer gave the operation up while it collected parameters: it ends now, nothing ran. */
  private abandon(state: AgentState, transaction: ActiveTransaction): Patch {
    this.emit('IC.TRANSACTION_CANCELLED', transaction, {
      source: 'customer',
      stage: 'collecting_parameters',
    });
    return this.terminal(state, transaction, 'CANCELLED', this.message('cancelled', transaction), {
      last_transaction: {
        ...transaction,
        status: 'CANCELLED',
        interruption: 'explicit_abandonment',
        finished_turn: state.turn ?? null,
      },
      tool_policy_result: { action: 'abandoned_by_user', tool_name: transaction.tool_name },
    });
  }

  /**
   * The customer wants another operation instead: this one ends unrun and the new one starts with what carries
   * over (fields of the same name) and what the message gives.
   */
  private async replace(
    node: DomainAgentNode,
    state: AgentState,
    transaction: ActiveTransaction,
    toolName: string,
    values: ToolArguments,
    tools: ScreenedTools,
  ): Promise<Patch> {
    const interrupted = this.interrupt(state, transaction, 'replaced');
    const given = Object.fromEntries(
      Object.entries(values).filter(([field]) => field in this.toolConfig(toolName).args_schema.properties),
    );
    const next = await this.start(
      node,
      { ...state, ...interrupted },
      toolName,
      given,
      [],
      tools,
      transaction,
    );
    return { ...interrupted, ...next };
  }

  /** The customer changed values of the pending call: same transaction, validated and confirmed again. */
  private async correct(
    node: DomainAgentNode,
    state: AgentState,
    transaction: ActiveTransaction,
    values: ToolArguments,
    tools: ScreenedTools,
  ): Promise<Patch> {
    const prepared = this.mcp.prepareCall(
      transaction.tool_name,
      { ...transaction.arguments, ...values },
      { context: requestContext(state), requireComplete: false, agentId: state.agent_id },
    );
    const corrected: ActiveTransaction = {
      ...transaction,
      arguments: prepared.ok ? prepared.call.arguments : prepared.arguments,
      attempts: 0,
      updated_turn: state.turn ?? null,
    };
    this.emit('IC.TRANSACTION_CORRECTED', corrected, { fields: Object.keys(values) });
    // A value that does not validate is dropped and collected again, like a missing one.
    return this.advance(node, state, corrected, [], false, tools);
  }

  /** The other transactional operations the turn's intent allows: what a customer may switch to. */
  private alternatives(
    state: AgentState,
    transaction: ActiveTransaction,
  ): { name: string; description: string }[] {
    return [...new Set(state.mcp_tools ?? [])].flatMap((name) => {
      const config = this.mcp.toolConfig(name);
      return name !== transaction.tool_name && config?.operation_type === 'transactional' && !config.internal
        ? [{ name, description: `${this.operationLabel(name)}: ${config.description}` }]
        : [];
    });
  }

  /** The router moved the turn away (or the customer gave up): the transaction ends without running. */
  interrupt(state: AgentState, transaction: ActiveTransaction, reason: string): Patch {
    this.emit('IC.TRANSACTION_INTERRUPTED', transaction, { reason });
    return {
      operation_results: withOutcome(state, transaction, 'CANCELLED'),
      ...noPendingTransaction(),
      transaction_status: 'CANCELLED',
      next_state: null,
      last_transaction: {
        ...transaction,
        status: 'CANCELLED',
        interruption: reason,
        finished_turn: state.turn ?? null,
      },
      tool_policy_result: { action: 'interrupted', tool_name: transaction.tool_name, reason },
    };
  }

  /** The customer-facing name of the operation ("the cancellation of the order"). */
  operationLabel(toolName: string): string {
    return this.texts.operation(toolName);
  }

  message(
    key: TransactionMessageKey,
    transaction: ActiveTransaction,
    values: Record<string, string> = {},
  ): string {
    return fillTemplate(this.texts.messages[key], {
      operation: this.operationLabel(transaction.tool_name),
      arguments: this.argumentsText(transaction.tool_name, transaction.arguments),
      fields: this.fieldsText(transaction.tool_name, transaction.missing_parameters),
      validation: '',
      reason: '',
      error: '',
      ...values,
    });
  }

  private async advance(
    node: DomainAgentNode,
    state: AgentState,
    transaction: ActiveTransaction,
    turnResults: McpToolResult[],
    again: boolean,
    tools: ScreenedTools,
  ): Promise<Patch> {
    const missing = transaction.requires.filter((field) => isMissing(transaction.arguments[field]));
    if (missing.length === 0) return this.validateAndConfirm(node, state, transaction, turnResults, tools);
    const collecting: ActiveTransaction = {
      ...transaction,
      status: 'COLLECTING_PARAMETERS',
      missing_parameters: missing,
    };
    this.emit('IC.TRANSACTION_PARAMETERS_REQUIRED', collecting, { missing_parameters: missing });
    return {
      answer: this.message(again ? 'ask_parameters_again' : 'ask_parameters', collecting),
      active_transaction: collecting,
      pending_tool_call: null,
      transaction_status: 'COLLECTING_PARAMETERS',
      missing_parameters: missing,
      confirmation_required: false,
      confirmation_received: false,
      next_state: collectingState(collecting.state_domain),
      selected_tool_call: { tool_name: collecting.tool_name, arguments: collecting.arguments },
      tool_policy_result: {
        action: 'collecting_parameters',
        tool_name: collecting.tool_name,
        missing_parameters: missing,
      },
      mcp_results: [
        ...turnResults,
        {
          ok: true,
          executed: false,
          collecting_parameters: true,
          tool_name: collecting.tool_name,
          transaction_status: 'COLLECTING_PARAMETERS',
          missing_parameters: missing,
        },
      ],
    };
  }

  private async validateAndConfirm(
    node: DomainAgentNode,
    state: AgentState,
    transaction: ActiveTransaction,
    turnResults: McpToolResult[],
    tools: ScreenedTools,
  ): Promise<Patch> {
    const config = this.toolConfig(transaction.tool_name);
    const results = [...turnResults];
    let preValidation: PreValidation | null = null;
    let validationMessage = '';
    if (config.pre_validation) {
      const validator = config.pre_validation.tool;
      const validatorConfig = this.toolConfig(validator);
      const args = Object.fromEntries(
        Object.entries(transaction.arguments).filter(
          ([key]) => key in validatorConfig.args_schema.properties,
        ),
      );
      this.emit('IC.TRANSACTION_PREVALIDATION_REQUESTED', transaction, { validator });
      const result = await tools.callTool(validator, args, { context: requestContext(state) });
      results.push(result);
      const body = preValidationBody.parse(result.result);
      const eligible = result.ok ? body.eligible !== false : null;
      const message = body.message ?? '';
      preValidation = {
        tool_name: validator,
        ok: result.ok,
        eligible,
        reason: body.reason ?? null,
        message,
        error: result.error,
        turn: state.turn ?? null,
      };
      if (result.ok && eligible === false) {
        this.emit('IC.TRANSACTION_PREVALIDATION_REJECTED', transaction, {
          validator,
          reason: preValidation.reason,
        });
        return this.terminal(
          state,
          transaction,
          'OUT_OF_SCOPE',
          this.message('out_of_scope', transaction, { reason: message || String(preValidation.reason) }),
          { transaction_pre_validation: preValidation, mcp_results: results },
        );
      }
      if (!result.ok && !config.pre_validation.fail_open) {
        this.emit('IC.TRANSACTION_FAILED', transaction, { stage: 'pre_validation', error: result.error });
        return this.terminal(state, transaction, 'FAILED', this.message('validation_failed', transaction), {
          transaction_pre_validation: preValidation,
          mcp_results: results,
        });
      }
      if (result.ok) {
        this.emit('IC.TRANSACTION_PREVALIDATION_PASSED', transaction, { validator });
        validationMessage = message;
      }
    }
    const pending: PendingToolCall = {
      call_id: randomUUID(),
      transaction_id: transaction.transaction_id,
      tool_name: transaction.tool_name,
      server: transaction.server,
      arguments: transaction.arguments,
      requested_turn: state.turn ?? null,
    };
    const confirm =
      this.files.toolPolicies.for(state.agent_id).require_confirmation[transaction.tool_name] ??
      config.require_confirmation;
    if (!confirm) return this.execute(node, state, transaction, pending, results, tools);
    const waiting: ActiveTransaction = {
      ...transaction,
      status: 'AWAITING_CONFIRMATION',
      missing_parameters: [],
      attempts: 0,
      updated_turn: state.turn ?? null,
    };
    this.emit('IC.TRANSACTION_CONFIRMATION_REQUIRED', waiting, { call_id: pending.call_id });
    return {
      answer: this.message('confirm', waiting, {
        validation: validationMessage ? `${validationMessage} ` : '',
      }),
      active_transaction: waiting,
      pending_tool_call: pending,
      transaction_status: 'AWAITING_CONFIRMATION',
      transaction_pre_validation: preValidation,
      missing_parameters: [],
      confirmation_required: true,
      confirmation_received: false,
      next_state: waitingState(waiting.state_domain),
      selected_tool_call: { tool_name: waiting.tool_name, arguments: waiting.arguments },
      tool_policy_result: { action: 'confirmation_requested', tool_name: waiting.tool_name },
      mcp_results: results,
    };
  }

  private async execute(
    node: DomainAgentNode,
    state: AgentState,
    transaction: ActiveTransaction,
    pending: PendingToolCall,
    turnResults: McpToolResult[],
    tools: ScreenedTools,
  ): Promise<Patch> {
    const key = idempotencyKey(state.conversation_key ?? '', pending);
    const result = await tools.call(
      { tool_name: pending.tool_name, server: pending.server, arguments: pending.arguments },
      { confirmed: true, idempotencyKey: key },
    );
    const status: TransactionStatus = result.ok || executedButWithheld(result) ? 'COMPLETED' : 'FAILED';
    const body = executionBody.parse(result.result);
    const evidence: TransactionEvidence = {
      transaction_id: transaction.transaction_id,
      call_id: pending.call_id,
      tool_name: pending.tool_name,
      server: pending.server,
      arguments: pending.arguments,
      status,
      ok: result.ok,
      result: result.result,
      error: result.error,
      idempotency_key: key,
      idempotent_replay: body.idempotent_replay === true,
      requested_turn: pending.requested_turn,
      executed_turn: state.turn ?? null,
      executed_at: new Date().toISOString(),
      latency_ms: result.latency_ms,
    };
    this.emit(result.ok ? 'IC.TRANSACTION_EXECUTED' : 'IC.TRANSACTION_FAILED', transaction, {
      stage: 'execution',
      ok: result.ok,
      error: result.error,
      idempotent_replay: evidence.idempotent_replay,
    });
    const answer = await this.compose(node, state, transaction, result, status);
    return {
      ...this.terminal(state, transaction, status, answer, {
        confirmation_received: true,
        mcp_results: [...turnResults, result],
        tool_policy_result: {
          action: 'executed_after_confirmation',
          tool_name: pending.tool_name,
          ok: result.ok,
        },
      }),
      transaction_evidence: [...(state.transaction_evidence ?? []), evidence],
      last_transaction_evidence: evidence,
      relevant_transaction_evidence: [evidence],
    };
  }

  /** The answer after execution: the agent's model explains the tool result; a template when it cannot. */
  private async compose(
    node: DomainAgentNode,
    state: AgentState,
    transaction: ActiveTransaction,
    result: McpToolResult,
    status: TransactionStatus,
  ): Promise<string> {
    const fallback =
      status === 'COMPLETED'
        ? this.message('completed', transaction)
        : this.message('failed', transaction, { error: this.customerError(result) });
    const instruction =
      status === 'COMPLETED'
        ? `A operação ${transaction.tool_name} (${this.operationLabel(transaction.tool_name)}) foi executada após a ` +
          `confirmação do cliente. Resultado (JSON): ${JSON.stringify(result.result)}. Informe o cliente de forma ` +
          'breve, usando somente esse resultado.'
        : `A operação ${transaction.tool_name} (${this.operationLabel(transaction.tool_name)}) falhou após a ` +
          `confirmação do cliente: ${this.customerError(result)}. Explique ao cliente de forma breve que nada foi ` +
          'alterado, sem detalhes técnicos.';
    const messages: ChatMessage[] = [
      { role: 'system', content: this.prompts.systemPrompt(node, state) },
      ...(state.history ?? []).slice(-12).map((m): ChatMessage => ({ role: m.role, content: m.content })),
      { role: 'user', content: userText(state) },
      { role: 'system', content: instruction },
    ];
    try {
      const reply = await this.llm.chat({
        profile: this.files.agents.graph_agents[node].llm_profile,
        messages,
      });
      const text = stripAgentPrefix(reply.content ?? '', this.prompts.answerPrefix);
      return text || fallback;
    } catch (error) {
      if (!(error instanceof LlmError)) throw error;
      if (error.kind !== 'not_configured') {
        this.logger.warn(`could not compose the answer of ${transaction.tool_name}: ${error.message}`);
      }
      return fallback;
    }
  }

  private giveUp(state: AgentState, transaction: ActiveTransaction): Patch {
    this.emit('IC.TRANSACTION_CANCELLED', transaction, { source: 'max_attempts' });
    return this.terminal(state, transaction, 'CANCELLED', this.message('gave_up', transaction), {
      tool_policy_result: { action: 'cancelled_after_unclear_answers', tool_name: transaction.tool_name },
    });
  }

  /** Ends a transaction that never reached the tool (tools disabled, server not configured). */
  private finishWithoutCall(
    node: DomainAgentNode,
    state: AgentState,
    refused: McpToolResult,
    turnResults: McpToolResult[],
  ): Patch {
    const toolName = refused.tool_name;
    const error = refused.error ?? '';
    const config = this.toolConfig(toolName);
    const transaction: ActiveTransaction = {
      transaction_id: randomUUID(),
      tool_name: toolName,
      server: config.server,
      agent: node,
      state_domain: this.files.agents.graph_agents[node].state_domain,
      arguments: {},
      status: 'COLLECTING_PARAMETERS',
      started_turn: state.turn ?? null,
      updated_turn: state.turn ?? null,
      started_from_intent: state.intent ?? null,
      intent: state.intent ?? null,
      tool_description: config.description,
      requires: requiredArguments(config),
      missing_parameters: [],
      attempts: 0,
    };
    this.emit('IC.TRANSACTION_FAILED', transaction, { stage: 'preparation', error });
    return this.terminal(state, transaction, 'FAILED', this.message('failed', transaction, { error }), {
      mcp_results: [...turnResults, refused],
    });
  }

  /**
   * Common shape of every finished transaction: latch cleared, next_state null, last_transaction set, and its
   * outcome added to `operation_results`.
   */
  private terminal(
    state: AgentState,
    transaction: ActiveTransaction,
    status: TransactionStatus,
    answer: string,
    extra: Patch,
  ): Patch {
    return {
      operation_results: withOutcome(state, transaction, status),
      answer,
      ...noPendingTransaction(),
      transaction_status: status,
      next_state: null,
      mcp_results: [],
      last_transaction: {
        ...transaction,
        status,
        finished_turn: state.turn ?? null,
      },
      selected_tool_call: { tool_name: transaction.tool_name, arguments: transaction.arguments },
      ...extra,
    };
  }

  /** Tool errors a customer may read; infrastructure errors become a neutral sentence. */
  private customerError(result: McpToolResult): string {
    if (result.error === MCP_UNAVAILABLE_ERROR || /did not answer within/.test(result.error ?? '')) {
      return this.texts.messages.system_unavailable;
    }
    return result.error ?? this.texts.messages.unknown_error;
  }

  private toolConfig(toolName: string): ToolConfig {
    const config = this.mcp.toolConfig(toolName);
    if (!config) throw new Error(`tool ${toolName} is not declared in tools.yaml`);
    return config;
  }

  private argumentsText(toolName: string, args: ToolArguments): string {
    const properties = Object.keys(this.mcp.toolConfig(toolName)?.args_schema.properties ?? {});
    return properties
      .filter((name) => !isMissing(args[name]))
      .map((name) => `${this.texts.argument(name)} ${String(args[name])}`)
      .join(', ');
  }

  private fieldsText(toolName: string, fields: readonly string[]): string {
    const properties = this.mcp.toolConfig(toolName)?.args_schema.properties ?? {};
    return this.texts.list(
      fields.map((field) => this.texts.field(field) ?? (properties[field]?.description || field)),
    );
  }

  private emit(
    name: `IC.${string}`,
    transaction: ActiveTransaction,
    payload: EventPayload<`IC.${string}`>,
  ): void {
    this.events.emit(name, {
      transaction_id: transaction.transaction_id,
      tool_name: transaction.tool_name,
      agent: transaction.agent,
      ...payload,
    });
  }
}

/** `operation_results` with this transaction's outcome, the newest OPERATION_RESULTS_KEPT by transaction id. */
function withOutcome(
  state: AgentState,
  transaction: ActiveTransaction,
  status: TransactionStatus,
): Record<string, OperationResult> {
  const outcome: OperationResult = {
    tool_name: transaction.tool_name,
    agent: transaction.agent,
    intent: transaction.intent,
    status,
    arguments: transaction.arguments,
    finished_turn: state.turn ?? null,
  };
  return Object.fromEntries(
    [
      ...Object.entries(state.operation_results ?? {}).filter(([id]) => id !== transaction.transaction_id),
      [transaction.transaction_id, outcome] as const,
    ].slice(-OPERATION_RESULTS_KEPT),
  );
}

function isMissing(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
}

export function userText(state: AgentState): string {
  return state.sanitized_input ?? state.user_text ?? '';
}

/** Values a tool's `map` may read: the message metadata (msisdn from the channel, ...) and the caller's ids. */
export function requestContext(state: AgentState): ClientMetadata {
  return {
    ...(state.metadata ?? {}),
    ...(state.user_id ? { user_id: state.user_id } : {}),
    ...(state.tenant_id ? { tenant_id: state.tenant_id } : {}),
  };
}

function lastAssistantMessage(state: AgentState): string {
  const history = state.history ?? [];
  for (let i = history.length - 1; i >= 0; i--) {
    if (history[i].role === 'assistant') return history[i].content;
  }
  return '';
}
