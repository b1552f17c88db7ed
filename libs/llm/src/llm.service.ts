import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { RequestOptions } from 'openai/internal/request-options';
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import {
  ConfigFilesService,
  LlmProfileConfig,
  llmConfig,
  LlmProvider,
  ModelTier,
  StructuredOutputMode,
} from '@agent/config';
import type { LlmCallOutcome } from '@agent/contracts';
import { EventBusService, MetricsService, TracingService } from '@agent/observability';
import {
  displayUrl,
  failureCauseOf,
  LlmError,
  LlmFailureCause,
  LlmErrorKind,
  LlmHttpError,
  LlmInvalidResponseError,
  LlmNotConfiguredError,
  LlmTimeoutError,
  LlmUnreachableError,
  NetworkFailure,
  networkFailure,
} from './llm.errors';
import { streamedCompletion, TextListener } from './chat-stream';
import { ConnectionPools } from './connection-pools';
import { profileSettings, ProfileSettings } from './providers';
import { describeIssues, parseJsonObject, StructuredOutput } from './structured-output';
import type { TokenPrices } from './token-cost';

export type ChatMessage = ChatCompletionMessageParam;
export type ChatTool = ChatCompletionTool;

export interface ChatRequest {
  /** Requested profile name; falls back to `default` when the file does not define it. */
  profile: string;
  messages: ChatMessage[];
  /** Upper bound on output tokens; the effective cap is min(profile max_tokens, this). */
  maxTokens?: number;
  tools?: ChatTool[];
  /** Caller cancellation (e.g. a guardrail cancelled by fail-fast); the profile timeout applies as well. */
  signal?: AbortSignal;
  /** Streams the answer: hears each piece of its text as the model writes it (see `streamedCompletion`). */
  onText?: TextListener;
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
      /** The start of the body of an `http_error`. */
      body?: string;
      /** The endpoint that could not be reached and why (refused, DNS, TLS, ...). */
      unreachable?: { url: string; network: NetworkFailure };
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
  /** Of promptTokens, those the provider reported as read from its prompt cache (0 when it says nothing). */
  cachedPromptTokens: number;
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

/** What a profile's model costs per million tokens, in the price table's currency. */
export interface ModelPriceOf extends TokenPrices {
  model: string;
  currency: string;
}

export interface ResolvedProfile extends ProfileSettings {
  requested: string;
  name: string;
  config: LlmProfileConfig;
  /** It can be called: it has an endpoint, a model and, where the provider needs one, a key. */
  reachable: boolean;
}

/** A profile that can be called, with its endpoint and model known. */
interface CallableProfile extends ResolvedProfile {
  baseUrl: string;
  model: string;
}

function isCallable(profile: ResolvedProfile): profile is CallableProfile {
  return profile.reachable && profile.baseUrl !== undefined && profile.model !== undefined;
}

export interface ProfileStatus {
  name: string;
  tier: ModelTier;
  provider: LlmProvider;
  /** The model the profile would call, or null when none is configured. */
  model: string | null;
  endpoint_configured: boolean;
  reachable: boolean;
  /** Why it cannot be called, when it cannot. */
  missing: string | null;
}

/**
 * What the real calls of a profile said, never a probe: `unknown` until one ends, then `up` or `down` by the
 * last one that ended (a call the caller cancelled says nothing about the model).
 */
export interface ProfileCallHealth {
  state: 'unknown' | 'up' | 'down';
  last_success_at: string | null;
  last_failure: {
    at: string;
    kind: LlmErrorKind;
    /** The network cause when the endpoint could not be reached (refused, dns, tls, ...), else the kind. */
    cause: LlmFailureCause | null;
    error: string;
    /** The HTTP status and the start of the body of an `http_error` (404: the endpoint has no such model). */
    status?: number;
    body?: string;
  } | null;
}

const NO_CALL_YET: ProfileCallHealth = { state: 'unknown', last_success_at: null, last_failure: null };

/** OpenAI-compatible chat completions and embeddings for every provider, with per-profile limits and accounting. */
@Injectable()
export class LlmService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(LlmService.name);
  private readonly clients = new Map<string, OpenAI>();
  private readonly pools = new ConnectionPools();
  /** By the profile really called (a name missing from the file calls `default`). */
  private readonly callHealth = new Map<string, ProfileCallHealth>();

