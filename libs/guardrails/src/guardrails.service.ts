import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleInit } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import {
  appConfig,
  ConfigFileError,
  ConfigFilesService,
  deploymentSecrets,
  guardrailsConfig,
  loadYamlFile,
  PerAgent,
} from '@agent/config';
import {
  type ContentScreen,
  type ContentScreenRequest,
  type ContentScreenResult,
  draftAnswer,
  type EventName,
  type RailDecision,
  type ScreenedStage,
  type TurnPatch,
  turnRailDecisions,
  type TurnState,
  turnText,
} from '@agent/contracts';
import { Counter } from 'prom-client';
import { LlmError, LlmService } from '@agent/llm';
import { EventBusService, MetricsService } from '@agent/observability';
import { ConfiguredRail, ExecutorObserver, ParallelRailExecutor, StageOutcome, StageRun } from './executor';
import {
  GUARDRAILS_FILE,
  GuardrailsFile,
  guardrailsFileSchema,
  resolveGuardrailsConfig,
  ResolvedGuardrailsConfig,
} from './guardrails.config';
import { DraftVerdict, draftVerdict } from './answer-release';
import { GuardrailMessages, messageFor } from './messages';
import { GuardrailModelHealth, GuardrailModelReport } from './model-health';
import { ModelStage } from './model-stage';
import { aggregateAction, decisionsOf, firstWith, guidanceOf } from './output-supervisor';
import { reportedCodes } from './reported-codes';
import { isApproving, isTerminal, RAIL_STAGES, RailAction, RailResult, RailStage } from './rail.types';
import { RAIL_CATALOGUE } from './rails/catalogue';
import type { RailEnvironment } from './rails/rail-definition';
import { applyPolicy, policyFor, ProtectedText } from './personal-data-policy';
import { cutAtSentence, withheldPlaceholder, withoutInvisible } from './text';
import { LlmVerdictClient } from './rails/model-verdict';

export interface InputGuardrailsResult {
  blocked: boolean;
  decisions: RailDecision[];
  /** Input after sanitizing rails, without invisible characters: what every prompt sees. */
  sanitizedText: string;
  /** The safe user message when blocked. */
  message?: string;
  /** What the history keeps of a message blocked for its size: its length and hash, never its text. */
  withheldText?: string;
}

/** The guardrail model's input verdict (see `inputVerdict`). */
export interface InputVerdict {
  blocked: boolean;
  /** The model part's decisions (none when no rail asked the model). */
  decisions: RailDecision[];
  message?: string;
}

export interface OutputGuardrailsResult {
  blocked: boolean;
  decisions: RailDecision[];
  answer: string;
}

/** The per-rail GRL events of the guardrail catalogue (docs/api.md, events); GRL.009 summarises a stage. */
type RailResultEvent = Exclude<Extract<EventName, `GRL.${string}`>, typeof GRL_SUMMARY>;
const GRL_BY_ACTION: Record<RailAction, RailResultEvent> = {
  allow: 'GRL.002',
  sanitize: 'GRL.003',
  block: 'GRL.004',
  retry: 'GRL.005',
  handover: 'GRL.006',
  observe: 'GRL.007',
};
const GRL_FAIL_CLOSED: RailResultEvent = 'GRL.008';
const GRL_SUMMARY = 'GRL.009';

const SCREENED_STAGES: readonly ScreenedStage[] = ['retrieval', 'tool', 'memory'];

/** Observes nothing: for draft screenings, whose decisions the whole answer's pass records. */
const SILENT_OBSERVER: ExecutorObserver = {
  result: () => undefined,
  railFailed: () => undefined,
  completed: () => undefined,
};

/** Routes whose answer is a session-control message: never rewritten by output rails. */
const SESSION_CONTROL_ROUTES = new Set(['human_handoff', 'end_session']);

/** One guardrails file as the service runs it: guardrails.yaml, or an agent_id's own file. */
interface RailPolicy {
  path: string;
  config: ResolvedGuardrailsConfig;
  rails: Record<RailStage, ConfiguredRail[]>;
  executor: ParallelRailExecutor;
  /** The same rails without events: drafts of a streamed answer are screened many times per turn. */
  draftExecutor: ParallelRailExecutor;
  modelStage: ModelStage;
  /** Its guardrail-model calls in a row, judged by its own `degraded_after_failures`. */
  modelHealth: GuardrailModelHealth;
}

