import { toolSchema } from '@agent/config';
import type { EventBusService } from '@agent/observability';
import { ChatRequest, LlmService, LlmTimeoutError } from '@agent/llm';
import { ParameterExtractor } from './parameter-extractor';

const config = toolSchema.parse({
  server: 'retail',
  description: 'Opens an exchange.',
  args_schema: {
    properties: {
      order_id: { type: 'string', description: 'Order id', extract_pattern: '(?<!\\d)(\\d{6})(?!\\d)' },
      reason: { type: 'string', description: 'Why', extract_pattern: '([' },
    },
    required: ['order_id', 'reason'],
  },
  operation_type: 'transactional',
});

function build(chat: (request: ChatRequest) => Promise<{ content: string | null }>) {
  const events: { name: string; payload: Record<string, unknown> }[] = [];
  const bus = { emit: (name: string, payload: Record<string, unknown>) => events.push({ name, payload }) };
  const llm = { chat: jest.fn(chat) };
  const extractor = new ParameterExtractor(llm as unknown as LlmService, bus as unknown as EventBusService);
  return { extractor, events, llm };
}

describe('ParameterExtractor', () => {
  it('uses the pattern first, logs a broken pattern, and asks the model only for the rest', async () => {
    const { extractor, events, llm } = build(() =>
      Promise.resolve({ content: '{"values": {"reason": "veio quebrado", "order_id": "999999"}}' }),
    );
    const found = await extractor.extract(
      'solicitar_troca',
      config,
      ['order_id', 'reason'],
      'pedido 100233',
      'x',
    );
    expect(found).toEqual({ order_id: '100233', reason: 'veio quebrado' });
    expect(events.map((e) => e.name)).toEqual(['mcp.parameter.regex_extract_failed']);
    expect(events[0].payload).toMatchObject({ tool_name: 'solicitar_troca', field: 'reason' });
    expect(llm.chat.mock.calls[0][0].messages[0].content).toEqual(expect.not.stringContaining('- order_id'));
  });

  it('logs mcp.parameter.llm_extract_failed and returns what it has when the model fails or answers badly', async () => {
    const failing = build(() => Promise.reject(new LlmTimeoutError('parameter_extraction', 100)));
    expect(await failing.extractor.extract('solicitar_troca', config, ['reason'], 'não sei', 'x')).toEqual(
      {},
    );
    expect(failing.events.map((e) => e.name)).toContain('mcp.parameter.llm_extract_failed');

    const invalid = build(() => Promise.resolve({ content: 'reason: quebrado' }));
    expect(await invalid.extractor.extract('solicitar_troca', config, ['reason'], 'quebrado', 'x')).toEqual(
      {},
    );
    expect(invalid.events.map((e) => e.name)).toContain('mcp.parameter.llm_extract_failed');
  });
});
