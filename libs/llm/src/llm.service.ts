import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import OpenAI, { APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { RequestOptions } from 'openai/internal/request-options';
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { ConfigFilesService, LlmProfileConfig, llmConfig, StructuredOutputMode } from '@agent/config';
import type { LlmCallOutcome } from '@agent/contracts';
import { EventBusService, MetricsService, TracingService } from '@agent/observability';
import {
  LlmError,
  LlmErrorKind,
  LlmHttpError,
  LlmInvalidResponseError,
  LlmNotConfiguredError,
  LlmTimeoutError,
} from './llm.errors';
import { ConnectionPools } from './connection-pools';
import { describeIssues, parseJsonObject, StructuredOutput } from './structured-output';

export type ChatMessage = ChatCompletionMessageParam;
export type ChatTool = ChatCompletionTool;

export interface ChatRequest {
  /** Requested profile name; falls back to `default` when the file does not define it. */
  profile: string;
  messages: ChatMessage[];
  /** Ask for a JSON object answer (response_format json_object, unless the profile disables it). */
  json?: boolean;
  /** Upper bound on output tokens; the effective cap is min(profile max_tokens, this). */
  maxTokens?: number;
  tools?: ChatTool[];
  /** Caller cancellation (e.g. a guardrail cancelled by fail-fast); combined with the profile timeout. */
  signal?: AbortSignal;
}

/** Why a structured call gave no value: the transport's failure kinds, and `invalid_output` for the answer. */
export type StructuredFailureReason = Exclude<LlmErrorKind, 'invalid_response'> | 'invalid_output';

export interface StructuredRequest<T> {
  /** Requested profile name; falls back to `default` when the file does not define it. */
  profile: string;
  messages: ChatMessage[];
  /** What the answer must be: validated always, sent as a JSON schema where the profile's mode is json_schema. */
  output: StructuredOutput<T>;
  /** Upper bound on output tokens; the effective cap is min(profile max_tokens, this). */
  maxTokens?: number;
  signal?: AbortSignal;
}

export type StructuredResult<T> =
  | { ok: true; value: T; model: string; latencyMs: number }
  | {
      ok: false;
      reason: StructuredFailureReason;
      /** For logs and events: the error message, or what was wrong with the answer. */
      detail: string;
      latencyMs: number;
      /** The HTTP status of an `http_error`. */
      status?: number;
    };

export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

export interface ChatResult {
  content: string | null;
  toolCalls: ToolCall[];
  profile: string;
  model: string;
  latencyMs: number;
  promptTokens: number;
  completionTokens: number;
  finishReason: string | null;
}

export interface EmbedResult {
  /** One vector per input text, in input order, all of the same length. */
  vectors: number[][];
  profile: string;
  model: string;
  dimensions: number;
  latencyMs: number;
  promptTokens: number;
}

export interface ResolvedProfile {
  requested: string;
  name: string;
  config: LlmProfileConfig;
  baseUrl: string | undefined;
  apiKey: string | undefined;
  /** An endpoint exists: a base URL, or the provider `openai` with a key (the SDK's default URL). */
  reachable: boolean;
}

/** OpenAI-compatible chat completions for every provider, with per-profile limits and usage accounting. */
@Injectable()
export class LlmService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(LlmService.name);
  private readonly clients = new Map<string, OpenAI>();
  private readonly pools = new ConnectionPools();

  constructor(
    @Inject(llmConfig.KEY) private readonly env: ConfigType<typeof llmConfig>,
    private readonly files: ConfigFilesService,
    private readonly events: EventBusService,
    private readonly metrics: MetricsService,
    private readonly tracing: TracingService,
  ) {}

  onModuleInit(): void {
    const status = this.describe();
    if (!status.configured) {
      this.logger.warn(
        'No LLM endpoint is configured (LLM_BASE_URL or a profile base_url): every LLM stage takes its documented fallback.',
      );
    }
  }

  onModuleDestroy(): void {
    this.pools.destroy();
  }

  /** What readiness reports: configuration only, never a model call. */
  describe(): {
    configured: boolean;
    profiles_path: string;
    profiles: { name: string; model: string; endpoint_configured: boolean }[];
  } {
    const profiles = Object.entries(this.files.llmProfiles.profiles).map(([name, config]) => ({
      name,
      model: config.model,
      endpoint_configured: this.endpointFor(config).reachable,
    }));
    return {
      configured: profiles.some((p) => p.endpoint_configured),
      profiles_path: this.files.llmProfilesPath,
      profiles,
    };
  }

  /** The profile a stage would use, or null when neither it nor `default` exists. */
  resolveProfile(requested: string): ResolvedProfile | null {
    const profiles = this.files.llmProfiles.profiles;
    const name = requested in profiles ? requested : 'default' in profiles ? 'default' : null;
    if (name === null) return null;
    const config = profiles[name];
    return { requested, name, config, ...this.endpointFor(config) };
  }

  async chat(request: ChatRequest): Promise<ChatResult> {
    return this.complete(request, request.json ? 'json_object' : undefined);
  }

  /**
   * The one way to ask a model for JSON: one exactly-one-object answer (a fence or prose around it is fine),
   * validated by the output's schema. Never throws: every failure is a typed reason the stage maps to its
   * documented fallback.
   */
  async structured<T>(request: StructuredRequest<T>): Promise<StructuredResult<T>> {
    const started = performance.now();
    const failed = (
      reason: StructuredFailureReason,
      detail: string,
      status?: number,
    ): StructuredResult<T> => ({
      ok: false,
      reason,
      detail,
      latencyMs: performance.now() - started,
      ...(status !== undefined ? { status } : {}),
    });
    let result: ChatResult;
    try {
      result = await this.complete(request, request.output);
    } catch (error) {
      if (!(error instanceof LlmError)) return failed('error', String(error));
      const reason = error.kind === 'invalid_response' ? 'invalid_output' : error.kind;
      return failed(reason, error.message, error.status);
    }
    const parsed = parseJsonObject(result.content);
    const validated = parsed.ok ? request.output.schema.safeParse(parsed.object) : null;
    if (validated?.success) {
      return { ok: true, value: validated.data, model: result.model, latencyMs: performance.now() - started };
    }
    const problem = validated ? describeIssues(validated.error) : parsed.ok ? '' : parsed.problem;
    this.logger.warn(
      `LLM profile ${result.profile} (model ${result.model}) answered an invalid ${request.output.name}: ${problem}; ` +
        `answer starts ${JSON.stringify(excerpt(result.content ?? ''))}`,
    );
    return failed('invalid_output', problem);
  }

  private async complete(
    request: ChatRequest | StructuredRequest<unknown>,
    format: 'json_object' | StructuredOutput<unknown> | undefined,
  ): Promise<ChatResult> {
    const profile = this.resolveProfile(request.profile);
    if (!profile) {
      this.record(request.profile, 'unknown', 0, 0, 0, 'not_configured');
      throw new LlmNotConfiguredError(
        `LLM profile "${request.profile}" is not defined and there is no default profile`,
      );
    }
    if (!profile.reachable) {
      this.record(profile.requested, profile.config.model, 0, 0, 0, 'not_configured');
      throw new LlmNotConfiguredError(
        `LLM profile "${profile.name}" has no endpoint (set LLM_BASE_URL or base_url)`,
      );
    }
    const timeoutMs = Math.round(profile.config.timeout_seconds * 1000);
    const maxTokens = Math.min(profile.config.max_tokens, request.maxTokens ?? Number.POSITIVE_INFINITY);
    const client = this.clientFor(profile);
    const started = performance.now();
    return this.tracing.span(
      `llm.${profile.requested}`,
      { 'llm.profile': profile.requested, 'llm.model': profile.config.model },
      async () => {
        try {
          const completion = await client.chat.completions.create(
            {
              model: profile.config.model,
              messages: request.messages,
              temperature: profile.config.temperature,
              max_tokens: maxTokens,
              ...responseFormat(profile.config.structured_output, format),
              ...('tools' in request && request.tools && request.tools.length > 0
                ? { tools: request.tools }
                : {}),
            },
            callOptions(timeoutMs, request.signal),
          );
          const latencyMs = performance.now() - started;
          const choice = Array.isArray(completion?.choices) ? completion.choices[0] : undefined;
          if (!choice || typeof choice.message !== 'object' || choice.message === null) {
            throw new LlmInvalidResponseError(profile.requested, 'no choices[0].message');
          }
          const toolCalls: ToolCall[] = (choice.message.tool_calls ?? []).flatMap((call) =>
            call.type === 'function'
              ? [{ id: call.id, name: call.function.name, arguments: call.function.arguments }]
              : [],
          );
          const content = typeof choice.message.content === 'string' ? choice.message.content : null;
          if (content === null && toolCalls.length === 0) {
            throw new LlmInvalidResponseError(profile.requested, 'empty message');
          }
          const promptTokens = completion.usage?.prompt_tokens ?? 0;
          const completionTokens = completion.usage?.completion_tokens ?? 0;
          this.record(
            profile.requested,
            profile.config.model,
            latencyMs,
            promptTokens,
            completionTokens,
            'ok',
          );
          return {
            content,
            toolCalls,
            profile: profile.requested,
            model: profile.config.model,
            latencyMs,
            promptTokens,
            completionTokens,
            finishReason: choice.finish_reason ?? null,
          };
        } catch (error) {
          const mapped = request.signal?.aborted
            ? new LlmError(
                'cancelled',
                `LLM profile ${profile.requested} call cancelled by the caller`,
                undefined,
                { cause: error },
              )
            : this.mapError(profile.requested, timeoutMs, error);
          const outcome: LlmCallOutcome = mapped.kind === 'not_configured' ? 'error' : mapped.kind;
          this.record(profile.requested, profile.config.model, performance.now() - started, 0, 0, outcome);
          throw mapped;
        }
      },
    );
  }

  /**
   * The profile `name` when the file defines it (no fallback to `default`: a chat model cannot embed) and it
   * has an endpoint; otherwise null.
   */
  embeddingProfile(name: string): ResolvedProfile | null {
    if (!(name in this.files.llmProfiles.profiles)) return null;
    const profile = this.resolveProfile(name);
    return profile?.reachable ? profile : null;
  }

  /** Embeddings of `texts` with an embedding profile (see embeddingProfile), accounted as an llm.call. */
  async embed(profileName: string, texts: string[], signal?: AbortSignal): Promise<EmbedResult> {
    const profile = this.embeddingProfile(profileName);
    if (!profile) {
      this.record(profileName, 'unknown', 0, 0, 0, 'not_configured');
      throw new LlmNotConfiguredError(
        `LLM embedding profile "${profileName}" is not defined or has no endpoint (set LLM_BASE_URL or base_url)`,
      );
    }
    const timeoutMs = Math.round(profile.config.timeout_seconds * 1000);
    const client = this.clientFor(profile);
    const started = performance.now();
    return this.tracing.span(
      `llm.${profile.requested}`,
      { 'llm.profile': profile.requested, 'llm.model': profile.config.model },
      async () => {
        try {
          const response = await client.embeddings.create(
            {
              model: profile.config.model,
              input: texts,
              // Explicit floats: without it the SDK asks for base64, which not every compatible server speaks.
              encoding_format: 'float',
              ...(profile.config.dimensions ? { dimensions: profile.config.dimensions } : {}),
            },
            callOptions(timeoutMs, signal),
          );
          const vectors = parseEmbeddings(
            profile.requested,
            response,
            texts.length,
            profile.config.dimensions,
          );
          const latencyMs = performance.now() - started;
          const promptTokens = response.usage?.prompt_tokens ?? 0;
          this.record(profile.requested, profile.config.model, latencyMs, promptTokens, 0, 'ok');
          return {
            vectors,
            profile: profile.requested,
            model: profile.config.model,
            dimensions: vectors[0]?.length ?? 0,
            latencyMs,
            promptTokens,
          };
        } catch (error) {
          const mapped = signal?.aborted
            ? new LlmError(
                'cancelled',
                `LLM profile ${profile.requested} call cancelled by the caller`,
                undefined,
                { cause: error },
              )
            : this.mapError(profile.requested, timeoutMs, error);
          const outcome: LlmCallOutcome = mapped.kind === 'not_configured' ? 'error' : mapped.kind;
          this.record(profile.requested, profile.config.model, performance.now() - started, 0, 0, outcome);
          throw mapped;
        }
      },
    );
  }

  private mapError(profile: string, timeoutMs: number, error: unknown): LlmError {
    if (error instanceof LlmError) return error;
    if (error instanceof APIConnectionTimeoutError || error instanceof APIUserAbortError) {
      return new LlmTimeoutError(profile, timeoutMs, error);
    }
    if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
      return new LlmTimeoutError(profile, timeoutMs, error);
    }
    if (error instanceof APIError && typeof error.status === 'number') {
      return new LlmHttpError(profile, error.status, error);
    }
    if (error instanceof SyntaxError) return new LlmInvalidResponseError(profile, error.message, error);
    return new LlmError(
      'error',
      `LLM profile ${profile} failed: ${error instanceof Error ? error.message : String(error)}`,
      undefined,
      {
        cause: error,
      },
    );
  }

  private record(
    profile: string,
    model: string,
    latencyMs: number,
    promptTokens: number,
    completionTokens: number,
    outcome: LlmCallOutcome,
  ): void {
    const latency = Math.round(latencyMs * 100) / 100;
    this.events.emit('llm.call', {
      profile,
      model,
      latency_ms: latency,
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      outcome,
    });
    this.metrics.llmCalls.inc({ profile, outcome });
    if (outcome !== 'not_configured') this.metrics.llmLatency.observe({ profile }, latencyMs / 1000);
    if (promptTokens > 0) this.metrics.llmTokens.inc({ profile, kind: 'prompt' }, promptTokens);
    if (completionTokens > 0) this.metrics.llmTokens.inc({ profile, kind: 'completion' }, completionTokens);
  }

  private endpointFor(config: LlmProfileConfig): Pick<ResolvedProfile, 'baseUrl' | 'apiKey' | 'reachable'> {
    const apiKey = (config.api_key_env ? process.env[config.api_key_env] : undefined) ?? this.env.LLM_API_KEY;
    const baseUrl = config.base_url ?? this.env.LLM_BASE_URL;
    return {
      baseUrl,
      apiKey,
      reachable: baseUrl !== undefined || (config.provider === 'openai' && apiKey !== undefined),
    };
  }

  private clientFor(profile: ResolvedProfile): OpenAI {
    const key = `${profile.baseUrl ?? 'default'}|${profile.apiKey ?? ''}`;
    let client = this.clients.get(key);
    if (!client) {
      client = new OpenAI({
        baseURL: profile.baseUrl,
        apiKey: profile.apiKey ?? 'not-set',
        maxRetries: 0,
        fetch: this.pools.fetchFor(profile.baseUrl ?? OPENAI_BASE_URL),
      });
      this.clients.set(key, client);
    }
    return client;
  }
}

