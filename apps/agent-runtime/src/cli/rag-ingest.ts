import 'reflect-metadata';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppConfigModule, EnvValidationError, parseEnvNamespace } from '@agent/config';
import { openDatabase } from '@agent/database';
import { LlmModule, LlmService } from '@agent/llm';
import { ObservabilityModule } from '@agent/observability';
import {
  assertIngestionAllowed,
  loadDirectory,
  RAG_ENTITIES,
  RagIngestError,
  RagService,
  RagStore,
  validateChunking,
} from '@agent/rag';

/** Just enough of the app to reach the LLM profiles, so ingested chunks get embeddings when an `embedding` profile exists. */
@Module({ imports: [AppConfigModule, ObservabilityModule, LlmModule] })
class IngestLlmModule {}

const USAGE = `usage: npm run rag:ingest -- <directory> --namespace <namespace>
         [--chunk-size <n>] [--chunk-overlap <n>] [--language <text search config>] [--prune]

Loads .md .markdown .txt .json .yaml .yml files under <directory> into rag_documents/rag_chunks of
<namespace> (DATABASE_URL, or the embedded Postgres in DATA_DIR when unset; stop the app first then).
Defaults: RAG_CHUNK_SIZE (1200), RAG_CHUNK_OVERLAP (200), RAG_LANGUAGE (portuguese).`;

class UsageError extends Error {}

function integerOption(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (!Number.isInteger(parsed)) throw new UsageError(`--${name} must be an integer, got "${value}"`);
  return parsed;
}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      namespace: { type: 'string', short: 'n' },
      'chunk-size': { type: 'string' },
      'chunk-overlap': { type: 'string' },
      language: { type: 'string' },
      prune: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  if (positionals.length !== 1) throw new UsageError('expected exactly one <directory>');
  if (!values.namespace) throw new UsageError('--namespace is required');
  const directory = resolve(positionals[0]);
  const rag = parseEnvNamespace('rag');
  assertIngestionAllowed(rag);
  const chunkSize = integerOption(values['chunk-size'], 'chunk-size') ?? rag.RAG_CHUNK_SIZE;
  const chunkOverlap = integerOption(values['chunk-overlap'], 'chunk-overlap') ?? rag.RAG_CHUNK_OVERLAP;
  // Settings and files are checked before any database is started, so a typo fails in milliseconds.
  validateChunking({ chunkSize, chunkOverlap });
  loadDirectory(directory);

  const llmContext = await NestFactory.createApplicationContext(IngestLlmModule, { logger: ['error'] });
  const database = await openDatabase(parseEnvNamespace('database'), RAG_ENTITIES);
  const { dataSource } = database;
  try {
    await dataSource.runMigrations({ transaction: 'each' });
    const service = new RagService(new RagStore(dataSource), rag, llmContext.get(LlmService));
    const report = await service.ingestDirectory(directory, {
      namespace: values.namespace,
      chunkSize,
      chunkOverlap,
      language: values.language,
      prune: values.prune,
    });
    console.log(JSON.stringify(report, null, 2));
  } finally {
    await database.close();
    await llmContext.close();
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError || (error instanceof TypeError && 'code' in error)) {
    console.error(`rag:ingest: ${error.message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (error instanceof RagIngestError || error instanceof EnvValidationError) {
    console.error(`rag:ingest: ${error.message}`);
    process.exit(1);
  }
  console.error(`rag:ingest failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