/** Facade of GuardrailsModule: input rails, output supervisor and output rails. */
@Injectable()
export class GuardrailsService implements OnModuleInit, OnApplicationBootstrap {
  private readonly logger = new Logger(GuardrailsService.name);
  /** Each agent_id's rails: its agents.yaml `guardrails` file, else guardrails.yaml. */
  private readonly policies: PerAgent<RailPolicy>;
  /** No LLM profile of the runtime has an endpoint: there is no model for a verdict, nor one to protect. */
  private readonly noModels: boolean;
  private readonly failClosedBlocks: Counter<'stage' | 'code' | 'cause'>;
  /** Rails already reported as unusable for lack of an LLM endpoint: logged once, not every turn. */
  private readonly notConfiguredReported = new Set<string>();
  /** Stages some part of the runtime asked to run (see `contentScreen`). */
  private readonly screenedStages = new Set<ScreenedStage>();
  /** What the rails know of the deployment: its secrets, which no answer may repeat. */
  private readonly environment: RailEnvironment = { secrets: deploymentSecrets() };

  constructor(
    files: ConfigFilesService,
    @Inject(guardrailsConfig.KEY) private readonly env: ConfigType<typeof guardrailsConfig>,
    private readonly llm: LlmService,
    private readonly events: EventBusService,
    private readonly metrics: MetricsService,
    @Inject(appConfig.KEY) app: ConfigType<typeof appConfig>,
  ) {
    const global = files.load(GUARDRAILS_FILE, guardrailsFileSchema);
    this.failClosedBlocks = new Counter({
      name: 'agent_guardrail_fail_closed_blocks_total',
      help: 'Texts blocked because a fail-closed rail could not decide (model error, timeout, invalid verdict)',
      labelNames: ['stage', 'code', 'cause'] as const,
      registers: [metrics.registry],
    });
    this.noModels = !llm.describe().configured;
    const observer = this.observer();
    const policy = (file: GuardrailsFile, path: string) =>
      this.railPolicy(path, resolveGuardrailsConfig(file, app.DEFAULT_LANGUAGE), observer);
    this.policies = files.perAgent('guardrails', policy(global, files.path(GUARDRAILS_FILE)), (path) =>
      policy(loadYamlFile(path, guardrailsFileSchema), path),
    );
  }

  onModuleInit(): void {
    for (const policy of this.policies.distinct()) this.describePolicy(policy);
  }

  private railPolicy(path: string, config: ResolvedGuardrailsConfig, observer: ExecutorObserver): RailPolicy {
    const { file } = config;
    const rails = Object.fromEntries(
      RAIL_STAGES.map((stage) => [
        stage,
        config.stages[stage].map((entry) => ({
          rail: requireDefinition(entry.code).create(entry.params, this.environment),
          failClosed: entry.fail_closed ?? file.fail_closed,
          timeoutMs: entry.timeout_ms ?? file.timeout_ms,
        })),
      ]),
    ) as Record<RailStage, ConfiguredRail[]>;
    // Per file: an agent's file may name another model, and its own tolerance for that model failing.
    const modelHealth = new GuardrailModelHealth(file.degraded_after_failures);
    const client = new LlmVerdictClient(this.llm, file.llm_profile);
    const modelStage = new ModelStage(client, file.llm_profile, observer, {
      succeeded: () => {
        if (modelHealth.succeeded()) this.logger.log(`The guardrail model of ${path} answers again.`);
      },
      failed: (cause, error) => {
        if (modelHealth.failed(cause, error.message)) {
          this.logger.error(
            `The guardrail model of ${path} (profile ${file.llm_profile}) failed ${file.degraded_after_failures} times in a row (last: ${cause}): readiness reports it degraded.`,
          );
        }
      },
    });
    return {
      path,
      config,
      rails,
      executor: new ParallelRailExecutor({ parallel: file.parallel, failFast: file.fail_fast }, observer),
      draftExecutor: new ParallelRailExecutor(
        { parallel: file.parallel, failFast: file.fail_fast },
        SILENT_OBSERVER,
      ),
      modelStage,
      modelHealth,
    };
  }

