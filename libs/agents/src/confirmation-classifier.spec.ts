import { FakeLlmServer, FakeReply } from '@agent/testing/fake-llm';
import { createTestLlm } from '@agent/testing/test-llm';
import { ConfirmationClassifier, ConfirmationQuestion } from './confirmation-classifier';

let fake: FakeLlmServer;
beforeAll(async () => {
  fake = await FakeLlmServer.start();
});
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

const question: ConfirmationQuestion = {
  operation: 'o cancelamento do pedido (pedido 100231)',
  question: 'Confirma o cancelamento do pedido (pedido 100231)?',
  message: 'no, the order is 100239',
  history: [],
  minConfidence: 0.7,
  fields: [
    { name: 'order_id', description: 'Order identifier', value: '100231' },
    { name: 'reason', description: 'Why', value: null },
  ],
  alternatives: [{ name: 'solicitar_devolucao', description: 'a devolução do pedido' }],
};

async function classify(reply: FakeReply) {
  fake.script({ model: 'confirmation', reply });
  return new ConfirmationClassifier(createTestLlm(fake).llm).classify(question);
}

describe('ConfirmationClassifier', () => {
  it('keeps a plain yes or no valid and shows the model the values and the alternatives', async () => {
    expect(await classify({ json: { decision: 'confirm', confidence: 0.9 } })).toMatchObject({
      decision: 'CONFIRM',
      accepted: true,
      values: {},
      operation: null,
    });
    const prompt = String(fake.requests[0].messages[0].content);
    expect(prompt).toContain('- order_id (Order identifier): "100231"');
    expect(prompt).toContain('- solicitar_devolucao: a devolução do pedido');
  });

  it('returns a correction with its values, and a replacement toward an offered operation', async () => {
    expect(
      await classify({
        json: { decision: 'CORRECT', confidence: 0.9, values: { order_id: '100239', reason: null } },
      }),
    ).toMatchObject({ decision: 'CORRECT', accepted: true, values: { order_id: '100239' } });
    fake.reset();
    expect(
      await classify({
        json: { decision: 'REPLACE', confidence: 0.9, operation: 'solicitar_devolucao', values: null },
      }),
    ).toMatchObject({ decision: 'REPLACE', accepted: true, operation: 'solicitar_devolucao', values: {} });
  });

  it('reads a correction without a value, an unknown replacement or low confidence as OTHER', async () => {
    expect(
      await classify({ json: { decision: 'CORRECT', confidence: 0.9, values: { order_id: null } } }),
    ).toMatchObject({ decision: 'OTHER', accepted: false, fallback_reason: 'incomplete' });
    fake.reset();
    expect(
      await classify({ json: { decision: 'REPLACE', confidence: 0.9, operation: 'apagar_tudo' } }),
    ).toMatchObject({ decision: 'OTHER', fallback_reason: 'incomplete', operation: null });
    fake.reset();
    expect(await classify({ json: { decision: 'REJECT', confidence: 0.5 } })).toMatchObject({
      decision: 'OTHER',
      fallback_reason: 'below_threshold',
    });
  });
});