  constructor(
    @Inject(llmConfig.KEY) private readonly env: ConfigType<typeof llmConfig>,
    private readonly files: ConfigFilesService,
    private readonly events: EventBusService,
    private readonly metrics: MetricsService,
    private readonly tracing: TracingService,
  ) {}

  /** One line at start-up says what the model set-up is; nothing is logged per turn for a missing model. */
  onModuleInit(): void {
    const { profiles } = this.describe();
    const callable = profiles.filter((p) => p.reachable);
    if (callable.length === 0) {
      this.logger.warn(
        'No model is configured: every model-backed stage takes its fallback and none calls a model. Set ' +
          'LLM_BASE_URL and LLM_MODEL (or LLM_PROVIDER=openai with LLM_API_KEY); npm run llm:check tests the set-up.',
      );
      return;
    }
    if (callable.some((p) => p.provider === 'demo')) {
      this.logger.warn(
        'The built-in DEMO MODEL answers every model stage (LLM_PROVIDER=demo): not a language model, it follows ' +
          'the routing keywords and a few words of pt, en and es, and every answer says so. For trying the service ' +
          'only (production refuses it): set LLM_BASE_URL and LLM_MODEL (or LLM_PROVIDER=openai with LLM_API_KEY).',
      );
      return;
    }
    const models = [...new Set(callable.map((p) => `${p.tier} ${p.model ?? ''}`))].join(', ');
    const uncallable = profiles.filter((p) => !p.reachable).map((p) => `${p.name} (${p.missing ?? ''})`);
    this.logger.log(
      `Models: ${models}` + (uncallable.length > 0 ? `; without a model: ${uncallable.join(', ')}` : ''),
    );
  }

  /** After the HTTP server closed: the turns it was still answering finish their model calls first. */
  onApplicationShutdown(): void {
    this.pools.destroy();
  }

  /** What readiness reports: the configuration and what the last real calls said, never a model call. */
  describe(): {
    configured: boolean;
    profiles_path: string;
    profiles: (ProfileStatus & ProfileCallHealth)[];
  } {
    const profiles = Object.keys(this.files.llmProfiles.profiles).flatMap((name) => {
      const profile = this.resolveProfile(name);
      return profile ? [{ ...statusOf(profile), ...(this.callHealth.get(profile.name) ?? NO_CALL_YET) }] : [];
    });
    return {
      configured: profiles.some((p) => p.reachable),
      profiles_path: this.files.llmProfilesPath,
      profiles,
    };
  }

  /**
   * What a call of `profile` costs per million tokens: the price llm_profiles.yaml gives the model the profile
   * calls now, or null when the file prices no such model (or the profile has none).
   */
  priceOf(profile: string): ModelPriceOf | null {
    const prices = this.files.llmProfiles.prices;
    const model = this.resolveProfile(profile)?.model;
    const price = prices && model !== undefined ? prices.models[model] : undefined;
    if (!prices || model === undefined || !price) return null;
    return {
      model,
      currency: prices.currency,
      input: price.input,
      cached_input: price.cached_input ?? price.input,
      output: price.output,
    };
  }

  /** The profile a stage would use, or null when neither it nor `default` exists. */
  resolveProfile(requested: string): ResolvedProfile | null {
    const profiles = this.files.llmProfiles.profiles;
    const name = requested in profiles ? requested : 'default' in profiles ? 'default' : null;
    if (name === null) return null;
    const config = profiles[name];
    const settings = profileSettings(config, this.env);
    return { requested, name, config, ...settings, reachable: settings.missing === null };
  }