  /** The start-up log of one guardrails file: its rails, and what its model-backed rails do without a model. */
  private describePolicy({ path, config: { file, stages } }: RailPolicy): void {
    const summary = RAIL_STAGES.filter((s) => stages[s].length > 0)
      .map((s) => `${s}: ${stages[s].map((e) => e.code).join(', ')}`)
      .join('; ');
    this.logger.log(
      `Guardrails of ${path}: ${summary || 'no rail enabled'} (parallel=${file.parallel}, fail_fast=${file.fail_fast})`,
    );
    const llmRails = RAIL_STAGES.flatMap((stage) =>
      stages[stage]
        .filter((e) => requireDefinition(e.code).usesLlm(e.params))
        .map((e) => ({ stage, code: e.code, failClosed: e.fail_closed ?? file.fail_closed })),
    );
    if (llmRails.length === 0 || this.profileHasEndpoint(file.llm_profile)) return;
    if (this.noModels) {
      this.logger.warn(
        `No LLM endpoint is configured: the model part of ${llmRails.map((r) => `${r.stage}.${r.code}`).join(', ')} is skipped (no model to ask, none to protect); deterministic screens still apply.`,
      );
      return;
    }
    const closed = llmRails.filter((r) => r.failClosed).map((r) => `${r.stage}.${r.code}`);
    const open = llmRails.filter((r) => !r.failClosed).map((r) => `${r.stage}.${r.code}`);
    if (open.length > 0) {
      this.logger.warn(
        `LLM profile "${file.llm_profile}" has no endpoint: the model part of ${open.join(', ')} is only observed (fail_closed=false); deterministic screens still apply.`,
      );
    }
    if (closed.length > 0) {
      this.logger.error(
        `LLM profile "${file.llm_profile}" has no endpoint and ${closed.join(', ')} are fail_closed: every text they see will be BLOCKED until an endpoint is configured.`,
      );
    }
  }

  /**
   * Rails configured on a stage nothing runs would be silently dead: a start-up error naming guardrails.yaml.
   * Runs after every provider was built, so the consumers have asked for their port by then.
   */
  onApplicationBootstrap(): void {
    for (const { path, config } of this.policies.distinct()) {
      const unreachable = SCREENED_STAGES.filter(
        (stage) => config.stages[stage].length > 0 && !this.screenedStages.has(stage),
      );
      if (unreachable.length === 0) continue;
      throw new ConfigFileError(
        path,
        unreachable.map(
          (stage) => `${stage}: rails are configured but nothing in this runtime runs the ${stage} stage`,
        ),
      );
    }
  }

  /**
   * The retrieval, tool and memory guardrails as the port the agents and long-term memory take; asking for it
   * records that these stages run (checked at start-up).
   */
  contentScreen(): ContentScreen {
    for (const stage of SCREENED_STAGES) this.screenedStages.add(stage);
    return (request) => this.screenContent(request);
  }

  /**
   * Retrieval, tool and memory content through its stage's rails: the text after sanitization, or blocked. Each
   * decision's GRL event carries the stage and the content's source. A memory fact is first masked under the
   * tenant's personal-data policy, as the customer's message was.
   */
  async screenContent(request: ContentScreenRequest): Promise<ContentScreenResult> {
    const { stage, source, state, signal } = request;
    const text =
      stage === 'memory'
        ? this.protectMessage(request.text, state.tenant_id, state.agent_id).text
        : request.text;
    if (this.policy(state).rails[stage].length === 0) return { blocked: false, text, codes: [] };
    const outcome = await this.runStage({ stage, text, state, source, signal });
    const blocking = outcome.results.filter((r) => !isApproving(r.action));
    return {
      blocked: blocking.length > 0,
      text: blocking.length > 0 ? text : withoutInvisible(outcome.text),
      codes: reportedCodes(blocking),
    };
  }

