import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentState } from '@agent/contracts';
import {
  FakeChatRequest,
  FakeLlmServer,
  FakeReply,
  GUARDRAILS_ALLOW,
  lastUserMessage,
} from '../support/fake-llm';
import { freePort } from '../support/reference-mcp';
import { KnowledgeConfig, productKnowledgeConfig } from '../support/knowledge-config';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';

/**
 * The product agent with RAG: the shipped knowledge base is ingested at start-up into the agent's namespace,
 * the retrieved passages reach the agent's prompt, and a store failure becomes the technical error object
 * in the agent context while the turn still answers.
 */
function routerReply(request: FakeChatRequest): FakeReply {
  let message = lastUserMessage(request);
  try {
    const parsed = (JSON.parse(message) as { message?: unknown }).message;
    if (typeof parsed === 'string') message = parsed;
  } catch {
    // not the router's JSON payload
  }
  const intent = /fatura/i.test(message) ? 'billing_invoice_explanation' : 'product_services_information';
  return { json: { intent, confidence: 0.95, reason: 'scripted' } };
}

describe('product agent with RAG', () => {
  let fake: FakeLlmServer;
  let app: TestApp;
  let knowledge: KnowledgeConfig;
  const tenant = 'acme';

  beforeAll(async () => {
    knowledge = productKnowledgeConfig('product');
    const closed = `http://127.0.0.1:${await freePort()}/mcp`;
    fake = await FakeLlmServer.start();
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        CONFIG_DIR: knowledge.configDir,
        MCP_SERVER_TELECOM_URL: closed,
        MCP_SERVER_RETAIL_URL: closed,
      },
    });
  }, 240000);

  afterAll(async () => {
    await knowledge?.remove(app?.dataSource);
    await app?.close();
    await fake?.stop();
  });

  beforeEach(() => {
    fake.reset();
    fake.script(GUARDRAILS_ALLOW);
    fake.script({ model: 'router', reply: routerReply });
    fake.script({
      model: 'agent',
      reply: { content: 'O plano Controle não inclui roaming; contrate o Pacote Viagem.' },
    });
  });

  const send = (sessionId: string, text: string) =>
    app.post<Record<string, unknown>>('/v1/channels/web/messages', {
      tenant_id: tenant,
      agent_id: 'telecom_contas',
      session_id: sessionId,
      text,
    });

  const latestState = async (sessionId: string): Promise<AgentState> => {
    const rows: { state: AgentState }[] = await app.dataSource.query(
      'SELECT state::jsonb AS state FROM checkpoints WHERE conversation_key = $1 ORDER BY version DESC LIMIT 1',
      [`${tenant}:${sessionId}`],
    );
    return rows[0].state;
  };

  it('ingests config/knowledge at start-up into the namespace named by its directory', async () => {
    const rows: { source: string; language: string; chunks: number }[] = await app.dataSource.query(
      `SELECT d.source, d.language, count(c.id)::int AS chunks
         FROM rag_documents d JOIN rag_chunks c ON c.document_id = d.id
        WHERE d.namespace = $1 GROUP BY d.source, d.language ORDER BY d.source`,
      [knowledge.namespace],
    );
    expect(rows.map((r) => r.source)).toEqual(['faq.yaml', 'planos.md', 'roaming.md', 'servicos.md']);
    expect(rows.every((r) => r.language === 'portuguese' && r.chunks >= 1)).toBe(true);
  });

  it('puts the retrieved passages in the product agent prompt', async () => {
    const sessionId = uniqueId('rag');
    const res = await send(sessionId, 'O plano Controle tem roaming internacional para viagem?');
    expect(res.status).toBe(200);
    expect(res.body.route).toBe('product_agent');
    expect(res.body.answer).toBe('O plano Controle não inclui roaming; contrate o Pacote Viagem.');
    const system = String(fake.requestsFor('agent')[0].messages[0].content);
    expect(system).toContain('Trechos da base de conhecimento');
    expect(system).toContain('Pacote Viagem de 7 dias');

    const state = await latestState(sessionId);
    expect(state.context?.rag).toMatchObject({
      status: 'executed',
      namespace: knowledge.namespace,
      provider: 'postgres_fts',
    });
    expect(state.rag_results?.length).toBeGreaterThan(0);
    expect(state.rag_results?.map((d) => d.source)).toContain('roaming.md');
    const names: { name: string }[] = await app.dataSource.query(
      'SELECT name FROM session_events WHERE conversation_key = $1 ORDER BY id',
      [`${tenant}:${sessionId}`],
    );
    expect(names.map((n) => n.name)).toEqual(
      expect.arrayContaining(['IC.PRODUCT_RAG_CONTEXT_EVALUATED', 'IC.PRODUCT_RAG_CONTEXT_RETRIEVED']),
    );
  });

  it('records the technical error object when retrieval fails, and the turn still answers', async () => {
    // A real store failure: a document of the namespace with a text search configuration that does not exist.
    const [document]: { id: string }[] = await app.dataSource.query(
      `INSERT INTO rag_documents (namespace, source, title, content_hash, language)
       VALUES ($1, 'broken.md', 'broken', 'h', 'no_such_config') RETURNING id`,
      [knowledge.namespace],
    );
    await app.dataSource.query(
      `INSERT INTO rag_chunks (document_id, namespace, chunk_index, content, search_vector)
       VALUES ($1, $2, 0, 'roaming', to_tsvector('simple', 'roaming'))`,
      [document.id, knowledge.namespace],
    );
    try {
      const sessionId = uniqueId('rag-broken');
      const res = await send(sessionId, 'Quais serviços e plano eu tenho com roaming?');
      expect(res.status).toBe(200);
      expect(res.body.answer).toBe('O plano Controle não inclui roaming; contrate o Pacote Viagem.');
      const state = await latestState(sessionId);
      expect(state.context?.rag).toMatchObject({
        technical_error: true,
        technical_error_in_rag: true,
        status: 'error',
        namespace: knowledge.namespace,
        error: expect.stringContaining('no_such_config'),
      });
      expect(state.rag_results).toEqual([]);
      expect(String(fake.requestsFor('agent')[0].messages[0].content)).toContain('erro técnico');
    } finally {
      await app.dataSource.query('DELETE FROM rag_documents WHERE id = $1', [document.id]);
    }
  });
});