  async chat(request: ChatRequest): Promise<ChatResult> {
    return this.complete(request, undefined);
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
      error?: LlmError,
    ): StructuredResult<T> => ({
      ok: false,
      reason,
      detail,
      latencyMs: performance.now() - started,
      ...(error instanceof LlmHttpError ? { status: error.status, body: error.body } : {}),
      ...(error instanceof LlmUnreachableError
        ? { unreachable: { url: error.url, network: error.network } }
        : {}),
    });
    let result: ChatResult;
    try {
      result = await this.complete(request, request.output);
    } catch (error) {
      if (!(error instanceof LlmError)) return failed('error', String(error));
      const reason = error.kind === 'invalid_response' ? 'invalid_output' : error.kind;
      return failed(reason, error.message, error);
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

  /**
   * The profile `name` when the file defines it (no fallback to `default`: a chat model cannot embed) and it
   * can be called; otherwise null.
   */
  embeddingProfile(name: string): ResolvedProfile | null {
    if (!(name in this.files.llmProfiles.profiles)) return null;
    const profile = this.resolveProfile(name);
    return profile?.reachable ? profile : null;
  }

  /** Embeddings of `texts` with an embedding profile (see embeddingProfile), accounted as an llm.call. */
  async embed(profileName: string, texts: string[], signal?: AbortSignal): Promise<EmbedResult> {
    const profile = this.embeddingProfile(profileName);
    if (!profile || !isCallable(profile)) {
      this.record(profileName, 'unknown', 0, 0, 0, 'not_configured');
      throw new LlmNotConfiguredError(
        `LLM embedding profile "${profileName}" is not defined or cannot be called (${this.resolveProfile(profileName)?.missing ?? 'not in the profiles file'})`,
      );
    }
    const cancelledPrompt = () => texts.reduce((n, text) => n + Math.ceil(text.length / 4), 0);
    return this.call(profile, signal, cancelledPrompt, async (client, options) => {
      const response = await client.embeddings.create(
        {
          model: profile.model,
          input: texts,
          // Explicit floats: without it the SDK asks for base64, which not every compatible server speaks.
          encoding_format: 'float',
          ...(profile.config.dimensions ? { dimensions: profile.config.dimensions } : {}),
        },
        options,
      );
      const vectors = parseEmbeddings(profile.requested, response, texts.length, profile.config.dimensions);
      const promptTokens = response.usage?.prompt_tokens ?? 0;
      return {
        result: (latencyMs: number): EmbedResult => ({
          vectors,
          profile: profile.requested,
          model: profile.model,
          dimensions: vectors[0]?.length ?? 0,
          latencyMs,
          promptTokens,
        }),
        promptTokens,
        completionTokens: 0,
      };
    });
  }

  private async complete(
    request: ChatRequest | StructuredRequest<unknown>,
    format: StructuredOutput<unknown> | undefined,
  ): Promise<ChatResult> {
    const profile = this.resolveProfile(request.profile);
    if (!profile) {
      this.record(request.profile, 'unknown', 0, 0, 0, 'not_configured');
      throw new LlmNotConfiguredError(
        `LLM profile "${request.profile}" is not defined and there is no default profile`,
      );
    }
    if (!isCallable(profile)) {
      this.record(profile.requested, profile.model ?? 'unset', 0, 0, 0, 'not_configured');
      throw new LlmNotConfiguredError(`LLM profile "${profile.name}" has ${profile.missing ?? 'no model'}`);
    }
    const maxTokens = Math.min(profile.config.max_tokens, request.maxTokens ?? Number.POSITIVE_INFINITY);
    const cancelledPrompt = () => estimatedPromptTokens(request);
    return this.call(profile, request.signal, cancelledPrompt, async (client, options) => {
      const params: ChatCompletionCreateParamsNonStreaming = {
        model: profile.model,
        messages: request.messages,
        temperature: profile.config.temperature,
        max_tokens: maxTokens,
        ...responseFormat(profile.structuredOutput, format),
        ...('tools' in request && request.tools && request.tools.length > 0 ? { tools: request.tools } : {}),
      };
      const completion =
        'onText' in request && request.onText
          ? await streamedCompletion(client, params, options, request.onText)
          : await client.chat.completions.create(params, options);
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
      // The part of the prompt the provider served from its prompt cache (billed at a lower rate), where it says.
      const cachedPromptTokens = completion.usage?.prompt_tokens_details?.cached_tokens ?? 0;
      return {
        result: (latencyMs: number): ChatResult => ({
          content,
          toolCalls,
          profile: profile.requested,
          model: profile.model,
          latencyMs,
          promptTokens,
          cachedPromptTokens,
          completionTokens,
          finishReason: choice.finish_reason ?? null,
        }),
        promptTokens,
        cachedPromptTokens,
        completionTokens,
      };
    });
  }

  /**
   * One model call in a span, accounted as an `llm.call` whatever happens. Failures become typed LlmErrors; an
   * HTTP error is logged with the profile, the model, the status and the start of the body. A call the caller
   * cancelled is accounted with `cancelledPrompt` prompt tokens: the provider has the prompt and may bill it.
   */
  private async call<R>(
    profile: CallableProfile,
    signal: AbortSignal | undefined,
    cancelledPrompt: () => number,
    send: (
      client: OpenAI,
      options: RequestOptions,
    ) => Promise<{
      result: (latencyMs: number) => R;
      promptTokens: number;
      cachedPromptTokens?: number;
      completionTokens: number;
    }>,
  ): Promise<R> {
    const timeoutMs = Math.round(profile.config.timeout_seconds * 1000);
    const client = this.clientFor(profile);
    const started = performance.now();
    return this.tracing.span(
      `llm.${profile.requested}`,
      { 'llm.profile': profile.requested, 'llm.model': profile.model },
      async () => {
        try {
          const sent = await send(client, callOptions(timeoutMs, signal));
          const latencyMs = performance.now() - started;
          this.record(
            profile.requested,
            profile.model,
            latencyMs,
            sent.promptTokens,
            sent.completionTokens,
            'ok',
            sent.cachedPromptTokens,
          );
          this.noteCall(profile.name, null);
          return sent.result(latencyMs);
        } catch (error) {
          const mapped = signal?.aborted
            ? new LlmError(
                'cancelled',
                `LLM profile ${profile.requested} call cancelled by the caller`,
                undefined,
                {
                  cause: error,
                },
              )
            : this.mapError(profile, timeoutMs, error);
          if (mapped instanceof LlmHttpError) this.logger.warn(mapped.message);
          const outcome: LlmCallOutcome = mapped.kind === 'not_configured' ? 'error' : mapped.kind;
          const failedAfter = performance.now() - started;
          const billedPrompt = mapped.kind === 'cancelled' ? cancelledPrompt() : 0;
          this.record(profile.requested, profile.model, failedAfter, billedPrompt, 0, outcome, 0, mapped);
          if (mapped.kind !== 'cancelled') this.noteCall(profile.name, mapped);
          throw mapped;
        }
      },
    );
  }

  private mapError(profile: CallableProfile, timeoutMs: number, error: unknown): LlmError {
    const name = profile.requested;
    if (error instanceof LlmError) return error;
    const url = displayUrl(profile.baseUrl);
    if (error instanceof APIConnectionTimeoutError || error instanceof APIUserAbortError) {
      return new LlmTimeoutError(name, timeoutMs, url, error);
    }
    if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
      return new LlmTimeoutError(name, timeoutMs, url, error);
    }
    // "Connection error." says nothing: the system error under it says whether DNS, TCP or TLS failed.
    const network = error instanceof APIConnectionError ? networkFailure(error, profile.baseUrl) : null;
    if (network) return new LlmUnreachableError(name, url, network, error);
    if (error instanceof APIError && typeof error.status === 'number') {
      const headers: unknown = error.headers;
      const body = (headers instanceof Headers ? this.pools.errorBody(headers) : undefined) ?? error.message;
      return new LlmHttpError(name, profile.model, error.status, excerpt(body), error);
    }
    if (error instanceof SyntaxError) return new LlmInvalidResponseError(name, error.message, error);
    return new LlmError(
      'error',
      `LLM profile ${name} failed: ${error instanceof Error ? error.message : String(error)}`,
      undefined,
      { cause: error },
    );
  }

