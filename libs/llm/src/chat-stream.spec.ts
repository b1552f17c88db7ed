import OpenAI from 'openai';
import { FakeLlmServer } from '../../../test/support/fake-llm';
import { streamedCompletion } from './chat-stream';

describe(streamedCompletion.name, () => {
  let fake: FakeLlmServer;
  let client: OpenAI;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    client = new OpenAI({ baseURL: fake.baseUrl, apiKey: 'k', maxRetries: 0 });
  });
  afterAll(() => fake.stop());
  beforeEach(() => fake.reset());

  const params = { model: 'agent', messages: [{ role: 'user' as const, content: 'oi' }] };

  it('hears every piece in order and folds them into the completion, usage from the final chunk', async () => {
    fake.script({
      model: 'agent',
      reply: {
        chunks: ['Sua fa', 'tura ', 'vence dia 10.'],
        usage: { prompt_tokens: 9, completion_tokens: 5 },
      },
    });
    const heard: string[] = [];
    const completion = await streamedCompletion(client, params, { timeout: 2000 }, (d) => heard.push(d));
    expect(heard).toEqual(['Sua fa', 'tura ', 'vence dia 10.']);
    expect(completion.choices[0].message.content).toBe('Sua fatura vence dia 10.');
    expect(completion.choices[0].finish_reason).toBe('stop');
    expect(completion.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 5 });
    expect(fake.requests[0].body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('assembles tool calls streamed in pieces', async () => {
    fake.script({
      model: 'agent',
      reply: {
        tool_calls: [{ id: 'c1', name: 'get_invoice', arguments: { invoice_id: 'INV-1', month: 3 } }],
      },
    });
    const completion = await streamedCompletion(client, params, { timeout: 2000 }, () => undefined);
    expect(completion.choices[0].message.tool_calls).toEqual([
      {
        id: 'c1',
        type: 'function',
        function: { name: 'get_invoice', arguments: '{"invoice_id":"INV-1","month":3}' },
      },
    ]);
    expect(completion.choices[0].finish_reason).toBe('tool_calls');
  });

  it('a stream that stalls after its headers fails at the deadline instead of passing for complete', async () => {
    fake.script({ model: 'agent', reply: { chunks: ['Sua ', 'fatura ', 'vence'], stallAfterChunks: 1 } });
    const heard: string[] = [];
    await expect(
      streamedCompletion(client, params, { timeout: 300 }, (d) => heard.push(d)),
    ).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(heard).toEqual(['Sua ']);
  });

  it('a stream that ends before its finish reason fails instead of passing for complete', async () => {
    fake.script({ model: 'agent', reply: { chunks: ['Sua ', 'fatura ', 'vence'], endAfterChunks: 2 } });
    const heard: string[] = [];
    await expect(streamedCompletion(client, params, { timeout: 2000 }, (d) => heard.push(d))).rejects.toThrow(
      'the model stream ended before its finish reason',
    );
    expect(heard).toEqual(['Sua ', 'fatura ']);
  });
});
