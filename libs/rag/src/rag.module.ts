import { Inject, Injectable, Logger, Module, OnApplicationBootstrap } from '@nestjs/common';
import { isAbsolute, resolve } from 'node:path';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ConfigFilesService, parseEnvNamespace, RagEnv } from '@agent/config';
import { LlmService } from '@agent/llm';
import { RAG_ENTITIES } from './rag.entities';
import { RagService } from './rag.service';
import { RagStore } from './rag.store';

export const RAG_ENV = Symbol('RAG_ENV');

/** Ingests the shipped knowledge base at start-up (RAG_INGEST_ON_START); a failure is logged, never fatal. */
@Injectable()
export class RagKnowledgeLoader implements OnApplicationBootstrap {
  private readonly logger = new Logger('RagKnowledgeLoader');

  constructor(
    private readonly rag: RagService,
    private readonly files: ConfigFilesService,
    @Inject(RAG_ENV) private readonly env: RagEnv,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!this.env.RAG_ENABLED || !this.env.RAG_INGEST_ON_START) return;
    const configured = this.env.RAG_KNOWLEDGE_DIR;
    const dir = configured
      ? isAbsolute(configured)
        ? configured
        : resolve(configured)
      : this.files.path('knowledge');
    try {
      const reports = await this.rag.ingestKnowledgeBase(dir);
      for (const report of reports) {
        this.logger.log(
          `knowledge namespace ${report.namespace}: ${report.documents} documents (${report.updated} updated), ${report.chunks} chunks`,
        );
      }
    } catch (error) {
      this.logger.warn(
        `knowledge base ingestion from ${dir} failed: ${error instanceof Error ? error.message : String(error)}`,
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