  private noteCall(profile: string, failure: LlmError | null): void {
    const at = new Date().toISOString();
    const previous = this.callHealth.get(profile) ?? NO_CALL_YET;
    this.callHealth.set(
      profile,
      failure
        ? {
            state: 'down',
            last_success_at: previous.last_success_at,
            last_failure: {
              at,
              kind: failure.kind,
              cause: failureCauseOf(failure),
              error: failure.message,
              ...(failure instanceof LlmHttpError ? { status: failure.status, body: failure.body } : {}),
            },
          }
        : { state: 'up', last_success_at: at, last_failure: previous.last_failure },
    );
  }

  private record(
    profile: string,
    model: string,
    latencyMs: number,
    promptTokens: number,
    completionTokens: number,
    outcome: LlmCallOutcome,
    cachedPromptTokens = 0,
    failure?: LlmError,
  ): void {
    const latency = Math.round(latencyMs * 100) / 100;
    const cause = failure ? failureCauseOf(failure) : null;
    this.events.emit('llm.call', {
      profile,
      model,
      latency_ms: latency,
      prompt_tokens: promptTokens,
      cached_prompt_tokens: cachedPromptTokens,
      completion_tokens: completionTokens,
      outcome,
      ...(cause === null ? {} : { cause }),
      ...(failure?.status === undefined ? {} : { status: failure.status }),
    });
    this.metrics.llmCalls.inc({ profile, outcome });
    if (outcome !== 'not_configured') this.metrics.llmLatency.observe({ profile }, latencyMs / 1000);
    if (promptTokens > 0) this.metrics.llmTokens.inc({ profile, kind: 'prompt' }, promptTokens);
    if (cachedPromptTokens > 0) {
      this.metrics.llmTokens.inc({ profile, kind: 'cached_prompt' }, cachedPromptTokens);
    }
    if (completionTokens > 0) this.metrics.llmTokens.inc({ profile, kind: 'completion' }, completionTokens);
  }

