import { toolSchema } from '@agent/config';
import type { EventBusService } from '@agent/observability';
import { FakeLlmServer, FakeReply } from '@agent/testing/fake-llm';
import { createTestLlm } from '@agent/testing/test-llm';
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

let fake: FakeLlmServer;
beforeAll(async () => {
  fake = await FakeLlmServer.start();
});
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

/** An extractor whose model answers `reply` (the test profiles have no parameter_extraction: `default` serves it). */
function build(reply: FakeReply) {
  fake.script({ model: 'default', reply });
  const events: { name: string; payload: Record<string, unknown> }[] = [];
  const bus = { emit: (name: string, payload: Record<string, unknown>) => events.push({ name, payload }) };
  const extractor = new ParameterExtractor(createTestLlm(fake).llm, bus as unknown as EventBusService);
  return { extractor, events };
}

describe('ParameterExtractor', () => {
  it('uses the pattern first, logs a broken pattern, and asks the model only for the rest', async () => {
    const { extractor, events } = build({
      json: { values: { reason: 'veio quebrado', order_id: '999999' } },
    });
    const found = await extractor.extract(
      'solicitar_troca',
      config,
      ['order_id', 'reason'],
      'pedido 100233',
      'parameter_extraction',
    );
    expect(found).toEqual({ order_id: '100233', reason: 'veio quebrado' });
    expect(events.map((e) => e.name)).toEqual(['mcp.parameter.regex_extract_failed']);
    expect(events[0].payload).toMatchObject({ tool_name: 'solicitar_troca', field: 'reason' });
    expect(fake.requests[0].messages[0].content).toEqual(expect.not.stringContaining('- order_id'));
  });

  it('accepts a field the model leaves out or answers null, and keeps only the values it found', async () => {
    const { extractor } = build({ json: { values: { reason: null } } });
    expect(
      await extractor.extract('solicitar_troca', config, ['reason'], 'quero trocar', 'parameter_extraction'),
    ).toEqual({});
    const partial = build({ json: { values: {} } });
    expect(
      await partial.extractor.extract(
        'solicitar_troca',
        config,
        ['reason'],
        'quero trocar',
        'parameter_extraction',
      ),
    ).toEqual({});
    expect(partial.events).toEqual([expect.objectContaining({ name: 'mcp.parameter.regex_extract_failed' })]);
  });

  it('logs mcp.parameter.llm_extract_failed and returns what it has when the model fails or answers badly', async () => {
    const failing = build({ status: 503 });
    expect(
      await failing.extractor.extract(
        'solicitar_troca',
        config,
        ['reason'],
        'não sei',
        'parameter_extraction',
      ),
    ).toEqual({});
    expect(failing.events.at(-1)).toMatchObject({
      name: 'mcp.parameter.llm_extract_failed',
      payload: { fields: ['reason'], error: expect.stringContaining('503') },
    });

    fake.reset();
    const invalid = build({ content: 'reason: quebrado' });
    expect(
      await invalid.extractor.extract(
        'solicitar_troca',
        config,
        ['reason'],
        'quebrado',
        'parameter_extraction',
      ),
    ).toEqual({});
    expect(invalid.events.at(-1)).toMatchObject({
      name: 'mcp.parameter.llm_extract_failed',
      payload: { error: expect.stringContaining('invalid extraction output') },
    });
  });
});
