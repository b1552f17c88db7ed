import { Test } from '@nestjs/testing';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DataSource } from 'typeorm';
import { AppConfigModule, parseEnvNamespace } from '@agent/config';
import { createDataSource, EmbeddedPostgres } from '@agent/database';
import { LlmModule, LlmService } from '@agent/llm';
import { ObservabilityModule } from '@agent/observability';
import { RAG_ENTITIES, RagService, RagStore } from '@agent/rag';
import { embeddedDataDir } from '../support/embedded-servers';
import { FakeLlmServer } from '../support/fake-llm';

/**
 * RAG vector search (pgvector) on a real database: the embedded default loads PGlite's pgvector, so ingestion
 * stores fake embeddings and retrieval ranks by cosine similarity. On a DATABASE_URL without pgvector the
 * vector assertions are skipped and retrieval must stay full-text.
 */
const REPO_ROOT = resolve(__dirname, '..', '..');

async function buildLlm(profilesPath: string, baseUrl: string) {
  const saved = { ...process.env };
  Object.assign(process.env, {
    CONFIG_DIR: join(REPO_ROOT, 'config'),
    LLM_PROFILES_PATH: profilesPath,
    LLM_BASE_URL: baseUrl,
    LLM_API_KEY: 'k',
  });
  try {
    const moduleRef = await Test.createTestingModule({
      imports: [AppConfigModule, ObservabilityModule, LlmModule],
    }).compile();
    await moduleRef.init();
    const calls: Record<string, unknown>[] = [];
    moduleRef.get(EventEmitter2).on('llm.call', (payload: Record<string, unknown>) => calls.push(payload));
    return { llm: moduleRef.get(LlmService), calls, close: () => moduleRef.close() };
  } finally {
    process.env = saved;
  }
}

function knowledgeDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rag-vec-'));
  writeFileSync(
    join(dir, 'planos.md'),
    '# Planos\n\nO plano Controle inclui franquia de internet móvel de 20 GB e ligações ilimitadas.',
  );
  writeFileSync(
    join(dir, 'roaming.md'),
    '# Roaming\n\nO roaming internacional funciona na Europa e nas Américas com pacote diário.',
  );
  writeFileSync(
    join(dir, 'fatura.md'),
    '# Fatura\n\nA fatura vence todo dia dez e pode ser paga por boleto ou pix.',
  );
  return dir;
}

