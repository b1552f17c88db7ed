import type { TurnState } from '@agent/contracts';
import { RailCancelledError, RailTimeoutError } from './guardrails.errors';
import {
  abortable,
  isTerminal,
  Rail,
  RailAction,
  RailEvaluation,
  RailResult,
  RailStage,
  toError,
} from './rail.types';
import { failureCause } from './rails/model-verdict';

/** A rail with the policy the configuration gave it. */
export interface ConfiguredRail {
  rail: Rail;
  failClosed: boolean;
  timeoutMs: number;
}

export interface ExecutorPolicy {
  parallel: boolean;
  failFast: boolean;
}

export interface StageRun {
  stage: RailStage;
  text: string;
  state: Readonly<TurnState>;
  /** The caller giving up on the whole stage (e.g. the workflow no longer needs an early input verdict). */
  signal?: AbortSignal;
  /** Where retrieval or tool content comes from (a document, a tool): carried into the events. */
  source?: string;
}

export interface StageOutcome {
  stage: RailStage;
  source?: string;
  /** `screens`: the rails' deterministic parts; `model`: the one guardrail-model call after them. */
  phase: 'screens' | 'model';
  /** The rails this phase ran. */
  railCodes: string[];
  /** Completed rails, in configured order. */
  results: RailResult[];
  /** The stage's text after every sanitization, applied in configured order. */
  text: string;
  /** Rails stopped because an earlier result was terminal. */
  cancelledCodes: string[];
  failFastTriggered: boolean;
  /** The result that triggered fail_fast, if any. */
  terminal: RailResult | null;
  /** Codes in the order their results arrived. */
  completionOrder: string[];
  durationMs: number;
}

/** Where the executor reports: events, metrics and logs live in the service, not here. */
export interface ExecutorObserver {
  result(stage: RailStage, result: RailResult, source: string | undefined): void;
  railFailed(stage: RailStage, code: string, error: Error, failClosed: boolean): void;
  completed(outcome: StageOutcome): void;
}

type Settled = { kind: 'result'; result: RailResult } | { kind: 'cancelled'; code: string };

/**
 * Runs the rails of one stage. In parallel mode every rail starts at once and results are handled as they
 * arrive; the first terminal action (block, retry, handover) aborts the rest when fail_fast is on. A rail that
 * throws or times out becomes BLOCK when it is fail-closed, else OBSERVE. Sanitizations apply in configured
 * order, never completion order, so the outcome does not depend on which rail was faster.
 */
export class ParallelRailExecutor {
  constructor(
    private readonly policy: ExecutorPolicy,
    private readonly observer: ExecutorObserver,
  ) {}

  async run(rails: readonly ConfiguredRail[], run: StageRun): Promise<StageOutcome> {
    const started = performance.now();
    if (run.signal?.aborted) throw toError(run.signal.reason);
    const outcome =
      this.policy.parallel && rails.length > 1
        ? await this.runParallel(rails, run)
        : await this.runSequential(rails, run);
    const result: StageOutcome = {
      ...outcome,
      stage: run.stage,
      phase: 'screens',
      railCodes: rails.map((r) => r.rail.code),
      ...(run.source === undefined ? {} : { source: run.source }),
      durationMs: elapsed(started),
    };
    this.observer.completed(result);
    return result;
  }

  private async runParallel(
    rails: readonly ConfiguredRail[],
    run: StageRun,
  ): Promise<Omit<StageOutcome, 'stage' | 'source' | 'phase' | 'railCodes' | 'durationMs'>> {
    const controllers = rails.map(() => new AbortController());
    const abortAll = () => controllers.forEach((c) => c.abort(run.signal?.reason));
    run.signal?.addEventListener('abort', abortAll, { once: true });
    try {
      const pending = new Map<number, Promise<{ index: number; settled: Settled }>>();
      rails.forEach((configured, index) => {
        pending.set(
          index,
          this.evaluate(configured, run, run.text, controllers[index]).then((settled) => ({
            index,
            settled,
          })),
        );
      });
      const byIndex = new Map<number, RailResult>();
      const completionOrder: string[] = [];
      let terminal: RailResult | null = null;
      while (pending.size > 0) {
        const { index, settled } = await Promise.race(pending.values());
        pending.delete(index);
        if (run.signal?.aborted) throw toError(run.signal.reason);
        if (settled.kind === 'cancelled') continue;
        byIndex.set(index, settled.result);
        completionOrder.push(settled.result.code);
        this.observer.result(run.stage, settled.result, run.source);
        if (this.policy.failFast && isTerminal(settled.result.action)) {
          terminal = settled.result;
          break;
        }
      }
      const cancelledCodes = [...pending.keys()].map((index) => rails[index].rail.code);
      for (const index of pending.keys()) {
        controllers[index].abort(new RailCancelledError(rails[index].rail.code, terminal?.code ?? ''));
      }
      const results = [...byIndex.entries()].sort(([a], [b]) => a - b).map(([, r]) => r);
      const text = results.reduce(
        (current, r) => (r.action === RailAction.SANITIZE && r.sanitize ? r.sanitize(current) : current),
        run.text,
      );
      return {
        results,
        text,
        cancelledCodes,
        failFastTriggered: terminal !== null && cancelledCodes.length > 0,
        terminal,
        completionOrder,
      };
    } finally {
      run.signal?.removeEventListener('abort', abortAll);
    }
  }