/**
 * The RAG preconditions are start-up errors: a configuration that cannot work stops the service with a message
 * naming what to fix, and never reaches a conversation as an empty retrieval.
 */
describe('RAG configuration that cannot work', () => {
  const startError = (env: Record<string, string>) =>
    startTestApp({ env }).then(
      async (app) => {
        await app.close();
        return null;
      },
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );

  it('stops the start-up on a missing knowledge directory, vector search without its model, or an unreadable file', async () => {
    const missing = join(tmpdir(), uniqueId('no-knowledge'));
    expect(await startError({ RAG_KNOWLEDGE_DIR: missing })).toBe(
      `the knowledge base directory ${missing} (RAG_KNOWLEDGE_DIR) does not exist, and product_agent (namespace product) retrieve from it: create it, point RAG_KNOWLEDGE_DIR at it, or set RAG_INGEST_ON_START=false where another process ingests`,
    );
    // The test profiles have no `embedding` profile.
    expect(await startError({ RAG_SEARCH_MODE: 'vector' })).toMatch(
      /^RAG_SEARCH_MODE=vector needs an embedding model: set LLM_EMBEDDING_MODEL/,
    );
    const broken = mkdtempSync(join(tmpdir(), 'rag-broken-'));
    mkdirSync(join(broken, 'product'));
    writeFileSync(join(broken, 'product', 'precos.json'), '{"plano": ');
    try {
      expect(await startError({ RAG_KNOWLEDGE_DIR: broken })).toMatch(
        new RegExp(
          `^the knowledge base ${broken} cannot be ingested: cannot parse ${join(broken, 'product', 'precos.json')}`,
        ),
      );
    } finally {
      rmSync(broken, { recursive: true, force: true });
    }
    // Served only, nothing is ingested here: the directory another process ingests from need not exist.
    expect(await startError({ RAG_KNOWLEDGE_DIR: missing, RAG_SERVE_ONLY: 'true' })).toBeNull();
  }, 240000);
});
