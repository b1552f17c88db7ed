import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A request as the receiver got it. */
export interface ReceivedWebhook {
  path: string;
  headers: Record<string, string>;
  body: string;
  document: { id: string; type: string; timestamp: string; data: Record<string, unknown> };
  /** How the receiver answered it. */
  answer: Answer;
  /** When it arrived (ms since the epoch). */
  at: number;
}

/**
 * `ok` 200, `fail` 500, `hang` never answers (the sender's timeout ends it), `redirect` 307 to the same path with
 * `/redirected` in front (a sender that followed it would post there).
 */
export type Answer = 'ok' | 'fail' | 'hang' | 'redirect';

/** A real HTTP server standing in for a tenant's webhook endpoint; a test scripts its answers. */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  /** Decides each answer from the request and how many earlier requests carried its webhook-id. */
  answer: (request: Omit<ReceivedWebhook, 'answer' | 'at'>, earlier: number) => Answer = () => 'ok';

  private readonly dir = mkdtempSync(join(tmpdir(), 'webhooks-'));

  private constructor(private readonly server: Server) {}

  static async start(): Promise<WebhookReceiver> {
    const server = createServer();
    const receiver = new WebhookReceiver(server);
    server.on('request', (request, response) => void receiver.handle(request, response));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  url(path: string): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  /** A webhooks.yaml with one endpoint posting to `path` of this receiver (JSON is YAML); removed on stop. */
  webhooksFile(path: string, endpoint: Record<string, unknown>): string {
    const file = join(this.dir, 'webhooks.yaml');
    writeFileSync(file, JSON.stringify({ endpoints: [{ url: this.url(path), ...endpoint }] }));
    return file;
  }

  /** The requests that carried this webhook-id, in arrival order. */
  attempts(id: string): ReceivedWebhook[] {
    return this.received.filter((request) => request.document.id === id);
  }

  /** The requests answered 200 whose event matches. */
  delivered(match: (request: ReceivedWebhook) => boolean): ReceivedWebhook[] {
    return this.received.filter((request) => request.answer === 'ok' && match(request));
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const headers = Object.fromEntries(
      Object.entries(request.headers).map(([name, value]) => [name, String(value)]),
    );
    const at = Date.now();
    const seen = {
      path: request.url ?? '',
      headers,
      body,
      document: JSON.parse(body) as ReceivedWebhook['document'],
    };
    const answer = this.answer(seen, this.attempts(seen.document.id).length);
    this.received.push({ ...seen, answer, at });
    if (answer === 'hang') return;
    if (answer === 'redirect') {
      response.writeHead(307, { location: `/redirected${seen.path}` }).end();
      return;
    }
    response.writeHead(answer === 'ok' ? 200 : 500).end(answer);
  }
}
