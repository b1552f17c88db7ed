import { getMaxListeners } from 'node:events';
import type { AgentRetrieval } from '@agent/agents';
import type { ChatRequest, ChatResult, TextListener } from '@agent/llm';
import { TurnContext, TurnContextStore } from '@agent/observability';
import { turnContextOf } from '@agent/testing/states';
import { AgentDraft } from './agent-draft';

const request: ChatRequest = { profile: 'agent', messages: [{ role: 'user', content: 'e quando vence?' }] };

function result(content: string): ChatResult {
  return {
    content,
    toolCalls: [],
    profile: 'agent',
    model: 'agent',
    latencyMs: 1,
    promptTokens: 1,
    cachedPromptTokens: 0,
    completionTokens: 1,
    finishReason: 'stop',
  };
}

/**
 * A draft whose model call the test writes: `write` sends a piece, `finish` answers with what was written. It
 * resolves once the call started (at once: the agent has no knowledge base).
 */
async function scriptedDraft(context: TurnContext) {
  let listener: TextListener | undefined;
  let written = '';
  let answer: (reply: ChatResult) => void = () => undefined;
  let fail: (error: Error) => void = () => undefined;
  const reply = new Promise<ChatResult>((resolve, reject) => {
    answer = resolve;
    fail = reject;
  });
  let called: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (called = resolve));
  const draft = await TurnContextStore.run(context, () =>
    Promise.resolve(
      new AgentDraft('billing_agent', {
        call: (_retrieval, _signal, onText) => {
          listener = onText;
          called();
          return Promise.resolve({ request, reply });
        },
      }),
    ),
  );
  await started;
  return {
    draft,
    streams: () => listener !== undefined,
    write: (piece: string) => {
      written += piece;
      listener?.(piece);
    },
    finish: () => answer(result(written)),
    fail: () => fail(new Error('the model stream broke')),
  };
}

