import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentState } from '@agent/contracts';
import { FakeLlmServer, GUARDRAILS_ALLOW } from '../support/fake-llm';
import { KnowledgeConfig, productKnowledgeConfig } from '../support/knowledge-config';
import { freePort } from '../support/reference-mcp';
import { REPO_ROOT, startTestApp, TestApp, uniqueId } from '../support/test-app';

/**
 * The product agent with pgvector: an app whose profiles include `embedding` embeds the knowledge base at
 * start-up and retrieves by vector. Where the database has no pgvector (a DATABASE_URL without it), the same
 * app stays on full-text search.
 */
describe('product agent with RAG vector search', () => {
  let fake: FakeLlmServer;
  let app: TestApp;
  let knowledge: KnowledgeConfig;
  let vectorAvailable = false;
  const tenant = 'acme';

  beforeAll(async () => {
    knowledge = productKnowledgeConfig('productvec');
    const { configDir } = knowledge;
    // The test profiles plus `embedding` (model = profile name, as every test profile).
    const profilesPath = join(configDir, 'test_llm_profiles.yaml');
    writeFileSync(
      profilesPath,
      readFileSync(join(REPO_ROOT, 'test', 'support', 'config', 'llm_profiles.yaml'), 'utf8') +
        '  embedding: { provider: openai_compatible, model: embedding, timeout_seconds: 2 }\n',
    );
    const closed = `http://127.0.0.1:${await freePort()}/mcp`;
    fake = await FakeLlmServer.start();
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        CONFIG_DIR: configDir,
        LLM_PROFILES_PATH: profilesPath,
        MCP_SERVER_TELECOM_URL: closed,
        MCP_SERVER_RETAIL_URL: closed,
      },
    });
    const rows: { present: boolean }[] = await app.dataSource.query(
      `SELECT to_regclass('rag_chunk_embeddings') IS NOT NULL AS present`,
    );
    vectorAvailable = rows[0].present;
    if (!vectorAvailable) {
      console.warn('pgvector is not installed in this database: vector search assertions are skipped');
    }
  }, 240000);

  afterAll(async () => {
    await knowledge?.remove(app?.dataSource);
    await app?.close();
    await fake?.stop();
  });

  it('embeds the knowledge base at start-up and the product agent retrieves by vector', async () => {
    fake.script(GUARDRAILS_ALLOW);
    fake.script({
      model: 'router',
      reply: { json: { intent: 'product_services_information', confidence: 0.95 } },
    });
    fake.script({ model: 'agent', reply: { content: 'O Pacote Viagem cobre roaming internacional.' } });
    const sessionId = uniqueId('ragvec');
    const res = await app.post<Record<string, unknown>>('/v1/channels/web/messages', {
      tenant_id: tenant,
      agent_id: 'telecom_contas',
      session_id: sessionId,
      text: 'O plano Controle tem roaming internacional para viagem?',
    });
    expect(res.status).toBe(200);
    expect(res.body.route).toBe('product_agent');
    const rows: { state: AgentState }[] = await app.dataSource.query(
      'SELECT state::jsonb AS state FROM checkpoints WHERE conversation_key = $1 ORDER BY version DESC LIMIT 1',
      [`${tenant}:${sessionId}`],
    );
    const state = rows[0].state;
    if (!vectorAvailable) {
      expect(state.context?.rag).toMatchObject({ status: 'executed', search_mode: 'full_text' });
      return;
    }
    const [embedded]: { chunks: number; embedded: number }[] = await app.dataSource.query(
      `SELECT count(c.id)::int AS chunks, count(e.chunk_id)::int AS embedded
         FROM rag_chunks c LEFT JOIN rag_chunk_embeddings e ON e.chunk_id = c.id
        WHERE c.namespace = $1`,
      [knowledge.namespace],
    );
    expect(embedded.chunks).toBeGreaterThan(0);
    expect(embedded.embedded).toBe(embedded.chunks);
    expect(state.context?.rag).toMatchObject({
      status: 'executed',
      namespace: knowledge.namespace,
      search_mode: 'vector',
    });
    expect(state.rag_results?.map((d) => d.source)).toContain('roaming.md');
    // The question was embedded once during the turn.
    expect(fake.requestsFor('embedding').some((r) => JSON.stringify(r.body.input).includes('roaming'))).toBe(
      true,
    );
  });
});