  /**
   * The deterministic part of the input rails (size, screens, masking): runs first, so no unmasked personal
   * data reaches any model. When rails still ask the guardrail model, the turn's input outcome is only known
   * after `inputVerdict`.
   */
  async runInput(state: TurnState): Promise<InputGuardrailsResult> {
    const text = state.user_text;
    const { executor, rails, config } = this.policy(state);
    const outcome = await executor.run(rails.input, { stage: 'input', text, state });
    const decisions = [...this.maskingDecisions(state), ...decisionsOf(outcome)];
    const blocking = outcome.results.filter((r) => !isApproving(r.action));
    const sanitizedText = withoutInvisible(blocking.length > 0 ? text : outcome.text);
    if (blocking.length > 0 || this.askedModel('input', sanitizedText, state).length === 0) {
      this.emitInputCompleted(decisions, blocking);
    }
    return {
      blocked: blocking.length > 0,
      decisions,
      sanitizedText,
      ...(blocking.length > 0
        ? { message: inputBlockedMessage(config.messages, fastestFirst(outcome, blocking)) }
        : {}),
      ...(blocking.some((r) => r.code === 'INPUT_SIZE') ? { withheldText: withheldPlaceholder(text) } : {}),
    };
  }

  /**
   * The customer's message under the personal-data policy of its tenant (guardrails.yaml `personal_data`, the
   * agent_id's file): what the turn, its fingerprint and everything stored see instead of the text as sent.
   */
  protectMessage(text: string, tenantId: string, agentId: string): ProtectedText {
    return applyPolicy(text, policyFor(this.policies.for(agentId).config.file.personal_data, tenantId));
  }

  /** The entry masking of the turn's message as an MSK decision, with its GRL event. */
  private maskingDecisions(state: TurnState): RailDecision[] {
    const findings = state.personal_data_masked ?? [];
    if (findings.length === 0) return [];
    const decision: RailDecision = {
      code: 'MSK',
      stage: 'input',
      allowed: true,
      action: RailAction.SANITIZE,
      reason: `personal_data policy: ${findings.map((f) => `${f.count} ${f.type} ${f.action}ed`).join(', ')}`,
      latency_ms: 0,
      metadata: {
        source: 'personal_data',
        types: findings.map((f) => f.type),
        count: findings.reduce((sum, f) => sum + f.count, 0),
      },
    };
    this.events.emit(GRL_BY_ACTION.sanitize, {
      stage: 'input',
      code: decision.code,
      action: decision.action,
      reason: decision.reason,
      latency_ms: 0,
      metadata: decision.metadata,
    });
    return [decision];
  }

  /**
   * The guardrail model's input verdict: one call for every input rail that asks (PINJ, TOX, DLEX_IN, COER),
   * over the sanitized message, each verdict under its rail's threshold and fail_closed. Pure with respect to
   * `state` (reads only), so the workflow starts it together with routing; `signal` abandons it.
   */
  async inputVerdict(state: TurnState, signal?: AbortSignal): Promise<InputVerdict> {
    const text = turnText(state);
    const asked = this.askedModel('input', text, state);
    if (asked.length === 0) return { blocked: false, decisions: [] };
    const { modelStage, config } = this.policy(state);
    const outcome = await modelStage.run(asked, { stage: 'input', text, state, signal });
    const decisions = decisionsOf(outcome);
    const blocking = outcome.results.filter((r) => !isApproving(r.action));
    this.emitInputCompleted([...turnRailDecisions(state), ...decisions], blocking);
    return {
      blocked: blocking.length > 0,
      decisions,
      ...(blocking.length > 0 ? { message: inputBlockedMessage(config.messages, blocking) } : {}),
    };
  }

  /**
   * The answer within AGENT_MAX_ANSWER_CHARS, cut at a sentence end (with its event) when longer: runs before
   * the output rails and storage, so a runaway model cannot bloat the rails' work, the checkpoint or the
   * history.
   */
  boundAnswer(answer: string): string {
    const limit = this.env.AGENT_MAX_ANSWER_CHARS;
    const bounded = cutAtSentence(answer, limit);
    if (bounded !== answer) {
      this.events.emit('guardrails.output.truncated', {
        original_chars: answer.length,
        kept_chars: bounded.length,
        limit,
      });
    }
    return bounded;
  }

