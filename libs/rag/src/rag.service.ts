import { Logger } from '@nestjs/common';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { RagEnv } from '@agent/config';
import type { RagOutcome, RagRetrieval, RetrievedChunk, SearchMode } from '@agent/contracts';
import type { LlmService } from '@agent/llm';
import { chunkText, validateChunking } from './chunking';
import { loadDirectory } from './loader';
import { RagConfigError, RagIngestError, SERVE_ONLY_REFUSAL } from './rag.errors';
import { RagStore } from './rag.store';

export interface IngestOptions {
  namespace: string;
  chunkSize?: number;
  chunkOverlap?: number;
  /** Postgres text search configuration (portuguese, english, simple, ...). */
  language?: string;
  /** Delete documents of the namespace whose file is gone (default false). */
  prune?: boolean;
}

export interface IngestReport {
  namespace: string;
  directory: string;
  language: string;
  chunk_size: number;
  chunk_overlap: number;
  documents: number;
  updated: number;
  unchanged: number;
  chunks: number;
  pruned: number;
  /** Chunks embedded by this run (vector search); 0 when it is unavailable or embedding failed. */
  embedded: number;
  /** `vector` when pgvector and the `embedding` profile are available (see `embedded` for what was stored). */
  search_mode: SearchMode;
}

export interface RetrievalResult {
  namespace: string;
  query: string;
  documents: RetrievedChunk[];
  latency_ms: number;
  search_mode: SearchMode;
  /** Why a vector-capable retrieval fell back to full-text (the query could not be embedded). */
  vector_error?: string;
}

/**
 * The agent-facing context of one retrieval: its outcome (what the state's `context.rag` keeps) and, when it
 * ran, the passages themselves (the state's `rag_results`).
 */
export type RagContext = Exclude<RagOutcome, RagRetrieval> | (RagRetrieval & { documents: RetrievedChunk[] });

/** A knowledge base served only (RAG_SERVE_ONLY) is never written: ingestion and publication are refused. */
export function assertIngestionAllowed(env: Pick<RagEnv, 'RAG_SERVE_ONLY'>): void {
  if (env.RAG_SERVE_ONLY) throw new RagIngestError('RAG_SERVE_ONLY', SERVE_ONLY_REFUSAL);
}

export const RAG_PROVIDER = 'postgres_fts';
/** The LLM profile whose model embeds chunks and queries; no `default` fallback (a chat model cannot embed). */
export const EMBEDDING_PROFILE = 'embedding';
const EMBED_BATCH = 64;

/**
 * Facade of RagModule: ingestion into rag_documents/rag_chunks and top-k retrieval per namespace.
 * Built without Nest too (the rag:ingest CLI), hence plain constructor arguments.
 */
export class RagService {
  private readonly logger = new Logger(RagService.name);

  constructor(
    private readonly store: RagStore,
    readonly env: RagEnv,
    private readonly llm: LlmService | null,
  ) {}

  /**
   * Refuses what cannot work before anything is served: vector search (RAG_SEARCH_MODE=vector) needs an
   * embedding model and pgvector, or every retrieval would quietly be a full-text one.
   */
  async checkPreconditions(): Promise<void> {
    if (!this.env.RAG_ENABLED || this.env.RAG_SEARCH_MODE !== 'vector') return;
    if (!this.llm?.embeddingProfile(EMBEDDING_PROFILE)?.model) {
      throw new RagConfigError(
        'RAG_MISCONFIGURED',
        `RAG_SEARCH_MODE=vector needs an embedding model: set LLM_EMBEDDING_MODEL (or give the "${EMBEDDING_PROFILE}" profile of llm_profiles.yaml a model and an endpoint)`,
      );
    }
    if (!(await this.store.vectorAvailable())) {
      throw new RagConfigError(
        'RAG_MISCONFIGURED',
        'RAG_SEARCH_MODE=vector needs pgvector in the database (CREATE EXTENSION vector, then restart; the embedded default has it)',
      );
    }
  }

