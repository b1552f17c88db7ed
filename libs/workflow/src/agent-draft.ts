import { isDeepStrictEqual } from 'node:util';
import type { FirstReplyDraft, SpeculatedCall } from '@agent/agents';
import type { DomainAgentNode } from '@agent/contracts';
import type { ChatRequest, ChatResult, TextListener } from '@agent/llm';
import { TurnContextStore } from '@agent/observability';
import { isolated, Isolated } from './event-fork';

/** How the llm.call records of a speculative agent call are marked: `speculative_agent: used | discarded`. */
export const SPECULATIVE_AGENT = 'speculative_agent';

/**
 * The agent's first model call, started beside the guardrail verdict and the continuity classifier in its own
 * event buffer. Until the agent run takes it (`take`, after the verdict allowed the turn and routing kept the
 * agent), nothing it produced reaches the turn: no tool runs, no event, state or memory comes from it. `discard`
 * cancels its HTTP request and keeps only its cost on record; so does `take` when the run's own request differs.
 * In a streamed turn the call streams: its text is held here until `take` hands it on, then passed as it arrives.
 */
export class AgentDraft implements FirstReplyDraft {
  private readonly controller = new AbortController();
  private readonly started: Promise<Isolated<SpeculatedCall | null>>;
  private readonly streams: boolean;
  /** The text written before the run took the draft; then who hears the rest. */
  private held = '';
  private listener: TextListener | null = null;
  private settled = false;

  constructor(
    readonly node: DomainAgentNode,
    start: (signal: AbortSignal, onText: TextListener | undefined) => Promise<SpeculatedCall | null>,
  ) {
    this.streams = TurnContextStore.current()?.stream !== undefined;
    const onText = this.streams ? (delta: string) => this.hear(delta) : undefined;
    this.started = isolated(() => start(this.controller.signal, onText), SPECULATIVE_AGENT);
    // A draft discarded before it started must not become an unhandled rejection.
    this.started.catch(() => undefined);
  }

  async take(request: ChatRequest, onText?: TextListener): Promise<ChatResult | null> {
    if (this.settled) return null;
    const run = await this.started.catch(() => null);
    const call = run?.result;
    if (!run || !call || !isDeepStrictEqual(call.request, request)) {
      await this.discard();
      return null;
    }
    this.settled = true;
    if (onText && this.streams) {
      if (this.held !== '') onText(this.held);
      this.held = '';
      this.listener = onText;
    }
    try {
      const reply = await call.reply;
      run.keepCostOnly('used');
      if (onText && !this.streams && reply.content) onText(reply.content);
      return reply;
    } catch {
      // A failed speculation says nothing the run's own call would: the run calls the model itself.
      run.keepCostOnly('discarded');
      return null;
    }
  }

  private hear(delta: string): void {
    if (this.listener) this.listener(delta);
    else this.held += delta;
  }

  /**
   * Cancels the call (its HTTP request is aborted) and keeps only its cost, once the cancelled call has been
   * accounted, so the cost lands in the turn's usage record.
   */
  async discard(): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    this.controller.abort();
    const run = await this.started.catch(() => null);
    if (!run) return;
    await run.result?.reply.catch(() => undefined);
    run.keepCostOnly('discarded');
  }
}