  /**
   * Readiness: whether the guardrail model has been failing, per guardrails file with the agents whose turns
   * use it; `degraded` when any file's is, the other top-level fields those of guardrails.yaml.
   */
  modelStatus(): GuardrailModelReport {
    const files = this.policies.users().map(({ value: { path, config, modelHealth }, agents }) => ({
      path,
      agents,
      llm_profile: config.file.llm_profile,
      ...modelHealth.status(),
    }));
    return {
      ...this.policies.global.modelHealth.status(),
      degraded: files.some((file) => file.degraded),
      files,
    };
  }

  /**
   * The `output_supervisor` node. `regenerate` asks the producing agent for a new answer with the rails'
   * guidance (null when no agent produced this answer); it also gets the answer being rejected, which after
   * the first retry is no longer `state.answer`. RETRY regenerates up to OUTPUT_SUPERVISOR_MAX_RETRIES times
   * within the turn; when they are used up the conversation is handed over.
   */
  async superviseOutput(
    state: TurnState,
    regenerate: (guidance: string, rejectedAnswer: string) => Promise<string | null>,
  ): Promise<TurnPatch> {
    if (!this.env.ENABLE_OUTPUT_SUPERVISOR) return {};
    const original = draftAnswer(state);
    if (isSessionControlTurn(state)) {
      this.events.emit('output_supervisor.completed', { action: RailAction.ALLOW, attempt: 0, results: [] });
      return {
        supervisor_action: RailAction.ALLOW,
        supervisor_guidance: '',
        supervisor_attempt: 0,
        output_supervisor_results: [],
        output_guardrails_already_applied: true,
        final_answer: original,
      };
    }
    const { messages } = this.policy(state).config;
    const maxRetries = this.env.OUTPUT_SUPERVISOR_MAX_RETRIES;
    const history: RailDecision[] = [];
    let attempt = state.supervisor_attempt ?? 0;
    let candidate = original;
    for (;;) {
      const outcome = await this.runStage({
        stage: 'output',
        text: candidate,
        state: { ...state, answer: candidate },
      });
      const decisions = decisionsOf(outcome, { attempt });
      history.push(...decisions);
      const action = aggregateAction(outcome.results);
      this.emitOutputCompleted(outcome, decisions, attempt);
      const guidance = isApproving(action) ? '' : guidanceOf(outcome.results);
      if (action === RailAction.RETRY && attempt < maxRetries) {
        attempt++;
        const regenerated = await regenerate(guidance, candidate);
        if (regenerated !== null && regenerated.trim() !== '') {
          candidate = regenerated;
          continue;
        }
        return this.supervised(RailAction.BLOCK, blockedMessage(messages, outcome.results), {
          guidance,
          attempt,
          history,
          handoverReason: '',
          note: 'regeneration unavailable',
        });
      }
      if (action === RailAction.RETRY || action === RailAction.HANDOVER) {
        const codes = outcome.results.filter((r) => !isApproving(r.action)).map((r) => r.code);
        const reason =
          action === RailAction.RETRY
            ? `retries exhausted after ${attempt} regeneration(s): ${codes.join(', ')}`
            : `handover requested by ${codes.join(', ')}`;
        return this.supervised(RailAction.HANDOVER, messages.output_handover, {
          guidance,
          attempt,
          history,
          handoverReason: reason,
        });
      }
      if (action === RailAction.BLOCK) {
        return this.supervised(RailAction.BLOCK, blockedMessage(messages, outcome.results), {
          guidance,
          attempt,
          history,
          handoverReason: '',
        });
      }
      return this.supervised(action, action === RailAction.SANITIZE ? outcome.text : candidate, {
        guidance: '',
        attempt,
        history,
        handoverReason: '',
      });
    }
  }

