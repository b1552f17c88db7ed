import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ReferenceStore } from './store';
import { createReferenceMcpServer, SERVER_NAME, SERVER_VERSION } from './tools';

const MAX_BODY_BYTES = 1024 * 1024;

export interface HttpServerOptions {
  store: ReferenceStore;
  path: string;
  log: (message: string) => void;
}

/**
 * Streamable HTTP in stateless mode: every POST gets its own server and transport, so any replica behind a
 * load balancer can answer any request and a restart never strands a client's session.
 */
export function createHttpServer(options: HttpServerOptions): Server {
  return createServer((req, res) => {
    void handle(req, res, options).catch((error: unknown) => {
      options.log(`request failed: ${error instanceof Error ? error.message : String(error)}`);
      if (!res.headersSent) sendJson(res, 500, jsonRpcError(-32603, 'Internal server error'));
      else res.end();
    });
  });
}

async function handle(req: IncomingMessage, res: ServerResponse, options: HttpServerOptions): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname === '/health') {
    try {
      await options.store.ping();
      return sendJson(res, 200, { status: 'ok', name: SERVER_NAME, version: SERVER_VERSION });
    } catch (error) {
      return sendJson(res, 503, {
        status: 'error',
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
  if (url.pathname !== options.path) return sendJson(res, 404, { error: 'not found' });
  if (req.method !== 'POST') {
    // Stateless: no standalone SSE stream (GET) and no session to delete (DELETE).
    res.setHeader('allow', 'POST');
    return sendJson(res, 405, jsonRpcError(-32000, 'Method not allowed.'));
  }
  const body = await readBody(req);
  if (body === null) return sendJson(res, 413, jsonRpcError(-32600, 'Request body too large.'));
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return sendJson(res, 400, jsonRpcError(-32700, 'Parse error'));
  }
  const server = createReferenceMcpServer(options.store);
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, parsed);
}

async function readBody(req: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function jsonRpcError(code: number, message: string): Record<string, unknown> {
  return { jsonrpc: '2.0', error: { code, message }, id: null };
}

function sendJson(res: ServerResponse, status: number, payload: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(payload));
}