describe('RAG vector search (pgvector)', () => {
  let dataSource: DataSource;
  let embedded: EmbeddedPostgres | null = null;
  let dataDir: string | null = null;
  let fake: FakeLlmServer;
  let profilesDir: string;
  let withProfile: Awaited<ReturnType<typeof buildLlm>>;
  let withoutProfile: Awaited<ReturnType<typeof buildLlm>>;
  let vectorAvailable = false;
  const env = parseEnvNamespace('rag', {});
  const ns = (name: string) => `${name}_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

  beforeAll(async () => {
    if (process.env.DATABASE_URL) {
      dataSource = await createDataSource({
        url: process.env.DATABASE_URL,
        poolSize: 2,
        embedded: false,
        entities: RAG_ENTITIES,
      });
    } else {
      dataDir = embeddedDataDir('rag-vec-int-');
      embedded = await EmbeddedPostgres.start(dataDir, 170000);
      dataSource = await createDataSource({
        url: embedded.url,
        poolSize: 1,
        embedded: true,
        entities: RAG_ENTITIES,
      });
    }
    await dataSource.runMigrations({ transaction: 'each' });
    vectorAvailable = await new RagStore(dataSource).vectorAvailable();
    if (!vectorAvailable) {
      console.warn('pgvector is not installed in this database: vector search assertions are skipped');
    }
    fake = await FakeLlmServer.start();
    profilesDir = mkdtempSync(join(tmpdir(), 'rag-vec-profiles-'));
    const common = 'provider: openai_compatible, temperature: 0, max_tokens: 100, timeout_seconds: 2';
    writeFileSync(
      join(profilesDir, 'with.yaml'),
      `profiles:\n  default: { model: default, ${common} }\n  embedding: { model: embedding, dimensions: 256, ${common} }\n`,
    );
    writeFileSync(join(profilesDir, 'without.yaml'), `profiles:\n  default: { model: default, ${common} }\n`);
    withProfile = await buildLlm(join(profilesDir, 'with.yaml'), fake.baseUrl);
    withoutProfile = await buildLlm(join(profilesDir, 'without.yaml'), fake.baseUrl);
  }, 180000);

  afterAll(async () => {
    await withProfile?.close();
    await withoutProfile?.close();
    await fake?.stop();
    await dataSource?.destroy();
    await embedded?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    if (profilesDir) rmSync(profilesDir, { recursive: true, force: true });
  });

  beforeEach(() => {
    fake.reset();
    withProfile.calls.length = 0;
  });

  it('the embedded default loads pgvector and the migration creates the embeddings table', () => {
    if (process.env.DATABASE_URL) return;
    expect(vectorAvailable).toBe(true);
  });

  it('ingests with embeddings and ranks by cosine similarity', async () => {
    const rag = new RagService(new RagStore(dataSource), env, withProfile.llm);
    const dir = knowledgeDir();
    const namespace = ns('vec');
    const report = await rag.ingestDirectory(dir, { namespace });
    if (!vectorAvailable) {
      expect(report).toMatchObject({ documents: 3, search_mode: 'full_text', embedded: 0 });
      expect((await rag.retrieve('roaming internacional', namespace)).search_mode).toBe('full_text');
      expect(fake.requestsFor('embedding')).toEqual([]);
      rmSync(dir, { recursive: true, force: true });
      return;
    }
    expect(report).toMatchObject({ documents: 3, chunks: 3, search_mode: 'vector', embedded: 3 });
    const [ingestCall] = fake.requestsFor('embedding');
    expect(ingestCall.body).toMatchObject({ dimensions: 256, encoding_format: 'float' });
    expect(ingestCall.body.input).toHaveLength(3);
    expect(withProfile.calls).toEqual([
      expect.objectContaining({ profile: 'embedding', model: 'embedding', outcome: 'ok' }),
    ]);

    const roaming = await rag.retrieve('roaming internacional na Europa', namespace, 3);
    expect(roaming.search_mode).toBe('vector');
    expect(roaming.documents.map((d) => d.source)).toEqual([
      'roaming.md',
      expect.any(String),
      expect.any(String),
    ]);
    const scores = roaming.documents.map((d) => d.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(scores[0]).toBeGreaterThan(0.3);
    expect(scores[0]).toBeLessThanOrEqual(1);
    expect((await rag.retrieve('fatura paga por boleto ou pix', namespace, 1)).documents[0].source).toBe(
      'fatura.md',
    );
    expect((await rag.retrieve('plano controle com internet', namespace, 1)).documents[0].source).toBe(
      'planos.md',
    );
    // Each query is embedded once, with the same profile.
    expect(fake.requestsFor('embedding')).toHaveLength(4);

    const context = await rag.retrieveContext('roaming internacional', namespace);
    expect(context).toMatchObject({ status: 'executed', search_mode: 'vector', namespace });

    // Unchanged files are not embedded again.
    fake.reset();
    expect(await rag.ingestDirectory(dir, { namespace })).toMatchObject({ unchanged: 3, embedded: 0 });
    expect(fake.requestsFor('embedding')).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps full-text when embedding fails, and a later ingestion embeds what is missing', async () => {
    if (!vectorAvailable) return;
    const rag = new RagService(new RagStore(dataSource), env, withProfile.llm);
    const dir = knowledgeDir();
    const namespace = ns('vecfail');
    fake.script({ model: 'embedding', reply: { status: 503 }, times: 1 });
    const report = await rag.ingestDirectory(dir, { namespace });
    expect(report).toMatchObject({ documents: 3, updated: 3, embedded: 0 });
    expect(withProfile.calls).toEqual([
      expect.objectContaining({ profile: 'embedding', outcome: 'http_error' }),
    ]);
    // No vector of this namespace yet: retrieval is full-text and does not even embed the query.
    fake.reset();
    const fullText = await rag.retrieve('roaming internacional', namespace);
    expect(fullText.search_mode).toBe('full_text');
    expect(fullText.documents[0].source).toBe('roaming.md');
    expect(fake.requestsFor('embedding')).toEqual([]);

    expect(await rag.ingestDirectory(dir, { namespace })).toMatchObject({ unchanged: 3, embedded: 3 });
    expect((await rag.retrieve('roaming internacional', namespace)).search_mode).toBe('vector');

    // A document added without the profile (as the rag:ingest CLI does) has no vector: full-text again, so it
    // is not hidden, until an ingestion with the profile embeds it.
    const withoutLlm = new RagService(new RagStore(dataSource), env, null);
    const extra = mkdtempSync(join(tmpdir(), 'rag-vec-extra-'));
    writeFileSync(join(extra, 'chip.md'), '# Chip\n\nO chip eSIM é ativado pelo aplicativo.');
    await withoutLlm.ingestDirectory(extra, { namespace });
    const partial = await rag.retrieve('chip eSIM', namespace);
    expect(partial.search_mode).toBe('full_text');
    expect(partial.documents[0].source).toBe('chip.md');
    expect(await rag.ingestDirectory(extra, { namespace })).toMatchObject({ unchanged: 1, embedded: 1 });
    const healed = await rag.retrieve('chip eSIM', namespace);
    expect(healed.search_mode).toBe('vector');
    expect(healed.documents[0].source).toBe('chip.md');
    rmSync(extra, { recursive: true, force: true });

    // The query embedding failing falls back to full-text, and the context says why.
    fake.script({ model: 'embedding', reply: { status: 500 }, times: 1 });
    const context = await rag.retrieveContext('roaming internacional', namespace);
    expect(context).toMatchObject({
      status: 'executed',
      search_mode: 'full_text',
      vector_error: expect.stringContaining('500'),
    });
    rmSync(dir, { recursive: true, force: true });
  });

  it('does not embed the query of a retrieval already given up: no request, no cost on record', async () => {
    if (!vectorAvailable) return;
    const rag = new RagService(new RagStore(dataSource), env, withProfile.llm);
    const dir = knowledgeDir();
    const namespace = ns('vecgiven');
    await rag.ingestDirectory(dir, { namespace });
    fake.reset();
    withProfile.calls.length = 0;
    // A discarded speculative draft: the signal fired while its retrieval was reading the store.
    const controller = new AbortController();
    controller.abort();
    await expect(
      rag.retrieveContext('roaming internacional', namespace, controller.signal),
    ).rejects.toThrow();
    expect(fake.requestsFor('embedding')).toEqual([]);
    expect(withProfile.calls).toEqual([]);
    await dataSource.query('DELETE FROM rag_documents WHERE namespace = $1', [namespace]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('stays full-text without an `embedding` profile', async () => {
    const rag = new RagService(new RagStore(dataSource), env, withoutProfile.llm);
    const dir = knowledgeDir();
    const namespace = ns('fts');
    expect(await rag.ingestDirectory(dir, { namespace })).toMatchObject({
      documents: 3,
      search_mode: 'full_text',
      embedded: 0,
    });
    const result = await rag.retrieve('roaming internacional', namespace);
    expect(result).toMatchObject({ search_mode: 'full_text' });
    expect(result.documents[0].source).toBe('roaming.md');
    expect(await rag.retrieveContext('roaming internacional', namespace)).toMatchObject({
      search_mode: 'full_text',
      provider: 'postgres_fts',
    });
    expect(fake.requests).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });
});