  /** One rail after another; each sees the text as sanitized by the rails before it. */
  private async runSequential(
    rails: readonly ConfiguredRail[],
    run: StageRun,
  ): Promise<Omit<StageOutcome, 'stage' | 'source' | 'phase' | 'railCodes' | 'durationMs'>> {
    const results: RailResult[] = [];
    let text = run.text;
    let terminal: RailResult | null = null;
    for (let index = 0; index < rails.length; index++) {
      if (run.signal?.aborted) throw toError(run.signal.reason);
      const controller = new AbortController();
      const abort = () => controller.abort(run.signal?.reason);
      run.signal?.addEventListener('abort', abort, { once: true });
      const settled = await this.evaluate(rails[index], run, text, controller).finally(() =>
        run.signal?.removeEventListener('abort', abort),
      );
      if (run.signal?.aborted) throw toError(run.signal.reason);
      if (settled.kind === 'cancelled') continue;
      results.push(settled.result);
      this.observer.result(run.stage, settled.result, run.source);
      if (settled.result.action === RailAction.SANITIZE && settled.result.sanitize) {
        text = settled.result.sanitize(text);
      }
      if (this.policy.failFast && isTerminal(settled.result.action)) {
        terminal = settled.result;
        const cancelledCodes = rails.slice(index + 1).map((r) => r.rail.code);
        return {
          results,
          text,
          cancelledCodes,
          failFastTriggered: cancelledCodes.length > 0,
          terminal,
          completionOrder: results.map((r) => r.code),
        };
      }
    }
    return {
      results,
      text,
      cancelledCodes: [],
      failFastTriggered: false,
      terminal,
      completionOrder: results.map((r) => r.code),
    };
  }

  /** One rail under its timeout; never rejects: errors become the fail-closed/fail-open result. */
  private async evaluate(
    configured: ConfiguredRail,
    run: StageRun,
    text: string,
    controller: AbortController,
  ): Promise<Settled> {
    const { rail } = configured;
    const started = performance.now();
    const timer = setTimeout(
      () => controller.abort(new RailTimeoutError(rail.code, configured.timeoutMs)),
      configured.timeoutMs,
    );
    try {
      const evaluation: RailEvaluation = await abortable(
        // A rail that throws synchronously is handled like one that rejects.
        Promise.resolve().then(() =>
          rail.evaluate({ stage: run.stage, text, state: run.state, signal: controller.signal }),
        ),
        controller.signal,
      );
      return { kind: 'result', result: railResult(rail.code, run.stage, evaluation, elapsed(started)) };
    } catch (caught) {
      const error = toError(caught);
      const reason: unknown = controller.signal.reason;
      if (
        controller.signal.aborted &&
        !(reason instanceof RailTimeoutError) &&
        (reason instanceof RailCancelledError || run.signal?.aborted)
      ) {
        return { kind: 'cancelled', code: rail.code };
      }
      const failure = controller.signal.aborted && reason instanceof RailTimeoutError ? reason : error;
      this.observer.railFailed(run.stage, rail.code, failure, configured.failClosed);
      return { kind: 'result', result: failureResult(configured, run.stage, failure, elapsed(started)) };
    } finally {
      clearTimeout(timer);
    }
  }
}

export function elapsed(started: number): number {
  return Math.round((performance.now() - started) * 100) / 100;
}

/** A rail's evaluation as its recorded result. */
export function railResult(
  code: string,
  stage: RailStage,
  evaluation: RailEvaluation,
  latencyMs: number,
): RailResult {
  return {
    code,
    stage,
    action: evaluation.action,
    reason: evaluation.reason,
    ...(evaluation.guidance ? { guidance: evaluation.guidance } : {}),
    latency_ms: latencyMs,
    metadata: evaluation.metadata ?? {},
    ...(evaluation.sanitize ? { sanitize: evaluation.sanitize } : {}),
  };
}

/** A rail that threw, timed out or got no verdict: BLOCK when it is fail-closed, else OBSERVE, with the cause. */
export function failureResult(
  configured: ConfiguredRail,
  stage: RailStage,
  failure: Error,
  latencyMs: number,
): RailResult {
  const cause = failureCause(failure);
  return {
    code: configured.rail.code,
    stage,
    action: configured.failClosed ? RailAction.BLOCK : RailAction.OBSERVE,
    reason: `${cause === 'timeout' ? 'rail timed out' : 'rail failed'}; fail_closed=${configured.failClosed}`,
    latency_ms: latencyMs,
    error: failure.message,
    metadata: {
      fail_closed: configured.failClosed,
      error_kind: cause === 'timeout' ? 'timeout' : 'error',
      cause,
    },
  };
}
