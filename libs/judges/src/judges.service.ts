import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { appConfig, ConfigFilesService, loadYamlFile, PerAgent, SERVICE_MESSAGES } from '@agent/config';
import { foldText, type JudgeResult, type RoutedTurnState, turnAnswer } from '@agent/contracts';
import { LlmService } from '@agent/llm';
import { EventBusService } from '@agent/observability';
import { DEFAULT_THRESHOLDS, JudgeEntry, JUDGES_FILE, JudgesFile, judgesFileSchema } from './judges.config';
import type { ReviewRule, ReviewViolation } from './judges.events';
import { DETERMINISTIC_JUDGES, JudgeScore } from './judges/deterministic';
import { buildJudgeContext, isTransactionalTurn, JudgeContext } from './judges/evidence';
import { llmJudge } from './judges/llm-judge';

/** Injection token for the sampler's random source (tests pin it). */
export const JUDGES_RANDOM = Symbol('JUDGES_RANDOM');

export interface ReviewOutcome {
  approved: boolean;
  answer: string;
}

/** Routes whose answer is a session-control message: judged by nobody, rewritten by nobody. */
const SESSION_CONTROL_ROUTES = new Set(['human_handoff', 'end_session']);

/** One judges file as the service runs it: judges.yaml, or an agent_id's own file. */
interface JudgePolicy {
  config: JudgesFile;
  /** What replaces a failing answer unless the file says otherwise. */
  replacement: string;
  /** supervisor_review rules with their patterns compiled once (the schema validated that they compile). */
  reviewRules: (Omit<ReviewRule, 'pattern'> & { pattern: RegExp })[];
}

/**
 * Facade of JudgesModule: judges (observational unless `enforce: true`) and the supervisor review, each turn
 * under its agent_id's judges file (agents.yaml `judges`) or judges.yaml.
 */
@Injectable()
export class JudgesService {
  private readonly logger = new Logger(JudgesService.name);
  private readonly policies: PerAgent<JudgePolicy>;
  private readonly random: () => number;

  constructor(
    files: ConfigFilesService,
    private readonly llm: LlmService,
    private readonly events: EventBusService,
    @Inject(appConfig.KEY) app: ConfigType<typeof appConfig>,
    @Optional() @Inject(JUDGES_RANDOM) random?: () => number,
  ) {
    const policy = (config: JudgesFile): JudgePolicy => ({
      config,
      replacement: SERVICE_MESSAGES[config.language ?? app.DEFAULT_LANGUAGE].judge_replacement,
      reviewRules: config.supervisor_review.rules.map((rule) => ({
        ...rule,
        pattern: new RegExp(rule.pattern, 'iu'),
      })),
    });
    this.policies = files.perAgent('judges', policy(files.load(JUDGES_FILE, judgesFileSchema)), (path) =>
      policy(loadYamlFile(path, judgesFileSchema)),
    );
    this.random = random ?? Math.random;
  }

  /** The `judge` node: samples the turn, runs the enabled judges concurrently, returns `judge_results`. */
  async evaluate(state: RoutedTurnState): Promise<JudgeResult[]> {
    const { config } = this.policies.for(state.agent_id);
    const judges = config.judges.filter((j) => j.enabled);
    if (!config.enabled || judges.length === 0) return [];
    if (isSessionControlTurn(state)) {
      this.events.emit('judges.completed', { sampled: false, reason: 'session_control', count: 0 });
      return [];
    }
    const transactional = isTransactionalTurn(state);
    const forced = transactional && config.always_run_for_transactional;
    if (!forced && !(this.random() < config.sample_rate)) {
      this.events.emit('judges.completed', {
        sampled: false,
        reason: 'not_sampled',
        sample_rate: config.sample_rate,
        transactional,
        count: 0,
      });
      return [];
    }
    const context = buildJudgeContext(state);
    const results = await Promise.all(judges.map((judge) => this.runJudge(config, judge, context)));
    for (const result of results) {
      this.events.emit(`judge.${result.name}.evaluated`, { ...result });
    }
    this.events.emit('judges.completed', {
      sampled: true,
      reason: forced ? 'transactional' : 'sampled',
      transactional,
      count: results.length,
      failed: results.filter((r) => !r.passed).map((r) => r.name),
      enforced_failed: results.filter((r) => r.enforce && !r.passed).map((r) => r.name),
    });
    return results;
  }

