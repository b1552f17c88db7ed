import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';

/**
 * A real HTTP server speaking the OpenAI chat-completions API, scripted per test.
 * Tests, the demo and the benchmarks point LLM_BASE_URL at it; production code never knows it exists.
 */
export interface FakeChatRequest {
  model: string;
  messages: { role: string; content?: string | null; tool_calls?: unknown; tool_call_id?: string }[];
  body: Record<string, unknown>;
  at: number;
  /** When a completion was sent back (Date.now()); absent until then, and for a failure or a cancelled call. */
  answeredAt?: number;
}

export interface FakeToolCall {
  id?: string;
  name: string;
  arguments: Record<string, unknown> | string;
}

export interface FakeReply {
  /** Text content of the assistant message. */
  content?: string | null;
  /** Serialized with JSON.stringify into `content`. */
  json?: unknown;
  tool_calls?: FakeToolCall[];
  /** Wait before answering (to provoke timeouts or measure latency). */
  delayMs?: number;
  /** Answer with this HTTP status and an OpenAI-style error body (or `rawBody` when given). */
  status?: number;
  /** Send this raw body instead of a valid completion (malformed responses). */
  rawBody?: string;
  /** Close the connection without answering (a crashed or killed model server). */
  hangUp?: boolean;
  usage?: { prompt_tokens: number; completion_tokens: number; cached_tokens?: number };
  /** A streamed request (`stream: true`) gets the content in these pieces instead of `streaming.chunkChars`. */
  chunks?: string[];
  /** A streamed request: after this many content pieces the server stops sending and keeps the connection open. */
  stallAfterChunks?: number;
  /** A streamed request: after this many content pieces the server ends the response, with no finish reason. */
  endAfterChunks?: number;
}

/** How a streamed answer is paced: a time to the first token, then one piece every `tokenIntervalMs`. */
export interface FakeStreaming {
  firstTokenMs: number;
  tokenIntervalMs: number;
  /** Characters per piece when the reply gives no `chunks`. */
  chunkChars: number;
}

/**
 * How the server imitates a provider's prompt cache: the prompt's prefix shared with the previous request for
 * the same model counts as cached, in whole blocks, once it reaches the minimum (OpenAI's documented rule is
 * 1,024 tokens in blocks of 128). Tokens are characters / 4, as the usage this server reports.
 */
export interface FakePromptCache {
  minTokens: number;
  blockTokens: number;
}

export interface FakeScript {
  /** Matches the request's `model`. */
  model?: string;
  /** Matches on anything in the request. */
  when?: (request: FakeChatRequest) => boolean;
  reply: FakeReply | ((request: FakeChatRequest) => FakeReply);
  /** How many requests this script answers; unlimited when absent. */
  times?: number;
}

/** The text of every message of a request, joined: handy in `when` predicates. */
export function requestText(request: FakeChatRequest): string {
  return request.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
}

const offeredToolsSchema = z.array(z.object({ function: z.object({ name: z.string() }) })).catch([]);

/** The names of the tools a request offers the model. */
export function offeredTools(request: FakeChatRequest): string[] {
  return offeredToolsSchema.parse(request.body.tools ?? []).map((tool) => tool.function.name);
}

/** Whether a request carries a tool's result (the call after the model asked for a tool). */
export function hasToolMessage(request: FakeChatRequest): boolean {
  return request.messages.some((m) => m.role === 'tool');
}

/** The invoice in consultar_fatura's result, as the reference MCP server returns it. */
export interface ToolInvoice {
  invoice_id: string;
  amount: number;
  due_date: string;
}

/**
 * Scripts the agent to ask consultar_fatura for `msisdn`, then to answer from the invoice in the tool's result
 * with `answer` (the scripts go after any already there, so earlier ones answer first).
 */
export function scriptInvoiceLookup(
  fake: FakeLlmServer,
  msisdn: string,
  answer: (invoice: ToolInvoice) => string,
): void {
  fake.script({
    model: 'agent',
    when: (request) => !hasToolMessage(request),
    reply: { content: null, tool_calls: [{ name: 'consultar_fatura', arguments: { msisdn } }] },
  });
  fake.script({
    model: 'agent',
    when: hasToolMessage,
    reply: (request) => {
      const tool = request.messages.find((m) => m.role === 'tool');
      const { result } = JSON.parse(String(tool?.content)) as { result: { invoice: ToolInvoice } };
      return { content: answer(result.invoice) };
    },
  });
}

