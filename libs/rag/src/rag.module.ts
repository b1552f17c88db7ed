import { Inject, Injectable, Logger, Module, OnApplicationBootstrap } from '@nestjs/common';
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ConfigFilesService, parseEnvNamespace, RagEnv } from '@agent/config';
import { LlmService } from '@agent/llm';
import { RAG_ENTITIES } from './rag.entities';
import { RagConfigError, RagIngestError } from './rag.errors';
import { IngestReport, RagService } from './rag.service';
import { RagStore } from './rag.store';

export const RAG_ENV = Symbol('RAG_ENV');

/**
 * At start-up: the RAG preconditions, then the knowledge base ingested (RAG_INGEST_ON_START). A configuration that
 * cannot work (vector search without its model, a knowledge directory that is missing, a document that cannot be
 * read, bad chunking) stops the start-up here, so a conversation never mistakes it for an empty retrieval. Only a
 * failure of the database while writing is logged and left for the next start.
 */
@Injectable()
export class RagKnowledgeLoader implements OnApplicationBootstrap {
  private readonly logger = new Logger('RagKnowledgeLoader');

  constructor(
    private readonly rag: RagService,
    private readonly files: ConfigFilesService,
    @Inject(RAG_ENV) private readonly env: RagEnv,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!this.env.RAG_ENABLED) return;
    await this.rag.checkPreconditions();
    if (this.env.RAG_SERVE_ONLY) {
      this.logger.log(
        'knowledge base served only (RAG_SERVE_ONLY=true): nothing is ingested by this process',
      );
      return;
    }
    if (!this.env.RAG_INGEST_ON_START) return;
    const configured = this.env.RAG_KNOWLEDGE_DIR;
    const dir = configured
      ? isAbsolute(configured)
        ? configured
        : resolve(configured)
      : this.files.path('knowledge');
    if (!existsSync(dir)) {
      const readers = Object.entries(this.files.agents.graph_agents).flatMap(([name, agent]) =>
        agent.rag_namespace ? [`${name} (namespace ${agent.rag_namespace})`] : [],
      );
      if (!configured && readers.length === 0) return;
      throw new RagConfigError(
        'RAG_MISCONFIGURED',
        `the knowledge base directory ${dir}${configured ? ' (RAG_KNOWLEDGE_DIR)' : ''} does not exist` +
          (readers.length > 0 ? `, and ${readers.join(', ')} retrieve from it` : '') +
          ': create it, point RAG_KNOWLEDGE_DIR at it, or set RAG_INGEST_ON_START=false where another process ingests',
      );
    }
    let reports: IngestReport[];
    try {
      reports = await this.rag.ingestKnowledgeBase(dir);
    } catch (error) {
      if (error instanceof RagIngestError) {
        throw new RagConfigError(
          'RAG_MISCONFIGURED',
          `the knowledge base ${dir} cannot be ingested: ${error.message}`,
          {
            cause: error,
          },
        );
      }
      this.logger.warn(
        `knowledge base ingestion from ${dir} failed: ${error instanceof Error ? error.message : String(error)}`,
      );
      return;
    }
    for (const report of reports) {
      this.logger.log(
        `knowledge namespace ${report.namespace}: ${report.documents} documents (${report.updated} updated), ${report.chunks} chunks`,
      );
    }
  }
}

/** Ingestion and retrieval over rag_documents/rag_chunks (Postgres full-text search, pgvector when available). */
@Module({
  imports: [TypeOrmModule.forFeature(RAG_ENTITIES)],
  providers: [
    { provide: RAG_ENV, useFactory: () => parseEnvNamespace('rag') },
    {
      provide: RagStore,
      inject: [DataSource],
      useFactory: (dataSource: DataSource) => new RagStore(dataSource),
    },
    {
      provide: RagService,
      inject: [RagStore, RAG_ENV, { token: LlmService, optional: true }],
      useFactory: (store: RagStore, env: RagEnv, llm: LlmService | undefined) =>
        new RagService(store, env, llm ?? null),
    },
    RagKnowledgeLoader,
  ],
  exports: [RagService],
})
export class RagModule {}