  /** Loads md/txt/json/yaml files under `directory` into `namespace`; unchanged documents are skipped. */
  async ingestDirectory(directory: string, options: IngestOptions): Promise<IngestReport> {
    assertIngestionAllowed(this.env);
    const chunkSize = options.chunkSize ?? this.env.RAG_CHUNK_SIZE;
    const chunkOverlap = options.chunkOverlap ?? this.env.RAG_CHUNK_OVERLAP;
    const language = options.language ?? this.env.RAG_LANGUAGE;
    validateChunking({ chunkSize, chunkOverlap });
    if (!/^[A-Za-z][A-Za-z0-9_.-]*$/.test(options.namespace)) {
      throw new RagIngestError(
        'RAG_INVALID_NAMESPACE',
        `namespace must be an identifier (letters, digits, _ . -), got "${options.namespace}"`,
      );
    }
    const documents = loadDirectory(directory);
    if (!(await this.store.languageExists(language))) {
      throw new RagIngestError(
        'RAG_INVALID_LANGUAGE',
        `unknown Postgres text search configuration "${language}"`,
      );
    }
    const report: IngestReport = {
      namespace: options.namespace,
      directory,
      language,
      chunk_size: chunkSize,
      chunk_overlap: chunkOverlap,
      documents: documents.length,
      updated: 0,
      unchanged: 0,
      chunks: 0,
      pruned: 0,
      embedded: 0,
      search_mode: 'full_text',
    };
    for (const document of documents) {
      const chunks = chunkText(document.text, { chunkSize, chunkOverlap });
      const written = await this.store.upsertDocument({
        namespace: options.namespace,
        source: document.source,
        title: document.title,
        // The settings are part of the identity: re-chunking with other settings rewrites the chunks.
        contentHash: `${document.contentHash}:${chunkSize}:${chunkOverlap}`,
        language,
        metadata: { format: document.format, chunk_size: chunkSize, chunk_overlap: chunkOverlap },
        chunks: chunks.map((content, index) => ({ index, content, metadata: { chars: content.length } })),
      });
      if (written) report.updated++;
      else report.unchanged++;
      report.chunks += chunks.length;
    }
    if (options.prune) {
      report.pruned = await this.store.pruneNamespace(
        options.namespace,
        documents.map((d) => d.source),
      );
    }
    const model = await this.vectorModel();
    if (model) {
      report.search_mode = 'vector';
      report.embedded = await this.embedMissing(options.namespace, model);
    }
    return report;
  }

  /**
   * The embedding model (with its requested size) when vector search is possible and wanted: pgvector installed
   * (the embeddings table exists), an `embedding` profile with an endpoint, and RAG_SEARCH_MODE not full_text.
   */
  async vectorModel(): Promise<string | null> {
    if (this.env.RAG_SEARCH_MODE === 'full_text') return null;
    const profile = this.llm?.embeddingProfile(EMBEDDING_PROFILE);
    if (!profile?.model || !(await this.store.vectorAvailable())) return null;
    // The requested size is part of the identity: vectors of another size are re-embedded, never compared.
    const { dimensions } = profile.config;
    return dimensions ? `${profile.model}:${dimensions}` : profile.model;
  }

  /**
   * Embeds the chunks of a namespace that have no vector of `model` yet (so a later run also heals an earlier
   * failure). A failure is logged and leaves those chunks to full-text search: ingestion never fails on it.
   */
  private async embedMissing(namespace: string, model: string): Promise<number> {
    if (!this.llm) return 0;
    let embedded = 0;
    try {
      for (;;) {
        const chunks = await this.store.chunksToEmbed(namespace, model, EMBED_BATCH);
        if (chunks.length === 0) break;
        const { vectors } = await this.llm.embed(
          EMBEDDING_PROFILE,
          chunks.map((c) => `${c.title}\n${c.content}`),
        );
        await this.store.storeEmbeddings(
          model,
          chunks.map((c, i) => ({ chunkId: c.chunk_id, vector: vectors[i] })),
        );
        embedded += chunks.length;
      }
    } catch (error) {
      this.logger.warn(
        `embedding namespace ${namespace} failed after ${embedded} chunks, the rest stays full-text only: ${errorMessage(error)}`,
      );
    }
    return embedded;
  }