/** The last user message of a request. */
export function lastUserMessage(request: FakeChatRequest): string {
  const users = request.messages.filter((m) => m.role === 'user');
  const last = users[users.length - 1];
  return typeof last?.content === 'string' ? last.content : '';
}

/** The rail codes a guardrail verdict request asks about (the "CODE: instruction" lines of its checks). */
export function guardrailChecks(request: FakeChatRequest): string[] {
  const system = request.messages.find((m) => m.role === 'system')?.content;
  return [...(typeof system === 'string' ? system : '').matchAll(/^([A-Z][A-Z_]*): /gm)].map((m) => m[1]);
}

/** The guardrail model's verdict for every rail the request asks about: `block` for `blocked`, else `allow`. */
export function guardrailVerdict(request: FakeChatRequest, blocked: readonly string[] = []): FakeReply {
  return {
    json: Object.fromEntries(
      guardrailChecks(request).map((code) => [
        code,
        blocked.includes(code)
          ? { verdict: 'block', confidence: 0.95, reason: 'scripted block' }
          : { verdict: 'allow', confidence: 0.95 },
      ]),
    ),
  };
}

/** The guardrail model allows every rail: for tests that are not about guardrails. */
export const GUARDRAILS_ALLOW: FakeScript = {
  model: 'guardrail',
  reply: (request) => guardrailVerdict(request),
};

/**
 * A deterministic embedding: a hashed bag of words (lower-cased, accents removed), L2-normalized, so texts
 * sharing words are close in cosine distance and a test can predict the ranking.
 */
export function fakeEmbedding(text: string, dimensions: number): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  const words = text
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word.length >= 3);
  for (const word of words) {
    let hash = 2166136261;
    for (let i = 0; i < word.length; i++) hash = Math.imul(hash ^ word.charCodeAt(i), 16777619);
    vector[(hash >>> 0) % dimensions] += 1;
  }
  const norm = Math.sqrt(vector.reduce((sum, v) => sum + v * v, 0));
  // An empty text still gets a valid (non-zero) vector: cosine distance is undefined for the zero vector.
  if (norm === 0) {
    vector[0] = 1;
    return vector;
  }
  return vector.map((v) => v / norm);
}

export class FakeLlmServer {
  readonly requests: FakeChatRequest[] = [];
  /** Requests the client went away from before the answer was sent (a cancelled call). */
  readonly cancelled: FakeChatRequest[] = [];
  /** TCP connections accepted since start: a client with a keep-alive pool opens one for sequential calls. */
  connections = 0;
  /** Size of the vectors POST /v1/embeddings returns when the request does not ask for `dimensions`. */
  embeddingDimensions = 64;
  /** Reports cached prompt tokens as a provider with this cache rule would; none when null. */
  promptCache: FakePromptCache | null = null;
  /** Pacing of streamed answers (requests with `stream: true`). */
  streaming: FakeStreaming = { firstTokenMs: 0, tokenIntervalMs: 0, chunkChars: 4 };
  /** When each streamed answer sent its first content piece, by request index (for benchmarks). */
  readonly firstTokenAt: number[] = [];
  private readonly lastPrompt = new Map<string, string>();
  private scripts: { script: FakeScript; used: number }[] = [];
  private fallback: FakeReply | null = null;
  private readonly sockets = new Set<import('node:net').Socket>();

  private constructor(private readonly server: Server) {}

