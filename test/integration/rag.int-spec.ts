import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DataSource } from 'typeorm';
import { parseEnvNamespace } from '@agent/config';
import { createDataSource, EmbeddedPostgres } from '@agent/database';
import { chunkText, RAG_ENTITIES, RagIngestError, RagService, RagStore, validateChunking } from '@agent/rag';
import { embeddedDataDir } from '../support/embedded-servers';
import { compiledEntry } from '../support/repo-root';

/**
 * RAG on a real database (DATABASE_URL, else embedded PGlite): chunking rules, ingestion of md/txt/json/yaml,
 * language-aware full-text retrieval, re-ingestion, the technical error object, and the rag:ingest CLI.
 */
const REPO_ROOT = resolve(__dirname, '..', '..');
const CLI = compiledEntry('apps/agent-runtime/src/cli/rag-ingest.ts');

function runCli(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const childEnv: Record<string, string> = {};
  for (const [key, value] of Object.entries({ ...process.env, ...env })) {
    if (value !== undefined) childEnv[key] = value;
  }
  return new Promise((resolveRun) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { cwd: REPO_ROOT, env: childEnv, timeout: 180000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolveRun({ code, stdout, stderr });
      },
    );
  });
}

function knowledgeDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rag-kb-'));
  writeFileSync(
    join(dir, 'cancelamento.md'),
    '# Política de cancelamento\n\nPedidos podem ser cancelados até o despacho. Depois do envio, o cliente pode ' +
      'solicitar a devolução em até sete dias após o recebimento.\n',
  );
  writeFileSync(join(dir, 'horarios.txt'), 'O atendimento funciona de segunda a sábado, das 8h às 20h.');
  writeFileSync(
    join(dir, 'frete.json'),
    JSON.stringify({
      title: 'Frete',
      regras: [{ regiao: 'Sudeste', prazo_dias: 3, valor: 'grátis acima de R$ 99' }],
    }),
  );
  writeFileSync(
    join(dir, 'garantia.yaml'),
    'title: Garantia\ntexto: Produtos com defeito têm garantia de 90 dias.\n',
  );
  writeFileSync(join(dir, 'ignored.pdf'), 'not indexed');
  mkdirSync(join(dir, 'sub'));
  writeFileSync(
    join(dir, 'sub', 'trocas.md'),
    '# Trocas\n\nTrocas de tamanho são gratuitas na primeira vez.',
  );
  return dir;
}

