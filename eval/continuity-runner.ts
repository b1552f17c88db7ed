import { LoggerService, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { AppConfigModule, StructuredOutputMode } from '@agent/config';
import { AgentState, HistoryMessage, isDomainAgentNode } from '@agent/contracts';
import { ContinuityModule, ContinuityService } from '@agent/continuity';
import { LlmModule } from '@agent/llm';
import { ObservabilityModule, TurnContext, TurnContextStore } from '@agent/observability';
import type { DatasetCatalogue, ContinuityDataset, DatasetConversation } from './continuity-dataset';
import type { TurnOutcome } from './continuity-metrics';

/** The profile the eval writes and the service is pointed at. */
export const EVAL_PROFILE = 'route_continuity';

/**
 * The service runs with threshold 0 so it reports every label with its confidence; acceptance at the reported
 * threshold (and at every swept one) is `accepted && confidence >= t`, computed afterwards.
 */
export const SERVICE_THRESHOLD = 0;

export interface RunnerOptions {
  baseUrl: string;
  model: string;
  apiKey?: string;
  historyTurns: number;
  maxTokens: number;
  timeoutSeconds: number;
  structuredOutput: StructuredOutputMode;
  concurrency: number;
  /** Directory holding routing.yaml, agents.yaml and tools.yaml (the catalogue the dataset is labelled against). */
  configDir: string;
  onProgress?: (done: number, total: number) => void;
}

export interface RunnerResult {
  outcomes: TurnOutcome[];
  warnings: string[];
  durationMs: number;
}

@Module({ imports: [AppConfigModule, ObservabilityModule, LlmModule, ContinuityModule] })
class ContinuityEvalModule {}

/** Keeps the service's warnings for the report instead of interleaving them with the progress output. */
class CollectingLogger implements LoggerService {
  private readonly seen = new Set<string>();
  readonly messages: string[] = [];

  constructor(private readonly limit = 20) {}

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

interface PreparedTurn {
  conversation: DatasetConversation;
  index: number;
  state: AgentState;
}

/** The state ContinuityService receives for turn `index`: the labelled context and the real previous turns. */
export function stateForTurn(
  conversation: DatasetConversation,
  index: number,
  catalogue: DatasetCatalogue,
): AgentState {
  const turn = conversation.turns[index];
  const history: HistoryMessage[] = conversation.turns.slice(0, index).flatMap((previous, i) => [
    { role: 'user' as const, content: previous.user, turn: i + 1 },
    { role: 'assistant' as const, content: previous.assistant ?? '', turn: i + 1 },
  ]);
  const state: AgentState = {
    tenant_id: 'eval',
    agent_id: 'eval',
    session_id: conversation.id,
    conversation_key: `eval:${conversation.id}`,
    user_text: turn.user,
    sanitized_input: turn.user,
    history,
    next_state: turn.next_state ?? null,
  };
  if (turn.active_agent !== null && turn.previous_intent !== null) {
    const tools = catalogue.intents.find((i) => i.name === turn.previous_intent)?.mcp_tools ?? [];
    state.active_agent = turn.active_agent;
    state.intent = turn.previous_intent;
    state.domain = turn.previous_domain ?? undefined;
    state.mcp_tools = [...tools];
    // The decision that made the agent active; a name that is no graph agent has none (the classifier ignores it).
    if (isDomainAgentNode(turn.active_agent)) {
      state.route_decision = {
        route: turn.active_agent,
        agent: turn.active_agent,
        intent: turn.previous_intent,
        domain: turn.previous_domain,
        mcp_tools: [...tools],
        confidence: 1,
        method: 'keyword',
        reason: 'the evaluation dataset',
        next_state: null,
        route_bypassed: false,
        metadata: {},
      };
    }
  }
  return state;
}

function profilesYaml(options: RunnerOptions): string {
  return stringify({
    profiles: {
      [EVAL_PROFILE]: {
        provider: 'openai_compatible',
        model: options.model,
        temperature: 0,
        max_tokens: options.maxTokens,
        timeout_seconds: options.timeoutSeconds,
        structured_output: options.structuredOutput,
      },
    },
  });
}

/** Sets the variables the context reads at creation, and gives back a function restoring the previous values. */
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

async function pool<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, async () => {
    while (next < items.length) {
      const item = items[next++];
      await work(item);
    }
  });
  await Promise.all(lanes);
}