  static async start(port = 0): Promise<FakeLlmServer> {
    let instance: FakeLlmServer | null = null;
    const server = createServer((req, res) => {
      void instance?.handle(req, res);
    });
    instance = new FakeLlmServer(server);
    server.on('connection', (socket) => {
      if (instance) instance.connections++;
      instance?.sockets.add(socket);
      socket.on('close', () => instance?.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    return instance;
  }

  /** The value for LLM_BASE_URL. */
  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  /** Adds a script; earlier scripts win. Returns this for chaining. */
  script(script: FakeScript): this {
    this.scripts.push({ script, used: 0 });
    return this;
  }

  /** Answer used when no script matches (otherwise an unmatched request gets HTTP 500). */
  setFallback(reply: FakeReply | null): this {
    this.fallback = reply;
    return this;
  }

  requestsFor(model: string): FakeChatRequest[] {
    return this.requests.filter((r) => r.model === model);
  }

  cancelledFor(model: string): FakeChatRequest[] {
    return this.cancelled.filter((r) => r.model === model);
  }

  reset(): void {
    this.scripts = [];
    this.fallback = null;
    this.requests.length = 0;
    this.cancelled.length = 0;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The cached part of `prompt` under `promptCache`, remembering it as the model's latest prompt. */
  private cachedTokens(model: string, prompt: string): number {
    const previous = this.lastPrompt.get(model) ?? '';
    this.lastPrompt.set(model, prompt);
    if (!this.promptCache) return 0;
    let shared = 0;
    const max = Math.min(previous.length, prompt.length);
    while (shared < max && previous.charCodeAt(shared) === prompt.charCodeAt(shared)) shared++;
    const { minTokens, blockTokens } = this.promptCache;
    const tokens = Math.floor(shared / 4 / blockTokens) * blockTokens;
    return tokens >= minTokens ? tokens : 0;
  }

  private embed(request: FakeChatRequest, res: ServerResponse): Promise<void> {
    const entry = this.scripts.find(
      ({ script, used }) =>
        (script.times === undefined || used < script.times) &&
        script.model === request.model &&
        (script.when === undefined || script.when(request)),
    );
    let reply: FakeReply | null = null;
    if (entry) {
      entry.used++;
      reply = typeof entry.script.reply === 'function' ? entry.script.reply(request) : entry.script.reply;
    }
    return embedReply(this, reply, request, res);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const embeddings = req.method === 'POST' && /\/embeddings$/.test(req.url ?? '');
    if (!embeddings && (req.method !== 'POST' || !/\/chat\/completions$/.test(req.url ?? ''))) {
      return send(res, 404, { error: { message: `no route ${req.method} ${req.url}`, type: 'not_found' } });
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    } catch {
      return send(res, 400, { error: { message: 'invalid JSON body', type: 'invalid_request_error' } });
    }
    const request: FakeChatRequest = {
      model: typeof body.model === 'string' ? body.model : '',
      messages: Array.isArray(body.messages) ? (body.messages as FakeChatRequest['messages']) : [],
      body,
      at: Date.now(),
    };
    this.requests.push(request);
    res.on('close', () => {
      if (!res.writableFinished) this.cancelled.push(request);
    });
    if (embeddings) return this.embed(request, res);
    const entry = this.scripts.find(
      ({ script, used }) =>
        (script.times === undefined || used < script.times) &&
        (script.model === undefined || script.model === request.model) &&
        (script.when === undefined || script.when(request)),
    );
    let reply: FakeReply | null = this.fallback;
    if (entry) {
      entry.used++;
      reply = typeof entry.script.reply === 'function' ? entry.script.reply(request) : entry.script.reply;
    }
    if (!reply) {
      return send(res, 500, {
        error: { message: `fake-llm: no script matched model ${request.model}`, type: 'server_error' },
      });
    }
    if (reply.delayMs) {
      // unref: a pending delay must not keep the test process alive after stop().
      await new Promise((resolve) => setTimeout(resolve, reply.delayMs).unref());
      // req.destroyed is true as soon as the body was read; res.destroyed means the client went away.
      if (res.destroyed) return;
    }
    if (reply.hangUp) {
      res.socket?.destroy();
      return;
    }
    if (reply.rawBody !== undefined) {
      res.writeHead(reply.status ?? 200, { 'content-type': 'application/json' });
      res.end(reply.rawBody);
      return;
    }
    if (reply.status && reply.status >= 400) {
      return send(res, reply.status, {
        error: { message: `scripted failure ${reply.status}`, type: 'server_error' },
      });
    }
    const content = reply.json !== undefined ? JSON.stringify(reply.json) : (reply.content ?? null);
    const toolCalls = (reply.tool_calls ?? []).map((call, index) => ({
      id: call.id ?? `call_${this.requests.length}_${index}`,
      type: 'function',
      function: {
        name: call.name,
        arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
      },
    }));
    const prompt = request.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('');
    const promptChars = prompt.length;
    const cachedTokens = reply.usage?.cached_tokens ?? this.cachedTokens(request.model, prompt);
    const usage = {
      ...(reply.usage
        ? {
            prompt_tokens: reply.usage.prompt_tokens,
            completion_tokens: reply.usage.completion_tokens,
            total_tokens: reply.usage.prompt_tokens + reply.usage.completion_tokens,
          }
        : {
            prompt_tokens: Math.ceil(promptChars / 4),
            completion_tokens: Math.ceil((content ?? '').length / 4) + toolCalls.length * 10,
            total_tokens: Math.ceil(promptChars / 4) + Math.ceil((content ?? '').length / 4),
          }),
      ...(cachedTokens > 0 ? { prompt_tokens_details: { cached_tokens: cachedTokens } } : {}),
    };
    const id = `chatcmpl-fake-${this.requests.length}`;
    if (request.body.stream === true) {
      return this.stream(res, request, reply, { id, content, toolCalls, usage });
    }
    request.answeredAt = Date.now();
    send(res, 200, {
      id,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: request.model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) },
          finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
        },
      ],
      usage,
    });
  }

