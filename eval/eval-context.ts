/**
 * The runtime's model-backed stages as the service builds them, in one Nest application context without a
 * database: the service's own environment and config directory, with only what a measurement needs changed
 * (listed in `EVAL_OVERRIDES` and reported).
 */
import { INestApplicationContext, Injectable, LoggerService, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { ConfirmationClassifier, ParameterExtractor } from '@agent/agents';
import { AppConfigModule, loadYamlFile, parseEnvNamespace } from '@agent/config';
import { ContinuityModule } from '@agent/continuity';
import { GuardrailsModule, GuardrailsService } from '@agent/guardrails';
import { JUDGES_FILE, judgesFileSchema, JudgesFile, JudgesModule } from '@agent/judges';
import { LlmModule } from '@agent/llm';
import {
  LongTermMemoryItem,
  LongTermMemoryStore,
  MemoryFact,
  MemoryService,
  MemorySubject,
} from '@agent/memory';
import { ObservabilityModule } from '@agent/observability';
import { RoutingModule } from '@agent/routing';

/**
 * What the evaluation changes in the service's configuration, and why: each stage runs once with its threshold
 * at 0 so every label and confidence is recorded, and the report applies the configured threshold (and every
 * swept one) afterwards, exactly as the service does.
 */
export const EVAL_OVERRIDES: Readonly<Record<string, string>> = {
  ENABLE_ROUTE_STICKINESS: 'true',
  ROUTE_STICKINESS_CONFIDENCE_THRESHOLD: '0',
  ROUTE_STICKINESS_SHADOW_RATE: '0',
  ENABLE_LONG_TERM_MEMORY: 'true',
  LONG_TERM_MEMORY_AUTO_EXTRACT: 'true',
  LONG_TERM_MEMORY_MIN_CONFIDENCE: '0',
};

/** The service's settings the report applies afterwards, read before the overrides. */
export interface ServiceSettings {
  stickiness_enabled: boolean;
  stickiness_profile: string;
  stickiness_threshold: number;
  history_turns: number;
  memory_enabled: boolean;
  memory_profile: string;
  memory_min_confidence: number;
  /** The judges whose judges.yaml type is deterministic: measured as `llm` (see `llmJudges`). */
  deterministic_judges: string[];
}

/** Keeps the services' warnings for the report instead of interleaving them with the progress output. */
export class CollectingLogger implements LoggerService {
  private readonly seen = new Set<string>();
  readonly messages: string[] = [];

  constructor(private readonly limit = 30) {}

  log(): void {}
  debug(): void {}
  verbose(): void {}
  warn(message: unknown): void {
    this.keep(message);
  }
  error(message: unknown): void {
    this.keep(message);
  }
  fatal(message: unknown): void {
    this.keep(message);
  }

  private keep(message: unknown): void {
    const text = typeof message === 'string' ? message : JSON.stringify(message);
    if (this.seen.has(text) || this.messages.length >= this.limit) return;
    this.seen.add(text);
    this.messages.push(text);
  }
}

/**
 * The long-term memory store of the evaluation: what MemoryService would write is kept per subject (the case id)
 * instead of going to Postgres, and nothing is ever read back.
 */
@Injectable()
export class RecordingMemoryStore extends LongTermMemoryStore {
  private readonly written = new Map<string, MemoryFact[]>();

  /** The facts written for a subject key (and forgets them). */
  take(subjectKey: string): MemoryFact[] {
    const facts = this.written.get(subjectKey) ?? [];
    this.written.delete(subjectKey);
    return facts;
  }

  search(): Promise<LongTermMemoryItem[]> {
    return Promise.resolve([]);
  }

  upsert(subject: MemorySubject, facts: MemoryFact[]): Promise<number> {
    this.written.set(subject.subject_key, [...(this.written.get(subject.subject_key) ?? []), ...facts]);
    return Promise.resolve(facts.length);
  }

  purgeSubject(): Promise<number> {
    return Promise.resolve(0);
  }

  purgeSession(): Promise<number> {
    return Promise.resolve(0);
  }
}

/**
 * In the service the agents ask the guardrails for the retrieval and tool screens, and the guardrails refuse to
 * start with rails nothing runs. The evaluation runs the input stage only, on behalf of the same service.
 */
@Injectable()
class ContentScreensClaim {
  constructor(guardrails: GuardrailsService) {
    guardrails.contentScreen();
  }
}

@Module({
  imports: [
    AppConfigModule,
    ObservabilityModule,
    LlmModule,
    ContinuityModule,
    RoutingModule,
    GuardrailsModule,
    JudgesModule,
  ],
  providers: [
    ConfirmationClassifier,
    ParameterExtractor,
    RecordingMemoryStore,
    { provide: LongTermMemoryStore, useExisting: RecordingMemoryStore },
    MemoryService,
    ContentScreensClaim,
  ],
})
class EvalStagesModule {}

/**
 * judges.yaml with every judge of type `llm` and every turn sampled: the judges stage measures the model, and a
 * deterministic judge has none. Everything else (thresholds, profile, context cap) stays as configured.
 */
export function llmJudges(file: JudgesFile): JudgesFile {
  return {
    ...file,
    sample_rate: 1,
    judges: file.judges.map((judge) => ({ ...judge, type: 'llm' as const })),
  };
}

/** Sets variables and gives back a function restoring the previous values. */
function applyEnv(values: Record<string, string | undefined>): () => void {
  const previous = Object.fromEntries(Object.keys(values).map((key) => [key, process.env[key]]));
  const assign = (entries: Record<string, string | undefined>) => {
    for (const [key, value] of Object.entries(entries)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
  assign(values);
  return () => assign(previous);
}

export interface EvalContext {
  app: INestApplicationContext;
  /** The service's settings as configured (before EVAL_OVERRIDES). */
  settings: ServiceSettings;
  /** The services' warnings (invalid answers, endpoint errors), first distinct ones. */
  warnings: () => string[];
  close: () => Promise<void>;
}

/**
 * Builds the stages from `env` (the service's environment) and `configDir` (its CONFIG_DIR). The config directory
 * is copied so judges.yaml can ask for llm judges; the environment is applied while the context is created (Nest
 * reads it then) and restored right after, so nothing leaks into the caller's process.
 */
export async function createEvalContext(env: NodeJS.ProcessEnv, configDir: string): Promise<EvalContext> {
  const continuity = parseEnvNamespace('continuity', env);
  const memory = parseEnvNamespace('memory', env);
  const dir = mkdtempSync(join(tmpdir(), 'agent-eval-config-'));
  cpSync(resolve(configDir), dir, { recursive: true });
  const judges = loadYamlFile(join(dir, JUDGES_FILE), judgesFileSchema);
  writeFileSync(join(dir, JUDGES_FILE), stringify(llmJudges(judges)));
  const settings: ServiceSettings = {
    stickiness_enabled: continuity.ENABLE_ROUTE_STICKINESS,
    stickiness_profile: continuity.ROUTE_STICKINESS_LLM_PROFILE,
    stickiness_threshold: continuity.ROUTE_STICKINESS_CONFIDENCE_THRESHOLD,
    history_turns: continuity.ROUTE_STICKINESS_HISTORY_TURNS,
    memory_enabled: memory.ENABLE_LONG_TERM_MEMORY,
    memory_profile: memory.LONG_TERM_MEMORY_LLM_PROFILE,
    memory_min_confidence: memory.LONG_TERM_MEMORY_MIN_CONFIDENCE,
    deterministic_judges: judges.judges.filter((j) => j.enabled && j.type !== 'llm').map((j) => j.name),
  };
  const logger = new CollectingLogger();
  const restore = applyEnv({
    ...env,
    ...EVAL_OVERRIDES,
    CONFIG_DIR: dir,
    // A trace exporter would send every evaluation call to the operator's collector.
    OTEL_EXPORTER_OTLP_ENDPOINT: undefined,
  });
  let app: INestApplicationContext;
  try {
    app = await NestFactory.createApplicationContext(EvalStagesModule, { logger, abortOnError: false });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  } finally {
    restore();
  }
  return {
    app,
    settings,
    warnings: () => logger.messages,
    close: async () => {
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
