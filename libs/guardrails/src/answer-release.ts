import type { AnswerWriter } from '@agent/observability';
import type { StageOutcome } from './executor';
import { aggregateAction, firstWith } from './output-supervisor';
import { isApproving } from './rail.types';

/** What the output rails say of a draft of the answer (see `GuardrailsService.screenDraft`). */
export type DraftVerdict =
  /** The draft as the rails leave it (masked where they sanitize). */
  | { kind: 'pass'; text: string }
  /** A rail stops the answer: nothing more of it may leave. */
  | { kind: 'trip'; code: string; action: string }
  /** The rails cannot judge a draft (they need the whole answer): the answer leaves whole, with the turn. */
  | { kind: 'hold' };

/** A draft's verdict from its output-stage outcome: the worst action decides, as on the whole answer. */
export function draftVerdict(outcome: StageOutcome): DraftVerdict {
  const action = aggregateAction(outcome.results);
  if (isApproving(action)) return { kind: 'pass', text: outcome.text };
  return { kind: 'trip', code: firstWith(outcome.results, action)?.code ?? '', action };
}

/**
 * How the releaser screens: the rails run again once `chunkChars` new characters arrived, and the last
 * `contextChars` of the screened draft (and the word they end in) wait for what follows, so a pattern cut
 * across pieces (a card number, a link) is judged whole before any of it leaves.
 */
export interface ReleaseWindow {
  chunkChars: number;
  contextChars: number;
}

/** Longer than a card number with separators; a link or any unfinished word is held whole besides. */
export const RELEASE_WINDOW: ReleaseWindow = { chunkChars: 8, contextChars: 24 };

/** Where released text and a trip go. */
export interface ReleaseTarget {
  release(text: string): void;
  trip(code: string, action: string): void;
}

/**
 * Releases a streamed answer through the output rails. Every screening sees the whole draft so far, so what
 * spans pieces is caught; text leaves only when it is a prefix of a screened draft that ends at least the
 * window's context further on, and only when it extends what already left: a later screening that would
 * change released text (the window was too short to see it) stops the release, and the turn's final answer
 * settles the rest. A trip drops everything not yet released. Screenings run one at a time, in order.
 */
export class AnswerReleaser implements AnswerWriter {
  private raw = '';
  private screenedChars = 0;
  private released = '';
  private stopped = false;
  private toAnswer: (raw: string) => string = (raw) => raw;
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly screen: (draft: string) => Promise<DraftVerdict>,
    private readonly target: ReleaseTarget,
    private readonly window: ReleaseWindow = RELEASE_WINDOW,
  ) {}

  /** The text released so far. */
  get text(): string {
    return this.released;
  }

  begin(toAnswer: (raw: string) => string): void {
    // A new reply after released text (text written before a tool call) is not its continuation.
    if (this.released !== '') this.stopped = true;
    this.raw = '';
    this.screenedChars = 0;
    this.toAnswer = toAnswer;
  }

  write(delta: string): void {
    if (this.stopped) return;
    this.raw += delta;
    if (this.raw.length - this.screenedChars < this.window.chunkChars) return;
    this.screenedChars = this.raw.length;
    this.enqueue(this.raw, false);
  }

  end(): Promise<void> {
    if (!this.stopped) this.enqueue(this.raw, true);
    return this.queue;
  }

  private enqueue(raw: string, complete: boolean): void {
    this.queue = this.queue.then(() => this.step(raw, complete));
  }

  private async step(raw: string, complete: boolean): Promise<void> {
    if (this.stopped) return;
    const verdict = await this.screen(this.toAnswer(raw));
    if (this.stopped) return;
    if (verdict.kind !== 'pass') {
      this.stopped = true;
      if (verdict.kind === 'trip') this.target.trip(verdict.code, verdict.action);
      return;
    }
    const safe = verdict.text;
    const candidate = safe.slice(0, complete ? safe.length : releasableEnd(safe, this.window.contextChars));
    if (!candidate.startsWith(this.released)) {
      this.stopped = true;
      return;
    }
    const delta = candidate.slice(this.released.length);
    if (delta === '') return;
    this.released = candidate;
    this.target.release(delta);
  }
}

/** Where releasable text ends: `context` characters before the end, moved back to the start of that word. */
export function releasableEnd(text: string, context: number): number {
  const limit = text.length - context;
  if (limit <= 0) return 0;
  for (let end = limit; end > 0; end--) {
    if (/\s/.test(text[end])) return end;
  }
  return 0;
}
