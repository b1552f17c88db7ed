import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResult, ErrorCode, McpError, Tool } from '@modelcontextprotocol/sdk/types.js';
import { isAbsolute, resolve } from 'node:path';
import { describeError, McpTimeoutError, McpUnavailableError } from './mcp.errors';
import { expandEnv, McpServerConfig } from './mcp-servers.schema';

export interface ConnectionSettings {
  connectTimeoutMs: number;
  callTimeoutMs: number;
  toolsCacheTtlMs: number;
  /** Resolves a relative stdio `cwd` (the config directory's parent, i.e. the repository root). */
  baseDir: string;
  clientVersion: string;
  log: (message: string) => void;
}

/** What readiness says of a server: from its last contact, never from a call of its own. */
export interface McpServerHealth {
  /** `unknown` until a turn needed the server; then whether its last contact succeeded. */
  state: 'unknown' | 'up' | 'down';
  last_success_at: string | null;
  /** `unavailable`: no connection (refused, dropped); `timeout`: connected but no answer in time. */
  last_failure: { at: string; cause: 'unavailable' | 'timeout'; error: string } | null;
}

const BACKOFF_BASE_MS = 200;
const BACKOFF_MAX_MS = 2000;

/**
 * One reusable MCP session per configured server. Connects lazily, shares the connection between
 * concurrent calls, drops it when the transport closes or a call shows it is gone, reconnects once for
 * that call, and after a failed connect fails fast for a short, growing back-off instead of hammering a
 * server that is down. The tool list is fetched once and kept until the server announces a change
 * (notifications/tools/list_changed), the session is replaced, or MCP_TOOLS_CACHE_TTL_MS passes (for
 * servers whose notifications cannot reach the client, such as stateless HTTP ones).
 */
export class McpConnection {
  private client: Client | null = null;
  private connecting: Promise<Client> | null = null;
  /** The last listing; `stale` once the server changed it or the session was replaced (kept as fallback). */
  private tools: { at: number; list: Tool[]; stale: boolean } | null = null;
  /** The listing in flight, shared by the turns that need it meanwhile. */
  private listing: Promise<Tool[]> | null = null;
  /** Bumped by each change notification, so a listing that started before it is not kept as fresh. */
  private toolsVersion = 0;
  private failures = 0;
  private retryAt = 0;
  private closed = false;
  /** Whether the last contact succeeded; null before the first. */
  private lastContactOk: boolean | null = null;
  private lastSuccessAt: string | null = null;
  private lastFailure: McpServerHealth['last_failure'] = null;

  constructor(
    readonly name: string,
    readonly config: McpServerConfig,
    private readonly settings: ConnectionSettings,
  ) {}

  get timeoutMs(): number {
    return this.config.timeout_ms ?? this.settings.callTimeoutMs;
  }

  async callTool(toolName: string, args: Record<string, unknown>): Promise<CallToolResult> {
    return this.withReconnect(async (client) => {
      const result = await client.callTool({ name: toolName, arguments: args }, undefined, {
        timeout: this.timeoutMs,
      });
      return result as CallToolResult;
    });
  }

  /** The server's tool list: the same array until it changes, so callers may cache what they derive from it. */
  listTools(): Promise<Tool[]> {
    const cached = this.tools;
    if (cached && !cached.stale && Date.now() - cached.at < this.settings.toolsCacheTtlMs) {
      return Promise.resolve(cached.list);
    }
    if (!this.listing) {
      const listing = this.fetchTools();
      const settled = () => {
        if (this.listing === listing) this.listing = null;
      };
      listing.then(settled, settled);
      this.listing = listing;
    }
    return this.listing;
  }

  /** Tools cached from an earlier listing, even if stale (used when the server is down). */
  cachedTools(): Tool[] | null {
    return this.tools?.list ?? null;
  }

