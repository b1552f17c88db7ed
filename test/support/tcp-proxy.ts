import { connect, createServer, Server, Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy the tests (and the chaos drill) put between the app and a server (Postgres, Redis, NATS, an MCP
 * server, the fake LLM), so failures can be provoked for real without touching a server others share: refused
 * connections and dropped sockets (`cut`), answers that do not arrive until the test says so (`hold`), or a
 * server that accepts connections and never answers (`blackHole`); `sent` shows what went through.
 */
export class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  /** The client side of each connection. */
  private readonly clients = new Set<Socket>();
  private listenPort = 0;
  private holding = false;
  /** Per client socket, what the target sent while holding; `closed` when the target hung up meanwhile. */
  private held = new Map<Socket, { chunks: Buffer[]; closed: boolean }>();
  private blackHoled = false;
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

  /** A server that accepts connections and never answers: a proxy black-holed from the start, to nowhere. */
  static async blackHoled(): Promise<TcpProxy> {
    const proxy = new TcpProxy('127.0.0.1', 0);
    proxy.blackHole();
    await proxy.listen();
    return proxy;
  }

  get port(): number {
    return this.listenPort;
  }

  /** Everything clients sent to the target so far, as latin1 text (to count the requests a protocol made). */
  get sent(): string {
    return this.sentText;
  }

  /**
   * Open client connections through the proxy. One the target hung up stays counted until the client closed its
   * end too, so 0 means every client has read the target's last words and its close.
   */
  get connections(): number {
    return this.clients.size;
  }

  get isCut(): boolean {
    return this.server === null;
  }

  get isBlackHoled(): boolean {
    return this.blackHoled;
  }

  /** Drops every open connection and refuses new ones (ECONNREFUSED), like a database host that went away. */
  async cut(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    this.held.clear();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await closed;
  }

  /**
   * From now on, bytes coming back from the target are kept until `release()` (a stalled answer), and so is the
   * target hanging up: what it sent last and its close then reach the client together.
   */
  hold(): void {
    this.holding = true;
  }

  /**
   * Delivers everything held and stops holding. Each connection gets its bytes in one write, so the client reads
   * them at once (as when a server's last answer and its goodbye arrive in one segment), then the target's close.
   */
  release(): void {
    this.holding = false;
    const held = this.held;
    this.held = new Map();
    for (const [to, { chunks, closed }] of held) {
      if (to.destroyed) continue;
      if (chunks.length > 0) to.write(Buffer.concat(chunks));
      if (closed) to.end();
    }
  }

  /**
   * A server that hangs: every open connection stops answering (what clients send is swallowed) and new ones are
   * accepted and never answered, until `restore()`. Nothing is refused or closed, so only a client's own timeouts
   * can end its wait.
   */
  blackHole(): void {
    this.blackHoled = true;
  }

  /**
   * Accepts connections again, on the same port, after `cut`; after `blackHole`, the hung connections are reset
   * (a network path that comes back has lost them) and new ones reach the target again.
   */
  async restore(): Promise<void> {
    if (this.blackHoled) {
      this.blackHoled = false;
      for (const socket of this.sockets) socket.destroy();
      this.sockets.clear();
    }
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
    this.clients.add(client);
    client.on('close', () => this.clients.delete(client));
    if (this.blackHoled) {
      this.sockets.add(client);
      client.on('close', () => this.sockets.delete(client));
      client.on('error', () => client.destroy());
      return;
    }
    const upstream = connect(this.targetPort, this.targetHost);
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.setNoDelay(true);
      socket.on('close', () => this.sockets.delete(socket));
      // Either side failing ends both, as a real network path would (after what is held, if the target failed).
      socket.on('error', () => {
        if (socket === upstream && this.holding) {
          this.heldFor(client).closed = true;
          upstream.destroy();
          return;
        }
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('data', (chunk: Buffer) => {
      if (this.blackHoled) return;
      this.sentText += chunk.toString('latin1');
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (this.blackHoled) return;
      if (this.holding) this.heldFor(client).chunks.push(chunk);
      else client.write(chunk);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => {
      if (this.blackHoled) return;
      if (this.holding) this.heldFor(client).closed = true;
      // A FIN after what the target sent, as a real network path passes it on; the client closes its end itself.
      else client.end();
    });
  }

  private heldFor(client: Socket): { chunks: Buffer[]; closed: boolean } {
    let held = this.held.get(client);
    if (!held) {
      held = { chunks: [], closed: false };
      this.held.set(client, held);
    }
    return held;
  }
}
