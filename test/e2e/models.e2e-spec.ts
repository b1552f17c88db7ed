import { join } from 'node:path';
import { FakeLlmServer, requestText } from '../support/fake-llm';
import { freePort } from '../support/reference-mcp';
import { REPO_ROOT, startTestApp, TestApp, uniqueId } from '../support/test-app';

/**
 * The shipped profiles with the three model variables: every stage of a turn (classifier, router, guardrails,
 * agent, judges, memory extraction, embeddings) calls one of the configured models and no other name reaches
 * the endpoint.
 */
describe('LLM_MODEL, LLM_SMALL_MODEL and LLM_EMBEDDING_MODEL', () => {
  const models = { LLM_MODEL: 'big-x', LLM_SMALL_MODEL: 'small-y', LLM_EMBEDDING_MODEL: 'embed-z' };
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    // The guardrail model answers one verdict per check it is asked about.
    fake.script({
      model: 'small-y',
      when: (request) => requestText(request).includes('Checks:'),
      reply: (request) => ({
        json: Object.fromEntries(
          [...requestText(request).matchAll(/^([A-Z_]+): /gm)].map(([, code]) => [
            code,
            { verdict: 'allow', confidence: 1, reason: null },
          ]),
        ),
      }),
    });
    // One answer that satisfies every other small-model contract at once (each stage reads its own keys).
    fake.script({
      model: 'small-y',
      reply: {
        json: {
          decision: 'ROUTE',
          confidence: 0.95,
          reason: 'scripted',
          intent: 'billing_invoice_explanation',
          intents: [{ intent: 'billing_invoice_explanation', confidence: 0.95 }],
          score: 1,
          passed: true,
          facts: [{ category: 'profile', key: 'preferred_name', value: 'Ana', confidence: 0.95 }],
        },
      },
    });
    fake.script({ model: 'big-x', reply: { content: 'Sua fatura de março ficou em R$ 99,90.' } });
    const closed = `http://127.0.0.1:${await freePort()}/mcp`;
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        LLM_PROFILES_PATH: join(REPO_ROOT, 'config', 'llm_profiles.yaml'),
        ...models,
        ENABLE_ROUTE_STICKINESS: 'true',
        ENABLE_LONG_TERM_MEMORY: 'true',
        MCP_SERVER_TELECOM_URL: closed,
        MCP_SERVER_RETAIL_URL: closed,
      },
    });
  }, 240000);

  afterAll(async () => {
    await app?.close();
    await fake?.stop();
  });

  it('sends exactly the configured model names, and each stage its tier', async () => {
    const session = uniqueId('models');
    for (const text of ['Pode me chamar de Ana. Quanto veio minha fatura?', 'E o vencimento dela?']) {
      const turn = await app.post('/v1/channels/web/messages', {
        tenant_id: 'acme',
        agent_id: 'telecom_contas',
        session_id: session,
        user_id: `${session}-user`,
        text,
      });
      expect(turn.status).toBe(200);
    }
    const sent = new Set(fake.requests.map((request) => request.model));
    expect([...sent].filter((model) => !['big-x', 'small-y', 'embed-z'].includes(model))).toEqual([]);
    expect(sent).toContain('big-x');
    expect(sent).toContain('small-y');
    const small = fake.requestsFor('small-y').map((request) => request.messages[0]?.content ?? '');
    // The classifier, the guardrail and the memory extraction all ran on the small model.
    expect(small.some((prompt) => /CONTINUE/.test(prompt))).toBe(true);
    expect(small.some((prompt) => /You are the guardrail/.test(prompt))).toBe(true);
    expect(small.some((prompt) => /durable facts/.test(prompt))).toBe(true);
    const embeddings = fake.requests.filter((request) => request.body.input !== undefined);
    expect(embeddings.every((request) => request.model === 'embed-z')).toBe(true);
    // Where Postgres has pgvector, the knowledge base was embedded with the embedding model.
    const [vector]: { present: boolean }[] = await app.dataSource.query(
      `SELECT to_regclass('rag_chunk_embeddings') IS NOT NULL AS present`,
    );
    if (vector.present) expect(sent).toContain('embed-z');
  });
});
