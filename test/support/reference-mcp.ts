import { ChildProcess, fork } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as PgClient } from 'pg';
import { embeddedDataDir } from './embedded-servers';
import { compiledEntry, REPO_ROOT } from './repo-root';

export const REFERENCE_MCP_ENTRY = compiledEntry('apps/reference-mcp-server/src/main.ts');

export interface ReferenceMcpOptions {
  /** Fixed port (to restart on the same URL); a free one when absent. */
  port?: number;
  /** Postgres schema of the data; a fresh one per server when absent. */
  schema?: string;
  /** Embedded-mode data directory (kept across restarts of the same helper). */
  dataDir?: string;
  env?: Record<string, string>;
  startTimeoutMs?: number;
}

/** The reference MCP server as a real child process (Streamable HTTP), for e2e and integration tests. */
export class ReferenceMcpProcess {
  private client: Client | null = null;

  private constructor(
    private child: ChildProcess,
    readonly port: number,
    readonly schema: string,
    private readonly dataDir: string | null,
    private readonly options: ReferenceMcpOptions,
    readonly logs: string[],
  ) {}

  static async start(options: ReferenceMcpOptions = {}): Promise<ReferenceMcpProcess> {
    const port = options.port ?? (await freePort());
    const schema =
      options.schema ??
      `reference_mcp_t_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 7)}`;
    const dataDir = process.env.DATABASE_URL
      ? null
      : (options.dataDir ?? embeddedDataDir('reference-mcp-test-'));
    const logs: string[] = [];
    const child = await spawnServer(port, schema, dataDir, options, logs);
    return new ReferenceMcpProcess(child, port, schema, dataDir, { ...options, port, schema }, logs);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/mcp`;
  }

  /** Env for startTestApp: both configured servers point at this process. */
  get appEnv(): Record<string, string> {
    return { MCP_SERVER_TELECOM_URL: this.url, MCP_SERVER_RETAIL_URL: this.url };
  }

  /** Calls a tool with a test-side MCP client; returns the structured result. */
  async callTool(
    name: string,
    args: Record<string, unknown>,
  ): Promise<{ isError: boolean; body: Record<string, unknown> }> {
    if (!this.client) {
      const client = new Client({ name: 'test', version: '0.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(this.url)));
      this.client = client;
    }
    const result = await this.client.callTool({ name, arguments: args });
    return {
      isError: result.isError === true,
      body: (result.structuredContent ?? {}) as Record<string, unknown>,
    };
  }

  async orderStatus(orderId: string): Promise<string> {
    const { body } = await this.callTool('consultar_pedido', { order_id: orderId });
    return String((body.order as { status?: unknown } | undefined)?.status);
  }

  /** Stops the process (the data stays, so `restart` finds it). */
  async stop(): Promise<void> {
    await this.client?.close().catch(() => undefined);
    this.client = null;
    await stopChild(this.child);
  }

  async restart(): Promise<void> {
    await this.stop();
    this.child = await spawnServer(this.port, this.schema, this.dataDir, this.options, this.logs);
  }

  /** Stops the process and removes its data (schema or embedded directory). */
  async dispose(): Promise<void> {
    await this.stop();
    if (process.env.DATABASE_URL) {
      const pg = new PgClient({ connectionString: process.env.DATABASE_URL });
      await pg.connect();
      await pg.query(`DROP SCHEMA IF EXISTS "${this.schema}" CASCADE`).finally(() => pg.end());
    } else if (this.dataDir && !this.options.dataDir) {
      rmSync(this.dataDir, { recursive: true, force: true });
    }
  }
}

async function spawnServer(
  port: number,
  schema: string,
  dataDir: string | null,
  options: ReferenceMcpOptions,
  logs: string[],
): Promise<ChildProcess> {
  const env: Record<string, string> = {
    ...(Object.fromEntries(Object.entries(process.env).filter(([, v]) => v !== undefined)) as Record<
      string,
      string
    >),
    MCP_TRANSPORT: 'http',
    MCP_HOST: '127.0.0.1',
    MCP_PORT: String(port),
    REFERENCE_MCP_SCHEMA: schema,
    ...(dataDir ? { REFERENCE_MCP_DATA_DIR: dataDir } : {}),
    ...(options.env ?? {}),
  };
  if (!process.env.DATABASE_URL) delete env.DATABASE_URL;
  const child = fork(REFERENCE_MCP_ENTRY, [], {
    cwd: REPO_ROOT,
    env,
    // Not the jest worker's flags.
    execArgv: [],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const collect = (chunk: Buffer) => logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const timeoutMs = options.startTimeoutMs ?? 200000;
  await new Promise<void>((resolveStart, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`reference MCP server did not start in ${timeoutMs} ms:\n${logs.join('\n')}`));
    }, timeoutMs);
    child.on('message', (message: unknown) => {
      if ((message as { ready?: unknown } | null)?.ready === true) {
        clearTimeout(timer);
        resolveStart();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`reference MCP server exited with ${String(code)}:\n${logs.join('\n')}`));
    });
  });
  return child;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolveStop) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
    }, 15000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolveStop();
    });
    child.kill('SIGTERM');
  });
}

/** A port that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}