  /**
   * The `supervisor_review` node: configured policy rules over the final answer, plus enforced judges.
   * A session-control message (human handoff, end of session, the output supervisor's handover) is never
   * rewritten: the reference replaced the legitimate handoff message because it mentions a human.
   */
  review(state: RoutedTurnState): Promise<ReviewOutcome> {
    const answer = turnAnswer(state);
    const { config, replacement: fallback, reviewRules } = this.policies.for(state.agent_id);
    const review = config.supervisor_review;
    if (isSessionControlTurn(state) || state.supervisor_action === 'handover') {
      this.events.emit('supervisor.review.completed', {
        approved: true,
        violations: [],
        skipped: 'session_control',
      });
      return Promise.resolve({ approved: true, answer });
    }
    if (!review.enabled) {
      this.events.emit('supervisor.review.completed', {
        approved: true,
        violations: [],
        skipped: 'disabled',
      });
      return Promise.resolve({ approved: true, answer });
    }
    const violations: ReviewViolation[] = [];
    let replacement: string | null = null;
    const normalized = foldText(answer);
    for (const rule of reviewRules) {
      if (!rule.pattern.test(answer) && !rule.pattern.test(normalized)) continue;
      violations.push({ rule: rule.id, action: rule.action });
      if (rule.action === 'replace' && replacement === null) {
        replacement = rule.message ?? review.replacement_message ?? fallback;
      }
    }
    const enforcedFailures = (state.judge_results ?? []).filter((r) => r.enforce && !r.passed);
    for (const failure of enforcedFailures) {
      violations.push({ judge: failure.name, action: 'replace' });
      replacement ??= config.fallback_message ?? fallback;
    }
    const approved = violations.length === 0;
    this.events.emit('supervisor.review.completed', { approved, violations });
    return Promise.resolve({ approved, answer: replacement ?? answer });
  }

  private async runJudge(config: JudgesFile, judge: JudgeEntry, context: JudgeContext): Promise<JudgeResult> {
    const threshold = judge.threshold ?? DEFAULT_THRESHOLDS[judge.name];
    const started = performance.now();
    const base = { name: judge.name, type: judge.type, threshold, enforce: judge.enforce };
    if (judge.type === 'deterministic') {
      const score: JudgeScore = DETERMINISTIC_JUDGES[judge.name](context);
      return {
        ...base,
        score: score.score,
        passed: score.score >= threshold,
        reason: score.reason,
        latency_ms: elapsed(started),
        metadata: score.metadata,
      };
    }
    const result = await llmJudge(
      this.llm,
      judge.profile ?? config.profile,
      judge.name,
      threshold,
      context,
      config.max_context_chars,
    );
    if (result.ok) {
      const verdict = result.value;
      return {
        ...base,
        score: verdict.score,
        // The model's own verdict and the configured threshold must both agree.
        passed: verdict.passed && verdict.score >= threshold,
        reason: verdict.reason ?? '',
        latency_ms: elapsed(started),
        metadata: { model_passed: verdict.passed },
      };
    }
    const message = result.reason === 'invalid_output' ? `invalid verdict: ${result.detail}` : result.detail;
    const failClosed = judge.fail_closed ?? config.fail_closed;
    this.logger.warn(
      `judge ${judge.name} failed (${failClosed ? 'fail-closed: score 0' : 'fail-open: skipped'}): ${message}`,
    );
    return {
      ...base,
      score: failClosed ? 0 : 1,
      passed: !failClosed,
      reason: failClosed ? 'judge failed; fail-closed result' : 'judge failed; skipped (fail-open)',
      latency_ms: elapsed(started),
      error: message,
      metadata: { fail_closed: failClosed, skipped: !failClosed },
    };
  }
}

function isSessionControlTurn(state: RoutedTurnState): boolean {
  return SESSION_CONTROL_ROUTES.has(state.route);
}

function elapsed(started: number): number {
  return Math.round((performance.now() - started) * 100) / 100;
}
