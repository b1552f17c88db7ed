import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DemoModel, DemoReply, demoRequestSchema } from './demo-model';

/** Larger than any prompt the runtime builds. */
const MAX_BODY_BYTES = 1_000_000;
/** The stage of a request without a JSON schema: an agent's turn. */
export const AGENT_STAGE = 'agent';

/**
 * The demo model behind the OpenAI-compatible chat-completions API on a loopback port, so every model stage
 * reaches it through the same client, timeouts and accounting as a real endpoint.
 */
export class DemoModelServer {
  private readonly stages = new Map<string, number>();
  private served = 0;

  private constructor(
    private readonly server: Server,
    private readonly model: DemoModel,
    readonly baseUrl: string,
  ) {}

  static async start(model: DemoModel): Promise<DemoModelServer> {
    let instance: DemoModelServer | null = null;
    const server = createServer((request, response) => instance?.handle(request, response));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    instance = new DemoModelServer(server, model, `http://127.0.0.1:${port}/v1`);
    return instance;
  }

  /** How many requests were answered. */
  requests(): number {
    return this.served;
  }

  /** How many requests of a stage (its JSON schema's name, or `agent`) were answered. */
  requestsFor(stage: string): number {
    return this.stages.get(stage) ?? 0;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    if (request.method === 'GET' && request.url === '/v1/models') {
      send(response, 200, {
        object: 'list',
        data: [{ id: 'demo', object: 'model', owned_by: 'agent-runtime' }],
      });
      return;
    }
    if (request.method !== 'POST' || request.url !== '/v1/chat/completions') {
      send(response, 404, apiError(`the demo model serves POST /v1/chat/completions only`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) request.destroy();
      else chunks.push(chunk);
    });
    request.on('end', () => this.complete(Buffer.concat(chunks).toString('utf8'), response));
  }

  private complete(body: string, response: ServerResponse): void {
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      send(response, 400, apiError('the body is not JSON'));
      return;
    }
    const parsed = demoRequestSchema.safeParse(json);
    if (!parsed.success) {
      send(
        response,
        400,
        apiError(`not a chat-completions request: ${parsed.error.issues[0]?.message ?? ''}`),
      );
      return;
    }
    const request = parsed.data;
    const format = request.response_format;
    const stage = format?.type === 'json_schema' ? format.json_schema.name : AGENT_STAGE;
    this.stages.set(stage, this.requestsFor(stage) + 1);
    const reply = this.model.reply(request);
    const prompt = request.messages.reduce((sum, m) => sum + (m.content?.length ?? 0), 0);
    const answer = completion(++this.served, request.model, reply, prompt);
    if (request.stream === true) sendChunks(response, answer);
    else send(response, 200, answer);
  }
}

/** A completion as a stream asks for it: the whole message in one chunk, then the usage, then `[DONE]`. */
function sendChunks(response: ServerResponse, answer: ReturnType<typeof completion>): void {
  const [choice] = answer.choices;
  const { tool_calls: calls, ...message } = choice.message;
  const delta = calls
    ? { ...message, tool_calls: calls.map((call, index) => ({ index, ...call })) }
    : message;
  const chunk = (body: object) => `data: ${JSON.stringify({ ...body, object: 'chat.completion.chunk' })}\n\n`;
  const { id, created, model, usage } = answer;
  response.writeHead(200, { 'content-type': 'text/event-stream' });
  response.end(
    chunk({ id, created, model, choices: [{ index: 0, delta, finish_reason: choice.finish_reason }] }) +
      chunk({ id, created, model, choices: [], usage }) +
      'data: [DONE]\n\n',
  );
}

function completion(id: number, model: string, reply: DemoReply, promptChars: number) {
  const message =
    'content' in reply
      ? { role: 'assistant', content: reply.content }
      : {
          role: 'assistant',
          content: null,
          tool_calls: reply.toolCalls.map((call, index) => ({
            id: `call_demo_${id}_${index}`,
            type: 'function',
            function: call,
          })),
        };
  const completionChars = 'content' in reply ? reply.content.length : JSON.stringify(reply.toolCalls).length;
  // Tokens as a rough four characters each, so the console's figures are not all zero.
  const usage = {
    prompt_tokens: Math.ceil(promptChars / 4),
    completion_tokens: Math.ceil(completionChars / 4),
  };
  return {
    id: `demo-${id}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message, finish_reason: 'content' in reply ? 'stop' : 'tool_calls' }],
    usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
  };
}

function apiError(message: string) {
  return { error: { message, type: 'invalid_request_error' } };
}

function send(response: ServerResponse, status: number, body: object): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}