  private clientFor(profile: CallableProfile): OpenAI {
    const key = `${profile.baseUrl}|${profile.apiKey ?? ''}`;
    let client = this.clients.get(key);
    if (!client) {
      client = new OpenAI({
        baseURL: profile.baseUrl,
        // The SDK requires a key; endpoints without authentication ignore it.
        apiKey: profile.apiKey ?? 'not-set',
        maxRetries: 0,
        fetch: this.pools.fetchFor(profile.baseUrl),
      });
      this.clients.set(key, client);
    }
    return client;
  }
}

function statusOf(profile: ResolvedProfile): ProfileStatus {
  return {
    name: profile.name,
    tier: profile.config.tier,
    provider: profile.provider,
    model: profile.model ?? null,
    endpoint_configured: profile.baseUrl !== undefined,
    reachable: profile.reachable,
    missing: profile.missing,
  };
}

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
  format: StructuredOutput<unknown> | undefined,
): Pick<ChatCompletionCreateParamsNonStreaming, 'response_format'> {
  if (format === undefined || mode === 'none') return {};
  return mode === 'json_schema'
    ? { response_format: { type: 'json_schema', json_schema: format.jsonSchema } }
    : { response_format: { type: 'json_object' } };
}

/**
 * What a request's prompt counts in tokens, estimated as a quarter of its characters (messages and tools): the
 * usage of a call cancelled before the provider reported one.
 */
function estimatedPromptTokens(request: ChatRequest | StructuredRequest<unknown>): number {
  const messages = request.messages.reduce(
    (n, message) => n + (typeof message.content === 'string' ? message.content.length : 0),
    0,
  );
  const tools = 'tools' in request && request.tools ? JSON.stringify(request.tools).length : 0;
  return Math.ceil((messages + tools) / 4);
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
