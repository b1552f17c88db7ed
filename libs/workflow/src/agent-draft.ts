import { setMaxListeners } from 'node:events';
import { isDeepStrictEqual } from 'node:util';
import type { AgentRetrieval, FirstReplyDraft, SpeculatedCall } from '@agent/agents';
import type { DomainAgentNode } from '@agent/contracts';
import type { ChatRequest, ChatResult, TextListener } from '@agent/llm';
import { TurnContextStore } from '@agent/observability';
import type { RagContext } from '@agent/rag';
import { isolated, Isolated } from './event-fork';

/** How the llm.call records of a speculative agent call are marked: `speculative_agent: used | discarded`. */
export const SPECULATIVE_AGENT = 'speculative_agent';

/** How a draft starts: its retrieval (absent for an agent without a knowledge base), then its model call. */
export interface DraftStart {
  retrieve?: (signal: AbortSignal) => Promise<AgentRetrieval | null>;
  call: (
    retrieval: AgentRetrieval | null,
    signal: AbortSignal,
    onText: TextListener | undefined,
  ) => Promise<SpeculatedCall | null>;
}

/** What the draft's retrieval gave: its result (null without a knowledge base), or nothing, given up or broken. */
type Retrieved = { retrieval: AgentRetrieval | null } | { failed: true };

/** An agent without a knowledge base retrieves nothing, and has nothing to adopt or account. */
const NOTHING_RETRIEVED: Isolated<Retrieved> = {
  result: { retrieval: null },
  adopt: () => undefined,
  keepCostOnly: () => undefined,
};

/**
 * The agent's first model call, started beside the guardrail verdict and the continuity classifier, after the
 * agent's retrieval, each in its own event buffer. Until the agent run takes them (after the verdict allowed
 * the turn and routing kept the agent), nothing they produced reaches the turn: no tool runs, no event, state or
 * memory comes from them. The run takes the retrieval when it would retrieve the same (its events become the
 * turn's) and the reply when it would send the same request. `discard` cancels the retrieval's and the call's
 * HTTP requests and keeps only the costs on record; so does `take` when the run's own request differs. In a
 * streamed turn the call streams: its text is held here until `take` hands it on, then passed as it arrives.
 */
export class AgentDraft implements FirstReplyDraft {
  private readonly controller = new AbortController();
  private readonly retrieved: Promise<Isolated<Retrieved>>;
  private readonly started: Promise<Isolated<SpeculatedCall | null>>;
  private readonly streams: boolean;
  /** The text written before the run took the draft; then who hears the rest. */
  private held = '';
  private listener: TextListener | null = null;
  private retrievalTaken = false;
  private settled = false;

  constructor(
    readonly node: DomainAgentNode,
    start: DraftStart,
  ) {
    this.streams = TurnContextStore.current()?.stream !== undefined;
    const onText = this.streams ? (delta: string) => this.hear(delta) : undefined;
    const { signal } = this.controller;
    const { retrieve, call } = start;
    if (!retrieve) {
      this.retrieved = Promise.resolve(NOTHING_RETRIEVED);
      this.started = isolated(() => call(null, signal, onText), SPECULATIVE_AGENT);
    } else {
      // Each passage's screening listens to it (RAG_TOP_K up to 50): a bounded crowd, not a leak to warn about.
      setMaxListeners(Infinity, signal);
      // A retrieval given up or broken still settles, so the costs it recorded stay within reach; without its
      // passages the call could not send the run's request, so it does not start.
      this.retrieved = isolated(
        () =>
          retrieve(signal).then(
            (retrieval): Retrieved => ({ retrieval }),
            (): Retrieved => ({ failed: true }),
          ),
        SPECULATIVE_AGENT,
      );
      this.started = this.retrieved.then(({ result }) =>
        isolated(
          () => ('failed' in result ? Promise.resolve(null) : call(result.retrieval, signal, onText)),
          SPECULATIVE_AGENT,
        ),
      );
    }
    // A draft discarded before it started must not become an unhandled rejection.
    this.started.catch(() => undefined);
  }

  async retrieval(namespace: string, query: string): Promise<RagContext | null> {
    if (this.settled) return null;
    const run = await this.retrieved;
    const retrieval = 'retrieval' in run.result ? run.result.retrieval : null;
    if (!retrieval || retrieval.namespace !== namespace || retrieval.query !== query) return null;
    this.retrievalTaken = true;
    run.adopt();
    return retrieval.context;
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
    await this.settleRetrieval();
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
   * Cancels the call (its HTTP request is aborted) and keeps only its costs, once the cancelled call has been
   * accounted, so they land in the turn's usage record.
   */
  async discard(): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    this.controller.abort();
    await this.settleRetrieval();
    const run = await this.started.catch(() => null);
    if (!run) return;
    await run.result?.reply.catch(() => undefined);
    run.keepCostOnly('discarded');
  }

  /** A retrieval the run did not take leaves only its model calls' cost (embedding, rails) on record. */
  private async settleRetrieval(): Promise<void> {
    if (this.retrievalTaken) return;
    (await this.retrieved).keepCostOnly('discarded');
  }
}