/** Runs every labelled turn through the real ContinuityService against the given endpoint. */
export async function runContinuityEval(
  dataset: ContinuityDataset,
  catalogue: DatasetCatalogue,
  options: RunnerOptions,
): Promise<RunnerResult> {
  const dir = mkdtempSync(join(tmpdir(), 'continuity-eval-'));
  const profilesPath = join(dir, 'llm_profiles.yaml');
  writeFileSync(profilesPath, profilesYaml(options));
  const logger = new CollectingLogger();
  // The config namespaces are read once, when the context is created; the caller's environment is restored
  // right after so nothing leaks into the process (the tests run the eval in-process).
  const restore = applyEnv({
    CONFIG_DIR: options.configDir,
    LLM_PROFILES_PATH: profilesPath,
    LLM_BASE_URL: options.baseUrl,
    LLM_API_KEY: options.apiKey,
    ENABLE_ROUTE_STICKINESS: 'true',
    ROUTE_STICKINESS_LLM_PROFILE: EVAL_PROFILE,
    ROUTE_STICKINESS_CONFIDENCE_THRESHOLD: String(SERVICE_THRESHOLD),
    ROUTE_STICKINESS_HISTORY_TURNS: String(options.historyTurns),
    ROUTE_STICKINESS_MAX_TOKENS: String(options.maxTokens),
    ROUTE_STICKINESS_SHADOW_RATE: '0',
    OTEL_EXPORTER_OTLP_ENDPOINT: undefined,
  });
  let context: Awaited<ReturnType<typeof NestFactory.createApplicationContext>>;
  try {
    context = await NestFactory.createApplicationContext(ContinuityEvalModule, {
      logger,
      abortOnError: false,
    });
  } finally {
    restore();
  }
  const started = performance.now();
  try {
    const service = context.get(ContinuityService);
    const prepared: PreparedTurn[] = dataset.conversations.flatMap((conversation) =>
      conversation.turns.map((_, index) => ({
        conversation,
        index,
        state: stateForTurn(conversation, index, catalogue),
      })),
    );
    const outcomes: (TurnOutcome | undefined)[] = new Array<TurnOutcome | undefined>(prepared.length);
    let done = 0;
    const indexed = prepared.map((turn, position) => ({ turn, position }));
    await pool(indexed, options.concurrency, async ({ turn, position }) => {
      outcomes[position] = await evaluateTurn(service, turn);
      options.onProgress?.(++done, prepared.length);
    });
    return {
      outcomes: outcomes.filter((o): o is TurnOutcome => o !== undefined),
      warnings: logger.messages,
      durationMs: Math.round(performance.now() - started),
    };
  } finally {
    await context.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function evaluateTurn(service: ContinuityService, prepared: PreparedTurn): Promise<TurnOutcome> {
  const { conversation, index, state } = prepared;
  const turn = conversation.turns[index];
  // A turn context collects the events of this call only, so token counts stay per turn under concurrency.
  const context: TurnContext = {
    request_id: `eval-${conversation.id}-${index + 1}`,
    tenant_id: 'eval',
    agent_id: 'eval',
    session_id: conversation.id,
    conversation_key: `eval:${conversation.id}`,
    turn: index + 1,
    events: [],
    nodes: [],
  };
  const outcome = await TurnContextStore.run(context, () => service.evaluate(state));
  if (!outcome) {
    throw new Error(`ContinuityService returned no signal for ${conversation.id} turn ${index + 1}`);
  }
  const calls = context.events.filter((event) => event.name === 'llm.call');
  const tokens = (key: 'prompt_tokens' | 'completion_tokens') =>
    calls.reduce((sum, event) => sum + (typeof event.payload[key] === 'number' ? event.payload[key] : 0), 0);
  const { signal } = outcome;
  return {
    conversation_id: conversation.id,
    depth: index + 1,
    language: conversation.language,
    domain: conversation.domain,
    tags: [...turn.tags],
    label: turn.label,
    has_active_agent: turn.active_agent !== null,
    user: turn.user,
    decision: signal.decision,
    confidence: signal.confidence,
    accepted: signal.accepted,
    fallback_reason: signal.fallback_reason,
    reason: signal.reason,
    latency_ms: signal.latency_ms,
    prompt_tokens: tokens('prompt_tokens'),
    completion_tokens: tokens('completion_tokens'),
    expected_intent: turn.label === 'ROUTE' ? (conversation.turns[index + 1]?.previous_intent ?? null) : null,
    named_intent: outcome.route?.intent ?? null,
  };
}
