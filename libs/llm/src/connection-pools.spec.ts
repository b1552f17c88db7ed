import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConnectionPools } from './connection-pools';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

describe('ConnectionPools', () => {
  let server: Server;
  let handler: Handler;
  let connections: number;
  let base: string;
  let pools: ConnectionPools;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => handler(req, Buffer.concat(chunks).toString('utf8'), res));
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    connections = 0;
    pools = new ConnectionPools();
    handler = (req, body, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': ['a=1', 'b=2'] });
      res.end(JSON.stringify({ method: req.method, url: req.url, auth: req.headers.authorization, body }));
    };
  });
  afterEach(() => pools.destroy());

  it('sends the method, headers and body, and answers a Response', async () => {
    const fetch = pools.fetchFor(`${base}/v1`);
    const response = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: new Headers({ authorization: 'Bearer k' }),
      body: '{"model":"m"}',
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('set-cookie')).toBe('a=1, b=2');
    expect(await response.json()).toEqual({
      method: 'POST',
      url: '/v1/chat/completions',
      auth: 'Bearer k',
      body: '{"model":"m"}',
    });
  });

  it('keeps one connection for sequential calls, shared by every base URL of the origin', async () => {
    const first = pools.fetchFor(`${base}/v1`);
    const second = pools.fetchFor(`${base}/other/v1`);
    for (let i = 0; i < 5; i++) {
      await (await first(`${base}/v1/x`, { method: 'POST', body: 'a' })).text();
      await (await second(`${base}/other/v1/x`, { method: 'POST', body: 'b' })).text();
    }
    expect(connections).toBe(1);
  });

  it('answers a body-less status without a body', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(204);
      res.end();
    };
    const response = await pools.fetchFor(base)(`${base}/x`, { method: 'DELETE' });
    expect(response.status).toBe(204);
    expect(response.body).toBeNull();
  });

  it('aborts an unanswered request on its signal with an AbortError, and drops that connection', async () => {
    const controller = new AbortController();
    // The server has the request and never answers: the caller gives up.
    handler = () => controller.abort();
    const pending = pools.fetchFor(base)(`${base}/slow`, {
      method: 'POST',
      body: 'x',
      signal: controller.signal,
    });
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    handler = (_req, _body, res) => res.end('ok');
    expect(await (await pools.fetchFor(base)(`${base}/x`, { method: 'GET' })).text()).toBe('ok');
    expect(connections).toBe(2);
    const aborted = new AbortController();
    aborted.abort();
    await expect(pools.fetchFor(base)(`${base}/x`, { signal: aborted.signal })).rejects.toMatchObject({
      name: 'AbortError',
    });
  });

  it('rejects a refused connection and a body it cannot send', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await expect(
      pools.fetchFor(`http://127.0.0.1:${port}`)(`http://127.0.0.1:${port}/x`),
    ).rejects.toMatchObject({
      name: 'TypeError',
      message: 'fetch failed',
      cause: { code: 'ECONNREFUSED' },
    });
    await expect(
      pools.fetchFor(base)(`${base}/x`, { method: 'POST', body: new URLSearchParams({ a: '1' }) }),
    ).rejects.toBeInstanceOf(TypeError);
  });
});
