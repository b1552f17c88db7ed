import type { Diagnostics, RailAction as RailActionName, RailStage, TurnState } from '@agent/contracts';

export { RAIL_STAGES, type RailStage } from '@agent/contracts';

/** The rail actions by name (their values are the contracts' `RAIL_ACTIONS`). */
export const RailAction = {
  ALLOW: 'allow',
  SANITIZE: 'sanitize',
  OBSERVE: 'observe',
  RETRY: 'retry',
  HANDOVER: 'handover',
  BLOCK: 'block',
} as const satisfies Record<string, RailActionName>;
export type RailAction = RailActionName;

/** Actions that let the text through (possibly changed). */
export const APPROVING_ACTIONS: readonly RailAction[] = [
  RailAction.ALLOW,
  RailAction.SANITIZE,
  RailAction.OBSERVE,
];
/** Actions that end a stage early when `fail_fast` is on. */
export const TERMINAL_ACTIONS: readonly RailAction[] = [
  RailAction.BLOCK,
  RailAction.RETRY,
  RailAction.HANDOVER,
];

/** Output supervisor precedence: handover > block > retry > sanitize > allow/observe. */
export const ACTION_SEVERITY: Record<RailAction, number> = {
  handover: 4,
  block: 3,
  retry: 2,
  sanitize: 1,
  allow: 0,
  observe: 0,
};

export function isApproving(action: RailAction): boolean {
  return APPROVING_ACTIONS.includes(action);
}

export function isTerminal(action: RailAction): boolean {
  return TERMINAL_ACTIONS.includes(action);
}

/** What a rail sees: the text of its stage, the (read-only) turn state and its cancellation signal. */
export interface RailContext {
  stage: RailStage;
  /** Input: the user's message; output: the candidate answer; retrieval/tool: the retrieved or returned text. */
  text: string;
  state: Readonly<TurnState>;
  /** Aborted on timeout, on fail-fast cancellation or when the caller gives up on the stage. */
  signal: AbortSignal;
}

/** A rail's own verdict, before the executor adds code, stage and timing. */
export interface RailEvaluation {
  action: RailAction;
  reason: string;
  /** For RETRY/BLOCK on output: what the agent should change when it regenerates. */
  guidance?: string;
  /**
   * For SANITIZE: the change as a function, so the executor can apply every sanitization in configured
   * order over the text, whatever order the rails finished in.
   */
  sanitize?: (text: string) => string;
  metadata?: Diagnostics;
}

/** One rail's outcome as recorded in `guardrail_decisions` / `output_supervisor_results`. */
export interface RailResult {
  code: string;
  stage: RailStage;
  action: RailAction;
  reason: string;
  guidance?: string;
  latency_ms: number;
  /** Set when the rail threw or timed out and the executor's fail-closed/fail-open policy decided. */
  error?: string;
  metadata: Diagnostics;
  sanitize?: (text: string) => string;
}

/**
 * What a rail asks the guardrail model once its deterministic part let the text through. The checks of every
 * rail of a stage go to the model in one call; each verdict is then judged by its own rail's threshold and
 * fail_closed.
 */
export interface ModelCheck {
  /** What the rail decides, in one or two sentences ("Block when ..."). */
  instruction: string;
  /** A block verdict below this confidence is only observed. */
  minConfidence: number;
  /** What a confident block becomes: BLOCK, or RETRY for output rails that ask for a rewrite. */
  blockAction: RailAction;
  guidance?: string;
  /** Material the check needs besides the text (tool evidence for REVPREC). */
  evidence?: string;
  /** Earlier messages of the conversation the check needs to see (input stage). */
  historyMessages?: number;
}

export interface Rail {
  readonly code: string;
  /** The deterministic part: limits, screens, masking. */
  evaluate(context: RailContext): Promise<RailEvaluation>;
  /** The model part, asked after every deterministic part of the stage let the text through; null: none. */
  modelCheck?(context: Omit<RailContext, 'signal'>): ModelCheck | null;
}

/** Rejects as soon as `signal` aborts: lets a rail stop waiting on work that ignores the signal. */
export function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(toError(signal.reason));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(toError(signal.reason));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(toError(error));
      },
    );
  });
}

export function toError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason));
}