describe('RAG ingestion and retrieval', () => {
  let dataSource: DataSource;
  let embedded: EmbeddedPostgres | null = null;
  let dataDir: string | null = null;
  let rag: RagService;
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
      dataDir = embeddedDataDir('rag-int-');
      embedded = await EmbeddedPostgres.start(dataDir, 170000);
      dataSource = await createDataSource({
        url: embedded.url,
        poolSize: 1,
        embedded: true,
        entities: RAG_ENTITIES,
      });
    }
    await dataSource.runMigrations({ transaction: 'each' });
    rag = new RagService(new RagStore(dataSource), env, null);
  }, 180000);

  afterAll(async () => {
    await dataSource?.destroy();
    await embedded?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('ignores a retired variable a deployment may still set (RAG_GENERATION_PROFILE)', () => {
    expect(parseEnvNamespace('rag', { RAG_GENERATION_PROFILE: 'rag_generation', RAG_TOP_K: '3' })).toEqual({
      ...env,
      RAG_TOP_K: 3,
    });
  });

  describe('chunking', () => {
    it('refuses an overlap that is not smaller than the size', () => {
      expect(() => validateChunking({ chunkSize: 100, chunkOverlap: 100 })).toThrow(
        'chunk_overlap (100) must be smaller than chunk_size (100)',
      );
      expect(() => chunkText('abc', { chunkSize: 50, chunkOverlap: 80 })).toThrow(RagIngestError);
      expect(() => validateChunking({ chunkSize: 0, chunkOverlap: 0 })).toThrow(
        'chunk_size must be a positive integer',
      );
      expect(() => validateChunking({ chunkSize: 10, chunkOverlap: -1 })).toThrow('chunk_overlap must be');
    });

    it('cuts at word boundaries with the requested overlap', () => {
      const text = Array.from({ length: 60 }, (_, i) => `palavra${i}`).join(' ');
      const chunks = chunkText(text, { chunkSize: 80, chunkOverlap: 20 });
      expect(chunks.length).toBeGreaterThan(5);
      for (const chunk of chunks) {
        expect(chunk.length).toBeLessThanOrEqual(80);
        expect(chunk).toMatch(/^palavra\d+/);
        expect(chunk).toMatch(/palavra\d+$/);
      }
      // Consecutive chunks share text (the overlap), and together they cover every word.
      for (let i = 1; i < chunks.length; i++) {
        const firstWord = chunks[i].split(' ')[0];
        expect(chunks[i - 1]).toContain(firstWord);
      }
      expect(new Set(chunks.join(' ').split(' '))).toEqual(new Set(text.split(' ')));
    });
  });

  describe('ingestion', () => {
    it('reports a missing directory, a file path and an unknown language as ingestion errors', async () => {
      await expect(rag.ingestDirectory('/no/such/dir', { namespace: ns('x') })).rejects.toMatchObject({
        code: 'RAG_DIRECTORY_NOT_FOUND',
        message: 'directory not found: /no/such/dir',
      });
      const dir = knowledgeDir();
      await expect(
        rag.ingestDirectory(join(dir, 'horarios.txt'), { namespace: ns('x') }),
      ).rejects.toMatchObject({
        code: 'RAG_NOT_A_DIRECTORY',
      });
      await expect(
        rag.ingestDirectory(dir, { namespace: ns('x'), language: 'klingon' }),
      ).rejects.toMatchObject({
        code: 'RAG_INVALID_LANGUAGE',
      });
      await expect(
        rag.ingestDirectory(dir, { namespace: ns('x'), chunkSize: 200, chunkOverlap: 300 }),
      ).rejects.toMatchObject({ code: 'RAG_INVALID_CHUNKING' });
      rmSync(dir, { recursive: true, force: true });
    });

    it('refuses ingestion into a knowledge base served only, and writes nothing', async () => {
      const dir = knowledgeDir();
      const namespace = ns('served');
      const served = new RagService(new RagStore(dataSource), { ...env, RAG_SERVE_ONLY: true }, null);
      try {
        await expect(served.ingestDirectory(dir, { namespace, prune: true })).rejects.toMatchObject({
          code: 'RAG_SERVE_ONLY',
          message: expect.stringContaining('ingestion and publication are refused'),
        });
        const [{ count }] = await dataSource.query<{ count: string }[]>(
          'SELECT count(*) FROM rag_documents WHERE namespace = $1',
          [namespace],
        );
        expect(Number(count)).toBe(0);
        // Serving goes on: retrieval answers, empty here.
        await expect(served.retrieveContext('frete', namespace)).resolves.toMatchObject({ status: 'empty' });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('ingests md/txt/json/yaml, retrieves top-k with Portuguese stemming, and skips unchanged files', async () => {
      const dir = knowledgeDir();
      const namespace = ns('kb');
      const report = await rag.ingestDirectory(dir, { namespace, chunkSize: 300, chunkOverlap: 50 });
      expect(report).toMatchObject({
        namespace,
        documents: 5,
        updated: 5,
        unchanged: 0,
        language: 'portuguese',
      });

      // "cancelamento" and "cancelados" share the Portuguese stem, as do "devoluções" and "devolução".
      const result = await rag.retrieve('Como funciona o cancelamento e as devoluções?', namespace, 3);
      expect(result.documents[0]).toMatchObject({
        source: 'cancelamento.md',
        title: 'Política de cancelamento',
      });
      expect(result.documents.length).toBeLessThanOrEqual(3);
      expect((await rag.retrieve('garantia de produto com defeito', namespace)).documents[0].source).toBe(
        'garantia.yaml',
      );
      expect((await rag.retrieve('prazo do frete no Sudeste', namespace)).documents[0].source).toBe(
        'frete.json',
      );
      expect((await rag.retrieve('troca de tamanho', namespace)).documents[0].source).toBe('sub/trocas.md');
      expect((await rag.retrieve('astronomia quântica', namespace)).documents).toEqual([]);

      const again = await rag.ingestDirectory(dir, { namespace, chunkSize: 300, chunkOverlap: 50 });
      expect(again).toMatchObject({ updated: 0, unchanged: 5 });
      writeFileSync(join(dir, 'horarios.txt'), 'O atendimento funciona todos os dias, das 7h às 22h.');
      rmSync(join(dir, 'frete.json'));
      const changed = await rag.ingestDirectory(dir, {
        namespace,
        chunkSize: 300,
        chunkOverlap: 50,
        prune: true,
      });
      expect(changed).toMatchObject({ documents: 4, updated: 1, unchanged: 3, pruned: 1 });
      expect((await rag.retrieve('frete', namespace)).documents).toEqual([]);
      expect((await rag.retrieve('atendimento todos os dias', namespace)).documents[0].content).toContain(
        '7h às 22h',
      );
      rmSync(dir, { recursive: true, force: true });
    });

    it('parses each document with its own text search configuration', async () => {
      const namespace = ns('lang');
      const pt = mkdtempSync(join(tmpdir(), 'rag-pt-'));
      const en = mkdtempSync(join(tmpdir(), 'rag-en-'));
      writeFileSync(join(pt, 'reembolso.md'), '# Reembolso\n\nReembolsos são creditados em até dez dias.');
      writeFileSync(join(en, 'refund.md'), '# Refund\n\nRefunds are credited within ten days.');
      await rag.ingestDirectory(pt, { namespace, language: 'portuguese' });
      await rag.ingestDirectory(en, { namespace, language: 'english' });
      // English stemming matches "refunded" to "Refunds"; Portuguese stemming matches "reembolso" to "Reembolsos".
      expect((await rag.retrieve('refunded', namespace)).documents.map((d) => d.source)).toEqual([
        'refund.md',
      ]);
      expect((await rag.retrieve('reembolso', namespace)).documents.map((d) => d.source)).toEqual([
        'reembolso.md',
      ]);
      rmSync(pt, { recursive: true, force: true });
      rmSync(en, { recursive: true, force: true });
    });
  });

  describe('retrieval context', () => {
    it('returns the technical error object when the store fails, and an empty result is not an error', async () => {
      const namespace = ns('broken');
      const empty = await rag.retrieveContext('qualquer coisa', namespace);
      expect(empty).toMatchObject({ enabled: true, attempted: true, status: 'empty', document_count: 0 });

      // A real store failure: a document whose text search configuration does not exist.
      const [document]: { id: string }[] = await dataSource.query(
        `INSERT INTO rag_documents (namespace, source, title, content_hash, language)
         VALUES ($1, 'x.md', 'x', 'h', 'no_such_config') RETURNING id`,
        [namespace],
      );
      await dataSource.query(
        `INSERT INTO rag_chunks (document_id, namespace, chunk_index, content, search_vector)
         VALUES ($1, $2, 0, 'qualquer coisa', to_tsvector('simple', 'qualquer coisa'))`,
        [document.id, namespace],
      );
      const failed = await rag.retrieveContext('qualquer coisa', namespace);
      expect(failed).toMatchObject({
        technical_error: true,
        technical_error_in_rag: true,
        status: 'error',
        enabled: false,
        attempted: true,
        failed: true,
        namespace,
        query: 'qualquer coisa',
        error: expect.stringContaining('no_such_config'),
      });
      await expect(rag.retrieve('qualquer coisa', namespace)).rejects.toThrow();
      await dataSource.query('DELETE FROM rag_documents WHERE namespace = $1', [namespace]);
    });

    it('reports a disabled RAG', async () => {
      const disabled = new RagService(new RagStore(dataSource), { ...env, RAG_ENABLED: false }, null);
      expect(await disabled.retrieveContext('plano', 'product')).toMatchObject({
        status: 'disabled',
        attempted: false,
      });
    });
  });

  describe('npm run rag:ingest', () => {
    it('fails fast with clear messages on bad chunking, a missing directory, missing arguments or serving only', async () => {
      const dir = knowledgeDir();
      const overlap = await runCli(
        [dir, '--namespace', 'docs', '--chunk-size', '100', '--chunk-overlap', '100'],
        {},
      );
      expect(overlap.code).toBe(1);
      expect(overlap.stderr).toContain('chunk_overlap (100) must be smaller than chunk_size (100)');
      const missing = await runCli(['/no/such/dir', '--namespace', 'docs'], {});
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain('directory not found: /no/such/dir');
      const usage = await runCli([dir], {});
      expect(usage.code).toBe(2);
      expect(usage.stderr).toContain('--namespace is required');
      const served = await runCli([dir, '--namespace', 'docs'], { RAG_SERVE_ONLY: 'true' });
      expect(served.code).toBe(1);
      expect(served.stderr).toMatch(
        /^rag:ingest: the knowledge base is configured for serving only \(RAG_SERVE_ONLY=true\)/,
      );
      rmSync(dir, { recursive: true, force: true });
    }, 120000);

    it('ingests a directory that retrieval then finds', async () => {
      const dir = knowledgeDir();
      const namespace = ns('cli');
      if (process.env.DATABASE_URL) {
        const run = await runCli(
          [dir, '--namespace', namespace, '--chunk-size', '400', '--chunk-overlap', '40'],
          {},
        );
        expect(run.stderr).toBe('');
        expect(run.code).toBe(0);
        expect(JSON.parse(run.stdout)).toMatchObject({
          namespace,
          documents: 5,
          updated: 5,
          chunk_size: 400,
        });
        expect((await rag.retrieve('cancelamento do pedido', namespace)).documents[0].source).toBe(
          'cancelamento.md',
        );
      } else {
        // Embedded mode: the CLI opens its own PGlite directory; read it back once the CLI has exited.
        const cliData = embeddedDataDir('rag-cli-');
        const run = await runCli([dir, '--namespace', namespace], {
          DATABASE_URL: undefined,
          DATA_DIR: cliData,
        });
        expect(run.code).toBe(0);
        expect(JSON.parse(run.stdout)).toMatchObject({ namespace, documents: 5 });
        const db = await EmbeddedPostgres.start(cliData, 170000);
        const ds = await createDataSource({
          url: db.url,
          poolSize: 1,
          embedded: true,
          entities: RAG_ENTITIES,
        });
        try {
          const reader = new RagService(new RagStore(ds), env, null);
          expect((await reader.retrieve('cancelamento do pedido', namespace)).documents[0].source).toBe(
            'cancelamento.md',
          );
        } finally {
          await ds.destroy();
          await db.stop();
          rmSync(cliData, { recursive: true, force: true });
        }
      }
      rmSync(dir, { recursive: true, force: true });
    }, 240000);
  });
});
