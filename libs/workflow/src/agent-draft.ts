import { isDeepStrictEqual } from 'node:util';
import type { FirstReplyDraft, SpeculatedCall } from '@agent/agents';
import type { DomainAgentNode } from '@agent/contracts';
import type { ChatRequest, ChatResult } from '@agent/llm';
import { isolated, Isolated } from './event-fork';

/** How the llm.call records of a speculative agent call are marked: `speculative_agent: used | discarded`. */
export const SPECULATIVE_AGENT = 'speculative_agent';

/**
 * The agent's first model call, started beside the guardrail verdict and the continuity classifier in its own
 * event buffer. Until the agent run takes it (`take`, after the verdict allowed the turn and routing kept the
 * agent), nothing it produced reaches the turn: no tool runs, no event, state or memory comes from it. `discard`
 * cancels its HTTP request and keeps only its cost on record; so does `take` when the run's own request differs.
 */
export class AgentDraft implements FirstReplyDraft {
  private readonly controller = new AbortController();
  private readonly started: Promise<Isolated<SpeculatedCall | null>>;
  private settled = false;

  constructor(
    readonly node: DomainAgentNode,
    start: (signal: AbortSignal) => Promise<SpeculatedCall | null>,
  ) {
    this.started = isolated(() => start(this.controller.signal), SPECULATIVE_AGENT);
    // A draft discarded before it started must not become an unhandled rejection.
    this.started.catch(() => undefined);
  }

  async take(request: ChatRequest): Promise<ChatResult | null> {
    if (this.settled) return null;
    const run = await this.started.catch(() => null);
    const call = run?.result;
    if (!run || !call || !isDeepStrictEqual(call.request, request)) {
      await this.discard();
      return null;
    }
    this.settled = true;
    try {
      const reply = await call.reply;
      run.keepCostOnly('used');
      return reply;
    } catch {
      // A failed speculation says nothing the run's own call would: the run calls the model itself.
      run.keepCostOnly('discarded');
      return null;
    }
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