describe('AgentDraft', () => {
  it('in a streamed turn holds the text until taken, then hands it over and passes the rest as it arrives', async () => {
    const model = await scriptedDraft(turnContextOf({ stream: { send: () => undefined } }));
    expect(model.streams()).toBe(true);
    model.write('Sua fatura ');
    model.write('vence ');
    const heard: string[] = [];
    const taken = model.draft.take(request, (delta) => heard.push(delta));
    await new Promise((resolve) => setImmediate(resolve));
    expect(heard).toEqual(['Sua fatura vence ']);
    model.write('no dia 10.');
    expect(heard).toEqual(['Sua fatura vence ', 'no dia 10.']);
    model.finish();
    expect((await taken)?.content).toBe('Sua fatura vence no dia 10.');
    expect(heard.join('')).toBe('Sua fatura vence no dia 10.');
  });

  it('outside a streamed turn does not stream the call, and hands the whole text over once it is complete', async () => {
    const model = await scriptedDraft(turnContextOf());
    expect(model.streams()).toBe(false);
    model.write('Sua fatura vence no dia 10.');
    model.finish();
    const heard: string[] = [];
    expect((await model.draft.take(request, (delta) => heard.push(delta)))?.content).toBe(
      'Sua fatura vence no dia 10.',
    );
    expect(heard).toEqual(['Sua fatura vence no dia 10.']);
  });

  it('answers null for a call that breaks after handing text over, and passes nothing of a discarded one', async () => {
    const broken = await scriptedDraft(turnContextOf({ stream: { send: () => undefined } }));
    broken.write('Sua fatura ');
    const heard: string[] = [];
    const taken = broken.draft.take(request, (delta) => heard.push(delta));
    broken.fail();
    expect(await taken).toBeNull();
    expect(heard).toEqual(['Sua fatura ']);

    const discarded = await scriptedDraft(turnContextOf({ stream: { send: () => undefined } }));
    discarded.write('RASCUNHO');
    const discarding = discarded.draft.discard();
    discarded.fail();
    await discarding;
    const late: string[] = [];
    expect(await discarded.draft.take(request, (delta) => late.push(delta))).toBeNull();
    expect(late).toEqual([]);
  });

  describe('retrieval', () => {
    const retrieval: AgentRetrieval = {
      namespace: 'product',
      query: 'tem roaming?',
      context: {
        enabled: false,
        attempted: false,
        status: 'disabled',
        reason: 'rag_disabled',
        provider: 'test',
      },
    };

    /** A product draft whose retrieval records a model call and an event, as the rails and the RAG stage do. */
    async function retrievingDraft(context: TurnContext) {
      let calls = 0;
      const record = (name: string) =>
        TurnContextStore.current()?.events.push({ name, payload: {}, at: new Date(0).toISOString() });
      const draft = await TurnContextStore.run(context, () =>
        Promise.resolve(
          new AgentDraft('product_agent', {
            retrieve: () => {
              record('llm.call');
              record('IC.PRODUCT_RAG_CONTEXT_EVALUATED');
              return Promise.resolve(retrieval);
            },
            call: (given) => {
              calls++;
              expect(given).toBe(retrieval);
              return Promise.resolve({ request, reply: Promise.resolve(result('Tem, sim.')) });
            },
          }),
        ),
      );
      return { draft, calls: () => calls };
    }

    it('hands its retrieval to a run that retrieves the same, and its records become the turn’s', async () => {
      const context = turnContextOf();
      const { draft, calls } = await retrievingDraft(context);
      expect(await draft.retrieval('product', 'tem roaming?')).toBe(retrieval.context);
      expect((await draft.take(request))?.content).toBe('Tem, sim.');
      expect(calls()).toBe(1);
      expect(context.events.map((e) => [e.name, e.payload.speculative_agent])).toEqual([
        ['llm.call', undefined],
        ['IC.PRODUCT_RAG_CONTEXT_EVALUATED', undefined],
      ]);
    });

    it('keeps only the cost of a retrieval the run does not take, and gives none once discarded', async () => {
      const context = turnContextOf();
      const { draft } = await retrievingDraft(context);
      expect(await draft.retrieval('product', 'outra pergunta')).toBeNull();
      expect(await draft.retrieval('billing', 'tem roaming?')).toBeNull();
      await draft.discard();
      expect(await draft.retrieval('product', 'tem roaming?')).toBeNull();
      expect(context.events.map((e) => [e.name, e.payload.speculative_agent])).toEqual([
        ['llm.call', 'discarded'],
      ]);
    });

    it('starts no model call after a retrieval that broke, and keeps what the retrieval cost', async () => {
      const context = turnContextOf();
      let calls = 0;
      const draft = await TurnContextStore.run(context, () =>
        Promise.resolve(
          new AgentDraft('product_agent', {
            retrieve: () => {
              TurnContextStore.current()?.events.push({ name: 'llm.call', payload: {}, at: '' });
              return Promise.reject(new Error('the store is down'));
            },
            call: () => {
              calls++;
              return Promise.resolve({ request, reply: Promise.resolve(result('sem trechos')) });
            },
          }),
        ),
      );
      expect(await draft.retrieval('product', 'tem roaming?')).toBeNull();
      expect(await draft.take(request)).toBeNull();
      expect(calls).toBe(0);
      expect(context.events.map((e) => [e.name, e.payload.speculative_agent])).toEqual([
        ['llm.call', 'discarded'],
      ]);
    });

    it('lets every passage of a large retrieval listen to its signal without a leak warning', async () => {
      let heard: AbortSignal | undefined;
      const draft = await TurnContextStore.run(turnContextOf(), () =>
        Promise.resolve(
          new AgentDraft('product_agent', {
            retrieve: (signal) => {
              heard = signal;
              return Promise.resolve(retrieval);
            },
            call: () => Promise.resolve(null),
          }),
        ),
      );
      await draft.discard();
      // Node warns of a leak past an EventTarget's limit (10 by default).
      expect(heard && getMaxListeners(heard)).toBe(Infinity);
    });
  });
});