  /**
   * Top-k chunks of a namespace; throws on a store failure (retrieveContext wraps it for agents) and when `signal`
   * gives it up (the query's embedding then cancelled, or never sent).
   */
  async retrieve(
    query: string,
    namespace: string,
    topK = this.env.RAG_TOP_K,
    signal?: AbortSignal,
  ): Promise<RetrievalResult> {
    const started = performance.now();
    const latency = () => Math.round((performance.now() - started) * 100) / 100;
    if (query.trim() === '') {
      return { namespace, query, documents: [], latency_ms: 0, search_mode: 'full_text' };
    }
    const model = await this.vectorModel();
    let vectorError: string | undefined;
    // Vector search only where every chunk of the namespace has a vector of the model; otherwise full-text.
    if (this.llm && model && (await this.store.fullyEmbedded(namespace, model))) {
      try {
        // A retrieval given up while it read the store sends nothing: an aborted call would still be billed.
        signal?.throwIfAborted();
        const { vectors } = await this.llm.embed(EMBEDDING_PROFILE, [query], signal);
        const documents = await this.store.vectorSearch(namespace, vectors[0], model, topK);
        return { namespace, query, documents, latency_ms: latency(), search_mode: 'vector' };
      } catch (error) {
        if (signal?.aborted) throw error;
        // The embedding call or the vector query failed: full-text still answers; a store that is really down
        // fails the full-text search below too, which then yields the technical error object.
        vectorError = errorMessage(error);
        this.logger.warn(`vector retrieval in namespace ${namespace} fell back to full-text: ${vectorError}`);
      }
    }
    signal?.throwIfAborted();
    const documents = await this.store.search(namespace, query, topK);
    return {
      namespace,
      query,
      documents,
      latency_ms: latency(),
      search_mode: 'full_text',
      ...(vectorError ? { vector_error: vectorError } : {}),
    };
  }

  /**
   * What an agent puts in its context: the retrieval, or on any failure the technical error object
   * (docs/architecture.md#reliability), so the turn goes on and the agent can tell a failure from an empty search.
   * `signal` gives the retrieval up (a discarded speculative draft): it rejects instead of answering an error object.
   */
  async retrieveContext(query: string, namespace: string, signal?: AbortSignal): Promise<RagContext> {
    if (!this.env.RAG_ENABLED) {
      return {
        enabled: false,
        attempted: false,
        status: 'disabled',
        reason: 'rag_disabled',
        provider: RAG_PROVIDER,
      };
    }
    try {
      const result = await this.retrieve(query, namespace, this.env.RAG_TOP_K, signal);
      return {
        enabled: true,
        attempted: true,
        status: result.documents.length > 0 ? 'executed' : 'empty',
        provider: RAG_PROVIDER,
        search_mode: result.search_mode,
        ...(result.vector_error ? { vector_error: result.vector_error } : {}),
        namespace,
        query,
        latency_ms: result.latency_ms,
        document_count: result.documents.length,
        top_document_ids: result.documents.map((d) => d.document_id),
        top_scores: result.documents.map((d) => d.score),
        documents: result.documents,
      };
    } catch (error) {
      if (signal?.aborted) throw error;
      const message = errorMessage(error);
      this.logger.warn(`retrieval in namespace ${namespace} failed: ${message}`);
      return {
        enabled: false,
        attempted: true,
        failed: true,
        technical_error: true,
        technical_error_in_rag: true,
        status: 'error',
        error: message,
        provider: RAG_PROVIDER,
        namespace,
        query,
      };
    }
  }

  /**
   * Ingests CONFIG_DIR/knowledge (or RAG_KNOWLEDGE_DIR): each sub-directory is a namespace
   * (knowledge/product → namespace "product"). Unchanged files cost one hash comparison.
   */
  async ingestKnowledgeBase(baseDir: string): Promise<IngestReport[]> {
    if (!existsSync(baseDir)) return [];
    const reports: IngestReport[] = [];
    for (const entry of readdirSync(baseDir, { withFileTypes: true })) {
      if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
      reports.push(
        await this.ingestDirectory(join(baseDir, entry.name), { namespace: entry.name, prune: true }),
      );
    }
    return reports;
  }
}

/** Passages as the agent prompt shows them: numbered, with their source. */
export function formatPassages(documents: readonly RetrievedChunk[]): string {
  if (documents.length === 0) return '(no passage found)';
  return documents
    .map((d, i) => `[${i + 1}] ${d.title} (${d.source}#${d.chunk_index})\n${d.content}`)
    .join('\n\n');
}

/** By shape: a driver or socket error may come from another realm, where instanceof Error fails. */
function errorMessage(error: unknown): string {
  const raw = (error as { message?: unknown } | null)?.message;
  return typeof raw === 'string' ? raw : String(error);
}