  /**
   * The output rails' deterministic parts over a draft of a streamed answer (docs/adr/0015): what `AnswerReleaser`
   * may release. Silent: the whole answer still passes the output stage as on every turn, and that pass records
   * the decisions. `hold` when the rails need the whole answer: the agent's output stage asks the guardrail model,
   * or the draft outgrew AGENT_MAX_ANSWER_CHARS (the bound cuts it at a sentence end).
   */
  async screenDraft(state: TurnState, text: string): Promise<DraftVerdict> {
    if (text.length > this.env.AGENT_MAX_ANSWER_CHARS || this.askedModel('output', text, state).length > 0) {
      return { kind: 'hold' };
    }
    const { draftExecutor, rails } = this.policy(state);
    return draftVerdict(await draftExecutor.run(rails.output, { stage: 'output', text, state }));
  }

  /** Classic output guardrails (ENABLE_OUTPUT_SUPERVISOR=false): one pass, a failing answer is replaced. */
  async runOutput(state: TurnState): Promise<OutputGuardrailsResult> {
    const answer = draftAnswer(state);
    if (isSessionControlTurn(state)) return { blocked: false, decisions: [], answer };
    const outcome = await this.runStage({ stage: 'output', text: answer, state });
    const decisions = decisionsOf(outcome);
    const action = aggregateAction(outcome.results);
    this.emitOutputCompleted(outcome, decisions, 0);
    if (isApproving(action)) return { blocked: false, decisions, answer: outcome.text };
    const { messages } = this.policy(state).config;
    return {
      blocked: true,
      decisions,
      answer:
        action === RailAction.HANDOVER ? messages.output_handover : blockedMessage(messages, outcome.results),
    };
  }

  /**
   * A stage's deterministic parts, then (unless one was terminal) the one model call for the rails that ask,
   * over the sanitized text; the outcome holds the results of both.
   */
  private async runStage(run: StageRun): Promise<StageOutcome> {
    const { executor, rails, modelStage } = this.policy(run.state);
    const screens = await executor.run(rails[run.stage], run);
    if (screens.results.some((r) => isTerminal(r.action))) return screens;
    const asked = this.askedModel(run.stage, screens.text, run.state);
    if (asked.length === 0) return screens;
    const model = await modelStage.run(asked, { ...run, text: screens.text });
    return {
      ...screens,
      railCodes: [...screens.railCodes, ...model.railCodes],
      results: [...screens.results, ...model.results],
      completionOrder: [...screens.completionOrder, ...model.completionOrder],
      terminal: screens.terminal ?? model.results.find((r) => isTerminal(r.action)) ?? null,
      durationMs: screens.durationMs + model.durationMs,
    };
  }

  /** The rails of a stage that ask the guardrail model about this text; none when the runtime has no model. */
  private askedModel(stage: RailStage, text: string, state: Readonly<TurnState>) {
    if (this.noModels) return [];
    const { modelStage, rails } = this.policy(state);
    return modelStage.asked(rails[stage], { stage, text, state });
  }

  /** The rails of the turn's agent_id. */
  private policy(state: Readonly<TurnState>): RailPolicy {
    return this.policies.for(state.agent_id);
  }

  private emitInputCompleted(decisions: RailDecision[], blocking: readonly RailResult[]): void {
    this.events.emit('guardrails.input.completed', {
      blocked: blocking.length > 0,
      decisions,
      codes: reportedCodes(blocking),
    });
  }

  private supervised(
    action: RailAction,
    answer: string,
    details: {
      guidance: string;
      attempt: number;
      history: RailDecision[];
      handoverReason: string;
      note?: string;
    },
  ): TurnPatch {
    this.events.emit('output_supervisor.completed', {
      action,
      attempt: details.attempt,
      results: details.history.map((d) => ({ code: d.code, action: d.action, attempt: d.attempt })),
      ...(details.note ? { note: details.note } : {}),
      ...(details.handoverReason ? { handover_reason: details.handoverReason } : {}),
    });
    return {
      answer,
      final_answer: answer,
      supervisor_action: action,
      supervisor_guidance: details.guidance,
      supervisor_attempt: details.attempt,
      supervisor_handover_reason: details.handoverReason,
      output_supervisor_results: details.history,
      output_guardrails_already_applied: true,
      ...(action === RailAction.BLOCK ? { blocked: true } : {}),
    };
  }

