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

/** A draft whose model call the test writes: `write` sends a piece, `finish` answers with what was written. */
function scriptedDraft(context: TurnContext) {
  let listener: TextListener | undefined;
  let written = '';
  let answer: (reply: ChatResult) => void = () => undefined;
  let fail: (error: Error) => void = () => undefined;
  const reply = new Promise<ChatResult>((resolve, reject) => {
    answer = resolve;
    fail = reject;
  });
  return TurnContextStore.run(context, () =>
    Promise.resolve({
      draft: new AgentDraft('billing_agent', (_signal, onText) => {
        listener = onText;
        return Promise.resolve({ request, reply });
      }),
      streams: () => listener !== undefined,
      write: (piece: string) => {
        written += piece;
        listener?.(piece);
      },
      finish: () => answer(result(written)),
      fail: () => fail(new Error('the model stream broke')),
    }),
  );
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
});