/** Where the SDK sends a profile of provider `openai` that names no base URL. */
const OPENAI_BASE_URL = 'https://api.openai.com/v1';

/**
 * Per-call SDK options: its own deadline (the one timer it arms per request anyway) and the caller's signal as
 * is; no signal is allocated here per call.
 */
function callOptions(timeoutMs: number, signal: AbortSignal | undefined): RequestOptions {
  return { timeout: timeoutMs, maxRetries: 0, ...(signal ? { signal } : {}) };
}

/** The `response_format` a profile's mode allows for what the stage asked (nothing when it asked for text). */
function responseFormat(
  mode: StructuredOutputMode,
  format: 'json_object' | StructuredOutput<unknown> | undefined,
): Pick<ChatCompletionCreateParamsNonStreaming, 'response_format'> {
  if (format === undefined || mode === 'none') return {};
  if (mode === 'json_schema' && format !== 'json_object') {
    return { response_format: { type: 'json_schema', json_schema: format.jsonSchema } };
  }
  return { response_format: { type: 'json_object' } };
}

/** The start of a text for a log line. */
function excerpt(text: string, max = 200): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** The response's vectors in input order; anything else than `expected` equal-sized finite vectors is invalid. */
function parseEmbeddings(
  profile: string,
  response: unknown,
  expected: number,
  dimensions: number | undefined,
): number[][] {
  const data = (response as { data?: unknown } | null)?.data;
  if (!Array.isArray(data) || data.length !== expected) {
    throw new LlmInvalidResponseError(profile, `expected ${expected} embeddings`);
  }
  const vectors: number[][] = new Array<number[]>(expected);
  data.forEach((item: unknown, position) => {
    const { index, embedding } = (item ?? {}) as { index?: unknown; embedding?: unknown };
    const at = typeof index === 'number' ? index : position;
    if (
      !Number.isInteger(at) ||
      at < 0 ||
      at >= expected ||
      vectors[at] !== undefined ||
      !Array.isArray(embedding) ||
      embedding.length === 0 ||
      !embedding.every((v) => typeof v === 'number' && Number.isFinite(v))
    ) {
      throw new LlmInvalidResponseError(profile, `invalid embedding at position ${position}`);
    }
    vectors[at] = embedding as number[];
  });
  const size = dimensions ?? vectors[0]?.length;
  if (vectors.some((v) => v.length !== size)) {
    throw new LlmInvalidResponseError(profile, `embeddings are not all of dimension ${size}`);
  }
  return vectors;
}