  /**
   * A chat completion as server-sent `chat.completion.chunk` events, paced by `streaming`: content in pieces,
   * each tool call as a name then its arguments in two halves, usage in a last chunk when the request asked
   * for it (`stream_options.include_usage`), then `[DONE]`.
   */
  private async stream(
    res: ServerResponse,
    request: FakeChatRequest,
    reply: FakeReply,
    answer: {
      id: string;
      content: string | null;
      toolCalls: { id: string; function: { name: string; arguments: string } }[];
      usage: Record<string, unknown>;
    },
  ): Promise<void> {
    const index = this.requests.indexOf(request);
    const { firstTokenMs, tokenIntervalMs, chunkChars } = this.streaming;
    const pause = (ms: number) =>
      ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms).unref()) : Promise.resolve();
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({
        id: answer.id,
        object: 'chat.completion.chunk',
        created: Math.floor(Date.now() / 1000),
        model: request.model,
        choices: [{ index: 0, delta, finish_reason: finish }],
      })}\n\n`;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(chunk({ role: 'assistant', content: '' }));
    await pause(firstTokenMs);
    const text = answer.content ?? '';
    const pieces = reply.chunks ?? text.match(new RegExp(`[\\s\\S]{1,${chunkChars}}`, 'g')) ?? [];
    for (const [n, piece] of pieces.entries()) {
      if (res.destroyed) return;
      if (reply.stallAfterChunks !== undefined && n >= reply.stallAfterChunks) return;
      if (reply.endAfterChunks !== undefined && n >= reply.endAfterChunks) {
        res.end();
        return;
      }
      if (n === 0) this.firstTokenAt[index] = performance.now();
      res.write(chunk({ content: piece }));
      if (n < pieces.length - 1) await pause(tokenIntervalMs);
    }
    for (const [n, call] of answer.toolCalls.entries()) {
      const half = Math.ceil(call.function.arguments.length / 2);
      res.write(
        chunk({
          tool_calls: [
            {
              index: n,
              id: call.id,
              type: 'function',
              function: { name: call.function.name, arguments: '' },
            },
          ],
        }),
      );
      for (const part of [call.function.arguments.slice(0, half), call.function.arguments.slice(half)]) {
        res.write(chunk({ tool_calls: [{ index: n, function: { arguments: part } }] }));
      }
    }
    res.write(chunk({}, answer.toolCalls.length > 0 ? 'tool_calls' : 'stop'));
    const options = request.body.stream_options as { include_usage?: boolean } | undefined;
    if (options?.include_usage === true) {
      res.write(
        `data: ${JSON.stringify({ id: answer.id, object: 'chat.completion.chunk', model: request.model, choices: [], usage: answer.usage })}\n\n`,
      );
    }
    request.answeredAt = Date.now();
    res.end('data: [DONE]\n\n');
  }
}

/**
 * POST /v1/embeddings: deterministic vectors (fakeEmbedding) unless a script matching the request's model
 * answers with a delay or a failure status.
 */
async function embedReply(
  server: FakeLlmServer,
  reply: FakeReply | null,
  request: FakeChatRequest,
  res: ServerResponse,
): Promise<void> {
  if (reply?.delayMs) {
    await new Promise((resolve) => setTimeout(resolve, reply.delayMs).unref());
    if (res.destroyed) return;
  }
  if (reply?.rawBody !== undefined) {
    res.writeHead(reply.status ?? 200, { 'content-type': 'application/json' });
    res.end(reply.rawBody);
    return;
  }
  if (reply?.status && reply.status >= 400) {
    return send(res, reply.status, {
      error: { message: `scripted failure ${reply.status}`, type: 'server_error' },
    });
  }
  const input = request.body.input;
  const texts = typeof input === 'string' ? [input] : Array.isArray(input) ? input.map(String) : [];
  const requested = request.body.dimensions;
  const dimensions = typeof requested === 'number' && requested > 0 ? requested : server.embeddingDimensions;
  const tokens = texts.reduce((n, text) => n + Math.ceil(text.length / 4), 0);
  send(res, 200, {
    object: 'list',
    model: request.model,
    data: texts.map((text, index) => ({
      object: 'embedding',
      index,
      embedding: fakeEmbedding(text, dimensions),
    })),
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  });
}

function send(res: ServerResponse, status: number, payload: unknown): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(payload));
}
