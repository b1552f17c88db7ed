import { join } from 'node:path';
import { loadYamlFile, routingFileSchema, toolsFileSchema } from '@agent/config';
import { FakeLlmServer, FakeReply } from '@agent/testing/fake-llm';
import { createTestLlm } from '@agent/testing/test-llm';
import { IntentCatalogue } from './intent-catalogue';
import { LlmIntentClassifier } from './llm-intent-classifier';

const configDir = join(__dirname, '..', '..', '..', 'config');
const catalogue = new IntentCatalogue(
  loadYamlFile(join(configDir, 'routing.yaml'), routingFileSchema),
  loadYamlFile(join(configDir, 'tools.yaml'), toolsFileSchema),
);

describe('LlmIntentClassifier', () => {
  let fake: FakeLlmServer;
  let classifier: LlmIntentClassifier;
  const context = { active_agent: 'billing_agent', previous_intent: 'billing_invoice_explanation' };
  const reply = (script: FakeReply) => fake.script({ model: 'router', reply: script, times: 1 });
  const answer = (content: string) => reply({ content });
  const sent = () => {
    expect(fake.requests).toHaveLength(1);
    return fake.requests[0];
  };

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    classifier = new LlmIntentClassifier(createTestLlm(fake).llm, catalogue, 'router', 0.65);
  });
  afterAll(() => fake.stop());
  beforeEach(() => fake.reset());

  it('accepts a known intent at or above the threshold and sends a minimal JSON prompt', async () => {
    answer('{"intent": "product_services_information", "confidence": 0.91, "reason": "asks about the plan"}');
    const result = await classifier.classify('o que está incluído?', context);
    expect(result).toMatchObject({
      accepted: true,
      intent: { name: 'product_services_information', agent: 'product_agent' },
      confidence: 0.91,
      reason: 'asks about the plan',
    });
    const request = sent();
    expect(request.body).toMatchObject({ model: 'router', response_format: { type: 'json_object' } });
    const payload = JSON.parse(request.messages[1].content ?? '') as Record<string, unknown>;
    expect(payload.message).toBe('o que está incluído?');
    expect(payload.session_context).toEqual(context);
    expect(payload).not.toHaveProperty('transaction_context');
    const intents = payload.allowed_intents as { name: string; agent: string; examples: string[] }[];
    expect(intents.map((i) => i.name)).toContain('retail_order_cancel');
    for (const intent of intents) {
      expect(Object.keys(intent).sort()).toEqual(['agent', 'description', 'examples', 'name']);
      expect(intent.examples.length).toBeLessThanOrEqual(3);
    }
  });

  it('accepts the threshold itself in a fenced answer', async () => {
    answer('```json\n{"intent": "retail_order_tracking", "confidence": 0.65}\n```');
    expect(await classifier.classify('cadê?', context)).toMatchObject({
      accepted: true,
      intent: { name: 'retail_order_tracking' },
      confidence: 0.65,
      reason: '',
    });
  });

  it('passes the transaction context when a state policy asks', async () => {
    answer('{"intent": "billing_invoice_explanation", "confidence": 0.9}');
    await classifier.classify('TIM Music', {
      ...context,
      transaction: {
        state: 'COLLECTING_BILLING_PARAMETERS',
        agent: 'billing_agent',
        intent: 'billing_invoice_explanation',
        missing_parameters: ['servico'],
      },
    });
    const payload = JSON.parse(sent().messages[1].content ?? '');
    expect(payload.transaction_context).toEqual({
      state: 'COLLECTING_BILLING_PARAMETERS',
      agent: 'billing_agent',
      intent: 'billing_invoice_explanation',
      missing_parameters: ['servico'],
    });
  });

  it.each([
    ['not JSON at all', 'invalid_output'],
    ['{"intent": "billing_invoice_explanation"}', 'invalid_output'],
    ['{"intent": "billing_invoice_explanation", "confidence": 1.4}', 'invalid_output'],
    ['{"intent": "", "confidence": 0.9}', 'invalid_output'],
    ['["billing_invoice_explanation"]', 'invalid_output'],
    ['{"intent": "billing_invoice_explanation", "confidence": "0.9"}', 'invalid_output'],
    ['{"intent": "billing_invoice_explanation", "confidence": null}', 'invalid_output'],
    ['{"intent": "a", "confidence": 0.9} {"intent": "b", "confidence": 0.9}', 'invalid_output'],
  ])('rejects invalid output %s', async (content, reason) => {
    answer(content);
    expect(await classifier.classify('oi', context)).toMatchObject({ accepted: false, reason });
  });

  it('rejects an unknown intent and keeps what the model said', async () => {
    answer('{"intent": "weather_forecast", "confidence": 0.99, "reason": "clima"}');
    expect(await classifier.classify('vai chover?', context)).toMatchObject({
      accepted: false,
      reason: 'unknown_intent',
      intent: 'weather_forecast',
      confidence: 0.99,
    });
  });

  it('rejects a confidence below the threshold', async () => {
    answer('{"intent": "retail_order_tracking", "confidence": 0.3}');
    expect(await classifier.classify('hmm', context)).toMatchObject({
      accepted: false,
      reason: 'below_threshold',
      intent: 'retail_order_tracking',
      confidence: 0.3,
    });
  });

  it.each<[string, FakeReply, string]>([
    ['a timeout', { content: '{}', delayMs: 1500 }, 'timeout'],
    ['an HTTP error', { status: 503 }, 'http_error'],
    ['a completion without choices', { rawBody: '{"choices": []}' }, 'invalid_output'],
    ['a dropped connection', { hangUp: true }, 'error'],
  ])('turns a failed call (%s) into a rejection', async (_label, failure, reason) => {
    reply(failure);
    const result = await classifier.classify('oi', context);
    expect(result).toMatchObject({ accepted: false, reason, detail: expect.any(String) });
  });

  it('rejects without a call when no endpoint is configured', async () => {
    const unconfigured = new LlmIntentClassifier(createTestLlm(null).llm, catalogue, 'router', 0.65);
    expect(await unconfigured.classify('oi', context)).toMatchObject({
      accepted: false,
      reason: 'not_configured',
    });
    expect(fake.requests).toEqual([]);
  });

  it('does not call the model for an empty message', async () => {
    expect(await classifier.classify('   ', context)).toMatchObject({
      accepted: false,
      reason: 'empty_message',
    });
    expect(fake.requests).toEqual([]);
  });
});
