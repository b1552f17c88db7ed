import {
  ConfiguredRail,
  elapsed,
  ExecutorObserver,
  failureResult,
  railResult,
  StageOutcome,
  StageRun,
} from './executor';
import { ModelVerdictError, RailTimeoutError } from './guardrails.errors';
import { ModelCheck, RailResult, toError } from './rail.types';
import {
  failureCause,
  RailVerdict,
  VerdictClient,
  verdictContent,
  verdictEvaluation,
} from './rails/model-verdict';

/** A rail whose deterministic part let the text through and that asks the model. */
export interface AskedCheck {
  configured: ConfiguredRail;
  check: ModelCheck;
}

/** Where the stage reports whether the model answered usably (readiness). */
export interface ModelCallReport {
  succeeded(): void;
  failed(cause: string, error: Error): void;
}

/**
 * The model part of a stage: one guardrail-model call for every rail that asks, after the deterministic parts.
 * Each verdict is judged under its own rail's threshold, timeout and fail_closed; the call waits for the
 * longest timeout of the rails it serves, and a rail whose own timeout passed counts as timed out.
 */
export class ModelStage {
  constructor(
    private readonly client: VerdictClient,
    /** The LLM profile the client calls: a failure names it, so the turn reports which model it lacked. */
    private readonly profile: string,
    private readonly observer: ExecutorObserver,
    private readonly report: ModelCallReport,
  ) {}

  /** The rails that ask the model about this text. */
  asked(rails: readonly ConfiguredRail[], run: Omit<StageRun, 'signal'>): AskedCheck[] {
    return rails.flatMap((configured) => {
      const check = configured.rail.modelCheck?.({ stage: run.stage, text: run.text, state: run.state });
      return check ? [{ configured, check }] : [];
    });
  }

  async run(asked: readonly AskedCheck[], run: StageRun): Promise<StageOutcome> {
    const started = performance.now();
    const answer = await this.ask(asked, run);
    const latency = elapsed(started);
    const results: RailResult[] = asked.map(({ configured, check }) => {
      const code = configured.rail.code;
      const verdict =
        answer instanceof Error
          ? answer
          : latency > configured.timeoutMs
            ? new RailTimeoutError(code, configured.timeoutMs)
            : answer.get(code);
      if (verdict === undefined || verdict instanceof Error) {
        const failure = verdict ?? new ModelVerdictError('invalid_output', `no verdict for ${code}`);
        this.observer.railFailed(run.stage, code, failure, configured.failClosed);
        const result = failureResult(configured, run.stage, failure, latency);
        return { ...result, metadata: { ...result.metadata, source: 'llm', profile: this.profile } };
      }
      return railResult(code, run.stage, verdictEvaluation(check, verdict), latency);
    });
    if (answer instanceof Error) this.report.failed(failureCause(answer), answer);
    else this.report.succeeded();
    for (const result of results) this.observer.result(run.stage, result, run.source);
    const outcome: StageOutcome = {
      stage: run.stage,
      ...(run.source === undefined ? {} : { source: run.source }),
      phase: 'model',
      railCodes: asked.map((a) => a.configured.rail.code),
      results,
      text: run.text,
      cancelledCodes: [],
      failFastTriggered: false,
      terminal: null,
      completionOrder: results.map((r) => r.code),
      durationMs: latency,
    };
    this.observer.completed(outcome);
    return outcome;
  }

  /** The model's answer, or why there is none; rejects only when the caller gave up (`run.signal`). */
  private async ask(
    asked: readonly AskedCheck[],
    run: StageRun,
  ): Promise<ReadonlyMap<string, RailVerdict> | Error> {
    const deadlineMs = Math.max(...asked.map((a) => a.configured.timeoutMs));
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new RailTimeoutError('guardrail model', deadlineMs)),
      deadlineMs,
    );
    const giveUp = () => controller.abort(run.signal?.reason);
    if (run.signal?.aborted) giveUp();
    run.signal?.addEventListener('abort', giveUp, { once: true });
    try {
      const request = {
        checks: asked.map((a) => ({ code: a.configured.rail.code, instruction: a.check.instruction })),
        content: verdictContent(
          run.stage,
          run.text,
          run.state,
          asked.map((a) => a.check),
          run.source,
        ),
      };
      // The client honours the signal; waiting for it to settle keeps a cancelled call's cost on record.
      return await this.client.verdicts(request, controller.signal);
    } catch (caught) {
      if (run.signal?.aborted) throw toError(run.signal.reason);
      const reason: unknown = controller.signal.reason;
      return controller.signal.aborted && reason instanceof RailTimeoutError ? reason : toError(caught);
    } finally {
      clearTimeout(timer);
      run.signal?.removeEventListener('abort', giveUp);
    }
  }
}