  health(): McpServerHealth {
    return {
      state: this.lastContactOk === null ? 'unknown' : this.lastContactOk ? 'up' : 'down',
      last_success_at: this.lastSuccessAt,
      last_failure: this.lastFailure,
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.drop();
  }

  private async fetchTools(): Promise<Tool[]> {
    const version = this.toolsVersion;
    const list = await this.withReconnect(async (client) => {
      const tools: Tool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.timeoutMs });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      return tools;
    });
    if (version === this.toolsVersion) this.tools = { at: Date.now(), list, stale: false };
    return list;
  }

  /** The server changed its tools: forget the listing and fetch the new one before a turn needs it. */
  private toolsChanged(client: Client): void {
    if (this.client !== client) return;
    this.toolsVersion++;
    if (this.tools) this.tools.stale = true;
    this.listing = null;
    this.listTools().catch((error: unknown) =>
      this.settings.log(`MCP server ${this.name}: tools/list after a change failed: ${describeError(error)}`),
    );
  }

  private async withReconnect<T>(work: (client: Client) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const reused = this.client !== null;
      const client = await this.connect();
      try {
        const result = await work(client);
        this.lastContactOk = true;
        this.lastSuccessAt = new Date().toISOString();
        return result;
      } catch (error) {
        if (isTimeout(error)) throw this.failed(new McpTimeoutError(this.name, this.timeoutMs, error));
        if (!isConnectionLost(error)) throw error;
        await this.drop();
        // A reused session may have gone stale (server restarted): one fresh connection gets one more try.
        if (!reused || attempt > 0) throw this.failed(new McpUnavailableError(this.name, error));
        this.settings.log(`MCP server ${this.name}: connection lost (${describeError(error)}), reconnecting`);
      }
    }
  }

  private async connect(): Promise<Client> {
    if (this.closed) throw new McpUnavailableError(this.name, new Error('connection pool closed'));
    if (this.client) return this.client;
    if (this.connecting) return this.connecting;
    if (Date.now() < this.retryAt) {
      throw new McpUnavailableError(this.name, new Error('recent connection attempt failed; backing off'));
    }
    const attempt = this.open()
      .then((client) => {
        this.failures = 0;
        this.retryAt = 0;
        this.client = client;
        return client;
      })
      .catch((error: unknown) => {
        this.failures++;
        this.retryAt = Date.now() + Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (this.failures - 1));
        throw this.failed(new McpUnavailableError(this.name, error));
      })
      .finally(() => {
        this.connecting = null;
      });
    this.connecting = attempt;
    return attempt;
  }

  private async open(): Promise<Client> {
    const client: Client = new Client(
      { name: 'agent-runtime', version: this.settings.clientVersion },
      // Only servers that declare tools.listChanged send it; the SDK ignores the handler for the others.
      { listChanged: { tools: { autoRefresh: false, onChanged: () => this.toolsChanged(client) } } },
    );
    client.onclose = () => {
      if (this.client === client) this.client = null;
    };
    client.onerror = (error) => this.settings.log(`MCP server ${this.name}: ${error.message}`);
    const transport =
      this.config.transport === 'streamable_http'
        ? new StreamableHTTPClientTransport(new URL(this.config.url), {
            requestInit: {
              headers: Object.fromEntries(
                Object.entries(this.config.headers).map(([key, value]) => [key, expandEnv(value)]),
              ),
            },
          })
        : new StdioClientTransport({
            command: this.config.command,
            args: this.config.args.map((arg) => expandEnv(arg)),
            env: {
              ...inheritedEnv(),
              ...Object.fromEntries(
                Object.entries(this.config.env).map(([key, value]) => [key, expandEnv(value)]),
              ),
            },
            cwd: this.config.cwd
              ? isAbsolute(this.config.cwd)
                ? this.config.cwd
                : resolve(this.settings.baseDir, this.config.cwd)
              : this.settings.baseDir,
            stderr: 'pipe',
          });
    if (transport instanceof StdioClientTransport) {
      transport.stderr?.on('data', (chunk: Buffer) => {
        for (const line of chunk.toString('utf8').split('\n')) {
          if (line.trim() !== '') this.settings.log(`MCP server ${this.name} (stdio): ${line.trim()}`);
        }
      });
    }
    try {
      await client.connect(transport, { timeout: this.settings.connectTimeoutMs });
    } catch (error) {
      await client.close().catch(() => undefined);
      throw error;
    }
    // A new session may serve another version of the server: list again, keeping the old list as fallback.
    if (this.tools) this.tools.stale = true;
    return client;
  }

  /** A contact that shows the server down or silent (not one it answered with an error). */
  private failed(error: McpUnavailableError | McpTimeoutError): Error {
    this.lastContactOk = false;
    this.lastFailure = {
      at: new Date().toISOString(),
      cause: error instanceof McpTimeoutError ? 'timeout' : 'unavailable',
      error: error.message,
    };
    return error;
  }

  private async drop(): Promise<void> {
    const client = this.client;
    this.client = null;
    if (client) await client.close().catch(() => undefined);
  }
}

/** The child of a stdio server inherits the parent's environment (DATABASE_URL and the like). */
function inheritedEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

function isTimeout(error: unknown): boolean {
  return error instanceof McpError && error.code === (ErrorCode.RequestTimeout as number);
}

/** Errors that mean the session or the socket is gone, as opposed to an answer from the server. */
function isConnectionLost(error: unknown): boolean {
  if (error instanceof McpError) return error.code === (ErrorCode.ConnectionClosed as number);
  if (error instanceof StreamableHTTPError) {
    // 404: the session is unknown (server restarted); 5xx from a proxy: the server is not there.
    return error.code === undefined || error.code === 404 || error.code >= 500;
  }
  // Checked by shape, not instanceof: fetch's errors may come from another realm (vm contexts, test runners).
  for (let current: unknown = error, depth = 0; current && depth < 5; depth++) {
    const { name, message, code, cause } = current as {
      name?: unknown;
      message?: unknown;
      code?: unknown;
      cause?: unknown;
    };
    if (
      name === 'TypeError' &&
      typeof message === 'string' &&
      /fetch failed|terminated|network/i.test(message)
    ) {
      return true;
    }
    if (
      typeof code === 'string' &&
      /^(ECONN|EPIPE|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|UND_ERR_SOCKET|ERR_STREAM)/.test(code)
    ) {
      return true;
    }
    current = cause;
  }
  return false;
}