  private emitOutputCompleted(outcome: StageOutcome, decisions: RailDecision[], attempt: number): void {
    const failing = outcome.results.filter((r) => !isApproving(r.action));
    this.events.emit('guardrails.output.completed', {
      blocked: failing.length > 0,
      decisions,
      codes: reportedCodes(failing),
      attempt,
    });
  }

  private observer(): ExecutorObserver {
    return {
      result: (stage, result, source) => {
        const failClosed = result.error !== undefined && result.action === RailAction.BLOCK;
        if (failClosed) {
          this.failClosedBlocks.inc({ stage, code: result.code, cause: String(result.metadata.cause) });
        }
        this.events.emit(failClosed ? GRL_FAIL_CLOSED : GRL_BY_ACTION[result.action], {
          stage,
          ...(source === undefined ? {} : { source }),
          code: result.code,
          action: result.action,
          reason: result.reason,
          latency_ms: result.latency_ms,
          ...(result.error ? { error: result.error, cause: result.metadata.cause } : {}),
          metadata: result.metadata,
        });
      },
      railFailed: (stage, code, error, failClosed) => {
        const treatedAs = failClosed ? 'BLOCK (fail_closed)' : 'OBSERVE (fail_closed=false)';
        if (error instanceof LlmError && error.kind === 'not_configured') {
          const key = `${stage}.${code}`;
          if (this.notConfiguredReported.has(key)) return;
          this.notConfiguredReported.add(key);
          this.logger.warn(`Guardrail ${key} has no LLM endpoint; treated as ${treatedAs} (reported once).`);
          return;
        }
        this.logger.error(`Guardrail ${stage}.${code} failed: ${error.message}; treated as ${treatedAs}`);
      },
      completed: (outcome) => {
        this.events.emit(GRL_SUMMARY, {
          stage: outcome.stage,
          ...(outcome.source === undefined ? {} : { source: outcome.source }),
          phase: outcome.phase,
          rail_codes: outcome.railCodes,
          result_count: outcome.results.length,
          completion_order: outcome.completionOrder,
          cancelled_codes: outcome.cancelledCodes,
          fail_fast_triggered: outcome.failFastTriggered,
          terminal_code: outcome.terminal?.code ?? null,
          terminal_action: outcome.terminal?.action ?? null,
          duration_ms: outcome.durationMs,
        });
      },
    };
  }

  private profileHasEndpoint(profile: string): boolean {
    return this.llm.resolveProfile(profile)?.reachable === true;
  }
}

function requireDefinition(code: string) {
  const definition = RAIL_CATALOGUE.get(code);
  // The config schema already rejected unknown codes; this guards the catalogue itself.
  if (!definition) throw new Error(`rail ${code} is not in the catalogue`);
  return definition;
}

/** The answer is a session-control message (human handoff, end of session): rails never rewrite it. */
function isSessionControlTurn(state: TurnState): boolean {
  return typeof state.route === 'string' && SESSION_CONTROL_ROUTES.has(state.route);
}

/**
 * The safe message of a blocked input: that of the first rail that judged it; a block only because a
 * fail-closed rail could not decide says so instead of accusing the customer.
 */
function inputBlockedMessage(messages: GuardrailMessages, blocking: readonly RailResult[]): string {
  const judged = blocking.find((r) => r.error === undefined);
  return judged ? messageFor(messages.input_blocked, judged.code) : messages.input_unverified;
}

function blockedMessage(messages: GuardrailMessages, results: readonly RailResult[]): string {
  const failing = firstWith(results, RailAction.BLOCK) ?? firstWith(results, RailAction.RETRY);
  return messageFor(messages.output_blocked, failing?.code);
}

/** The blockers with the fail-fast trigger first: its message is the one the customer gets. */
function fastestFirst(outcome: StageOutcome, blocking: readonly RailResult[]): RailResult[] {
  const terminal = outcome.terminal;
  return terminal ? [terminal, ...blocking.filter((r) => r !== terminal)] : [...blocking];
}
