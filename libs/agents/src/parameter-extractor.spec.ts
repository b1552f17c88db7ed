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

const question = (fields: string[], text: string) => ({
  toolName: 'solicitar_troca',
  config,
  operation: 'a troca do pedido',
  fields,
  alternatives: [{ name: 'solicitar_devolucao', description: 'a devolução do pedido' }],
  text,
  profile: 'parameter_extraction',
  minConfidence: 0.7,
});

describe('ParameterExtractor', () => {
  it('uses the pattern first, logs a broken pattern, and asks the model only for the rest', async () => {
    const { extractor, events } = build({
      json: { values: { reason: 'veio quebrado', order_id: '999999' } },
    });
    const reading = await extractor.read(question(['order_id', 'reason'], 'pedido 100233'));
    expect(reading).toEqual({
      action: 'ANSWER',
      confidence: null,
      operation: null,
      values: { order_id: '100233', reason: 'veio quebrado' },
    });
    expect(events.map((e) => e.name)).toEqual(['mcp.parameter.regex_extract_failed']);
    expect(events[0].payload).toMatchObject({ tool_name: 'solicitar_troca', field: 'reason' });
    expect(fake.requests[0].messages[0].content).toEqual(expect.not.stringContaining('- order_id'));
    expect(fake.requests[0].messages[0].content).toContain('- solicitar_devolucao: a devolução do pedido');
  });

  it('accepts a field the model leaves out or answers null, and keeps only the values it found', async () => {
    const { extractor } = build({ json: { values: { reason: null } } });
    expect((await extractor.read(question(['reason'], 'quero trocar'))).values).toEqual({});
    const partial = build({ json: { values: {} } });
    expect((await partial.extractor.read(question(['reason'], 'quero trocar'))).values).toEqual({});
    expect(partial.events).toEqual([expect.objectContaining({ name: 'mcp.parameter.regex_extract_failed' })]);
  });

  it('reads an abandonment or a replacement only when the model is sure and names an offered operation', async () => {
    const abandon = build({ json: { action: 'abandon', confidence: 0.9, values: { reason: null } } });
    expect(await abandon.extractor.read(question(['reason'], 'olvídalo'))).toMatchObject({
      action: 'ABANDON',
      confidence: 0.9,
    });
    fake.reset();
    const unsure = build({ json: { action: 'ABANDON', confidence: 0.5, values: { reason: null } } });
    expect((await unsure.extractor.read(question(['reason'], 'hmm'))).action).toBe('ANSWER');
    fake.reset();
    const replace = build({
      json: {
        action: 'REPLACE',
        confidence: 0.9,
        operation: 'solicitar_devolucao',
        values: { reason: 'não serviu' },
      },
    });
    expect(await replace.extractor.read(question(['reason'], 'prefiro devolver, não serviu'))).toEqual({
      action: 'REPLACE',
      confidence: 0.9,
      operation: 'solicitar_devolucao',
      values: { reason: 'não serviu' },
    });
    fake.reset();
    const unknown = build({
      json: { action: 'REPLACE', confidence: 0.9, operation: 'cancelar_pedido', values: { reason: null } },
    });
    expect(await unknown.extractor.read(question(['reason'], 'cancela'))).toMatchObject({
      action: 'ANSWER',
      operation: null,
    });
  });

  it('logs mcp.parameter.llm_extract_failed and reads an answer without values when the model fails', async () => {
    const failing = build({ status: 503 });
    expect(await failing.extractor.read(question(['reason'], 'não sei'))).toEqual({
      action: 'ANSWER',
      confidence: null,
      operation: null,
      values: {},
    });
    expect(failing.events.at(-1)).toMatchObject({
      name: 'mcp.parameter.llm_extract_failed',
      payload: { fields: ['reason'], error: expect.stringContaining('503') },
    });

    fake.reset();
    const invalid = build({ content: 'reason: quebrado' });
    expect((await invalid.extractor.read(question(['reason'], 'quebrado'))).values).toEqual({});
    expect(invalid.events.at(-1)).toMatchObject({
      name: 'mcp.parameter.llm_extract_failed',
      payload: { error: expect.stringContaining('invalid extraction output') },
    });
  });
});
