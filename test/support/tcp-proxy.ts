import { connect, createServer, Server, Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy the tests put between the app and a server (Postgres, the fake LLM), so failures can be provoked
 * for real without touching a server other tests share: refused connections and dropped sockets (`cut`), or
 * answers that do not arrive until the test says so (`hold`); `sent` shows what went through.
 */
export class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private listenPort = 0;
  private holding = false;
  private held: { to: Socket; chunk: Buffer }[] = [];
  private sentText = '';

  private constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** A proxy to the host and port of a URL (postgres://, http://), and the same URL pointing at the proxy. */
  static async forUrl(target: string): Promise<{ proxy: TcpProxy; url: string }> {
    const parsed = new URL(target);
    const defaultPort = parsed.protocol === 'http:' ? 80 : parsed.protocol === 'https:' ? 443 : 5432;
    const proxy = new TcpProxy(parsed.hostname, Number(parsed.port || defaultPort));
    await proxy.listen();
    parsed.hostname = '127.0.0.1';
    parsed.port = String(proxy.port);
    return { proxy, url: parsed.toString() };
  }

  get port(): number {
    return this.listenPort;
  }

  /** Everything clients sent to the target so far, as latin1 text (to count the requests a protocol made). */
  get sent(): string {
    return this.sentText;
  }

  /** Open client connections through the proxy. */
  get connections(): number {
    return this.sockets.size / 2;
  }

  get isCut(): boolean {
    return this.server === null;
  }

  /** Drops every open connection and refuses new ones (ECONNREFUSED), like a database host that went away. */
  async cut(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    this.held = [];
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await closed;
  }

  /** From now on, bytes coming back from the target are kept until `release()` (a stalled answer). */
  hold(): void {
    this.holding = true;
  }

  /** Delivers everything held, in order, and stops holding. */
  release(): void {
    this.holding = false;
    const held = this.held;
    this.held = [];
    for (const { to, chunk } of held) if (!to.destroyed) to.write(chunk);
  }

  /** Accepts connections again, on the same port. */
  async restore(): Promise<void> {
    if (!this.server) await this.listen();
  }

  async stop(): Promise<void> {
    await this.cut();
  }

  private async listen(): Promise<void> {
    const server = createServer((client) => this.pipe(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.listenPort, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.listenPort = (server.address() as AddressInfo).port;
    this.server = server;
  }

  private pipe(client: Socket): void {
    const upstream = connect(this.targetPort, this.targetHost);
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.setNoDelay(true);
      socket.on('close', () => this.sockets.delete(socket));
      // Either side failing ends both, as a real network path would.
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('data', (chunk: Buffer) => {
      this.sentText += chunk.toString('latin1');
    });
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      if (this.holding) this.held.push({ to: client, chunk });
      else client.write(chunk);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }
}
