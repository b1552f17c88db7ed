import { Logger } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { Server as McpServer } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, Tool } from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import {
  createServer as createHttpServer,
  IncomingMessage,
  Server as HttpServer,
  ServerResponse,
} from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client as PgClient } from 'pg';
import { stringify } from 'yaml';
import { AppConfigModule } from '@agent/config';
import { MCP_UNAVAILABLE_ERROR, McpModule, McpService } from '@agent/mcp';
import { ObservabilityModule } from '@agent/observability';
import { embeddedDataDir } from '../support/embedded-servers';
import { freePort, REFERENCE_MCP_ENTRY, ReferenceMcpProcess } from '../support/reference-mcp';
import { TcpProxy } from '../support/tcp-proxy';
import { waitUntil } from '../support/wait-for';

/**
 * McpService against real reference server processes: `telecom` over stdio (spawned by the service itself),
 * `retail` over Streamable HTTP; prepare_call mapping and errors, confirmation and idempotency enforced by
 * the server, events, and an unresponsive server bounded by the connect timeout.
 */
const REPO_ROOT = resolve(__dirname, '..', '..');

async function mcpModule(
  servers: Record<string, unknown>,
  env: Record<string, string>,
): Promise<{
  module: TestingModule;
  mcp: McpService;
  events: { name: string; payload: Record<string, unknown> }[];
}> {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-int-'));
  const serversPath = join(dir, 'mcp_servers.yaml');
  writeFileSync(serversPath, stringify({ servers }));
  const vars: Record<string, string> = {
    CONFIG_DIR: join(REPO_ROOT, 'config'),
    MCP_SERVERS_PATH: serversPath,
    LOG_LEVEL: 'silent',
    ...env,
  };
  const saved = Object.fromEntries(Object.keys(vars).map((key) => [key, process.env[key]]));
  Object.assign(process.env, vars);
  try {
    const module = await Test.createTestingModule({
      imports: [AppConfigModule, ObservabilityModule, McpModule],
    }).compile();
    await module.init();
    const events: { name: string; payload: Record<string, unknown> }[] = [];
    const emitter = module.get(EventEmitter2);
    for (const name of ['mcp.tool_call.completed', 'NOC.MCP_TOOL_FAILED']) {
      emitter.on(name, (payload: Record<string, unknown>) => events.push({ name, payload }));
    }
    return { module, mcp: module.get(McpService), events };
  } finally {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('McpService with the reference MCP server', () => {
  let http: ReferenceMcpProcess;
  let module: TestingModule;
  let mcp: McpService;
  let events: { name: string; payload: Record<string, unknown> }[];
  const stdioSchema = `reference_mcp_stdio_${Date.now().toString(36)}`;
  const stdioDataDir = embeddedDataDir('mcp-stdio-');

  beforeAll(async () => {
    http = await ReferenceMcpProcess.start();
    ({ module, mcp, events } = await mcpModule(
      {
        telecom: {
          transport: 'stdio',
          command: process.execPath,
          args: [REFERENCE_MCP_ENTRY, '--stdio'],
          env: {
            REFERENCE_MCP_SCHEMA: stdioSchema,
            REFERENCE_MCP_DATA_DIR: stdioDataDir,
            REFERENCE_MCP_RESET: 'true',
          },
          cwd: '.',
          // The first call spawns the process (and, without DATABASE_URL, its embedded Postgres).
          timeout_ms: 120000,
        },
        retail: { transport: 'streamable_http', url: 'http://127.0.0.1:1/mcp' },
      },
      { MCP_SERVER_RETAIL_URL: http.url, MCP_CONNECT_TIMEOUT_MS: '120000' },
    ));
  }, 240000);

  afterAll(async () => {
    await module?.close();
    await http?.dispose();
    rmSync(stdioDataDir, { recursive: true, force: true });
    if (process.env.DATABASE_URL) {
      const pg = new PgClient({ connectionString: process.env.DATABASE_URL });
      await pg.connect();
      await pg.query(`DROP SCHEMA IF EXISTS "${stdioSchema}" CASCADE`).finally(() => pg.end());
    }
  }, 60000);

  beforeEach(() => {
    events.length = 0;
  });

  it('calls a tool over stdio and offers its schema from tools/list', async () => {
    const result = await mcp.callTool('consultar_plano', { msisdn: '11999990001' });
    expect(result).toMatchObject({ ok: true, tool_name: 'consultar_plano', server: 'telecom', error: null });
    expect(result.result).toMatchObject({ plan: { name: 'Controle 30GB', monthly_fee: 79.9 } });
    expect(events.map((e) => e.name)).toEqual(['mcp.tool_call.completed']);

    const [descriptor] = await mcp.describeTools(['consultar_plano']);
    expect(descriptor).toMatchObject({ name: 'consultar_plano', server: 'telecom', schema_source: 'mcp' });
    expect(descriptor.parameters).toMatchObject({
      type: 'object',
      properties: { msisdn: expect.objectContaining({ type: 'string' }) },
      required: ['msisdn'],
    });
  }, 180000);

  it('maps and validates arguments without calling (prepare_call)', () => {
    expect(mcp.prepareCall('nao_existe', {})).toMatchObject({
      ok: false,
      error: { code: 'not_configured', message: 'Tool/server not configured' },
    });
    expect(mcp.prepareCall('consultar_fatura', {})).toMatchObject({
      ok: false,
      error: { code: 'missing_parameters', missing_parameters: ['msisdn'] },
    });
    // `map` fills msisdn from the request context; a number becomes the declared string.
    expect(mcp.prepareCall('consultar_fatura', {}, { context: { msisdn: 5511999990001 } })).toEqual({
      ok: true,
      call: { tool_name: 'consultar_fatura', server: 'telecom', arguments: { msisdn: '5511999990001' } },
    });
    expect(mcp.prepareCall('cancelar_pedido', { order_id: 100231, extra: 'dropped' })).toEqual({
      ok: true,
      call: { tool_name: 'cancelar_pedido', server: 'retail', arguments: { order_id: '100231' } },
    });
    const transactional = mcp.toolConfig('cancelar_pedido');
    expect(transactional).toMatchObject({ operation_type: 'transactional', require_confirmation: true });
  });

  it('reports a call refused before it runs (missing or invalid arguments) with NOC.MCP_TOOL_FAILED', async () => {
    const missing = await mcp.callTool('consultar_fatura', {});
    expect(missing).toMatchObject({ ok: false, error: 'missing parameters: msisdn', latency_ms: 0 });
    const invalid = await mcp.callTool('consultar_pedido', { order_id: { nested: true } });
    expect(invalid.ok).toBe(false);
    expect(events).toEqual([
      {
        name: 'NOC.MCP_TOOL_FAILED',
        payload: expect.objectContaining({
          tool_name: 'consultar_fatura',
          server: 'telecom',
          error: 'missing parameters: msisdn',
          stage: 'preparation',
          code: 'missing_parameters',
        }),
      },
      {
        name: 'NOC.MCP_TOOL_FAILED',
        payload: expect.objectContaining({
          tool_name: 'consultar_pedido',
          server: 'retail',
          stage: 'preparation',
          code: 'invalid_arguments',
        }),
      },
    ]);
  });

  it('lets the server refuse an unconfirmed transaction and act once per idempotency key', async () => {
    const refused = await mcp.callTool('cancelar_pedido', { order_id: '100234' });
    expect(refused).toMatchObject({ ok: false, tool_name: 'cancelar_pedido', server: 'retail' });
    expect(refused.error).toContain('confirmed: true');
    expect(events.map((e) => e.name)).toEqual(['mcp.tool_call.completed', 'NOC.MCP_TOOL_FAILED']);
    expect(await http.orderStatus('100234')).toBe('processing');

    const key = `test-${Date.now()}`;
    const first = await mcp.callTool(
      'cancelar_pedido',
      { order_id: '100234' },
      { confirmed: true, idempotencyKey: key },
    );
    const second = await mcp.callTool(
      'cancelar_pedido',
      { order_id: '100234' },
      { confirmed: true, idempotencyKey: key },
    );
    expect(first).toMatchObject({ ok: true, result: { status: 'cancelled', idempotent_replay: false } });
    expect(second).toMatchObject({ ok: true, result: { status: 'cancelled', idempotent_replay: true } });
    expect(await http.orderStatus('100234')).toBe('cancelled');
    // Without the key the server acts again, and a cancelled order is a business error.
    const third = await mcp.callTool('cancelar_pedido', { order_id: '100234' }, { confirmed: true });
    expect(third).toMatchObject({ ok: false, error: 'O pedido já está cancelado.' });
  });

  describe('unreachable and disabled', () => {
    let blackHole: TcpProxy;
    let other: Awaited<ReturnType<typeof mcpModule>>;
    let disabled: Awaited<ReturnType<typeof mcpModule>>;

    beforeAll(async () => {
      // Accepts connections and never answers: only the timeouts end a call.
      blackHole = await TcpProxy.blackHoled();
      const port = blackHole.port;
      const closedPort = await freePort();
      other = await mcpModule(
        {
          telecom: { transport: 'streamable_http', url: `http://127.0.0.1:${port}/mcp` },
          retail: { transport: 'streamable_http', url: `http://127.0.0.1:${closedPort}/mcp` },
        },
        { MCP_CONNECT_TIMEOUT_MS: '300', MCP_CALL_TIMEOUT_MS: '300' },
      );
      disabled = await mcpModule(
        { telecom: { transport: 'stdio', command: 'true' }, retail: { transport: 'stdio', command: 'true' } },
        { MCP_TOOLS_ENABLED: 'false' },
      );
    });

    afterAll(async () => {
      await other.module.close();
      await disabled.module.close();
      await blackHole.stop();
    });

    it('maps a refused connection and a silent server to "MCP Tool Router unavailable" within the timeout', async () => {
      const refused = await other.mcp.callTool('consultar_pedido', { order_id: '100231' });
      expect(refused).toMatchObject({
        ok: false,
        error: MCP_UNAVAILABLE_ERROR,
        tool_name: 'consultar_pedido',
      });
      const started = Date.now();
      const silent = await other.mcp.callTool('consultar_fatura', { msisdn: '11999990001' });
      expect(silent).toMatchObject({
        ok: false,
        error: MCP_UNAVAILABLE_ERROR,
        tool_name: 'consultar_fatura',
      });
      expect(Date.now() - started).toBeLessThan(5000);
      expect(
        other.events.filter((e) => e.name === 'NOC.MCP_TOOL_FAILED').map((e) => e.payload.tool_name),
      ).toEqual(['consultar_pedido', 'consultar_fatura']);
      // tools/list failing too, the model is offered the tools.yaml schema.
      const [descriptor] = await other.mcp.describeTools(['consultar_pedido']);
      expect(descriptor.schema_source).toBe('tools.yaml');
    });

    it('warns when a server goes down, not again on every turn while it stays down', async () => {
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      try {
        const down = await mcpModule(
          {
            telecom: { transport: 'stdio', command: 'true' },
            retail: { transport: 'streamable_http', url: `http://127.0.0.1:${await freePort()}/mcp` },
          },
          {},
        );
        try {
          for (let turn = 0; turn < 3; turn++) {
            const [descriptor] = await down.mcp.describeTools(['consultar_pedido']);
            expect(descriptor.schema_source).toBe('tools.yaml');
          }
        } finally {
          await down.module.close();
        }
        const listings = warn.mock.calls.filter(([message]) =>
          String(message).startsWith('tools/list of retail'),
        );
        expect(listings).toHaveLength(1);
      } finally {
        warn.mockRestore();
      }
    });

    it('answers "MCP tools disabled" without calling when MCP_TOOLS_ENABLED=false', async () => {
      const result = await disabled.mcp.callTool('consultar_pedido', { order_id: '100231' });
      expect(result).toMatchObject({ ok: false, error: 'MCP tools disabled', latency_ms: 0 });
      // Nothing was sent, yet the failure is reported like any failed call.
      expect(disabled.events).toEqual([
        {
          name: 'NOC.MCP_TOOL_FAILED',
          payload: expect.objectContaining({
            tool_name: 'consultar_pedido',
            server: 'retail',
            error: 'MCP tools disabled',
            stage: 'preparation',
            code: 'mcp_disabled',
          }),
        },
      ]);
    });
  });
});

/**
 * A stateful Streamable HTTP MCP server (one McpServer per session, so the session's SSE stream carries
 * notifications/tools/list_changed) that counts the tools/list requests it answers and can change its tool.
 */
class ChangingToolServer {
  readonly methods: string[] = [];
  private readonly sessions = new Map<string, { transport: StreamableHTTPServerTransport; mcp: McpServer }>();
  private withChannel = false;

  private constructor(private readonly server: HttpServer) {}

  static async start(): Promise<ChangingToolServer> {
    const holder: { instance?: ChangingToolServer } = {};
    const server = createHttpServer((req, res) => {
      void holder.instance?.handle(req, res).catch(() => res.destroy());
    });
    holder.instance = new ChangingToolServer(server);
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    return holder.instance;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as { port: number }).port}/mcp`;
  }

  get listings(): number {
    return this.methods.filter((method) => method === 'tools/list').length;
  }

  /** Adds an argument to consultar_pedido; every connected session is told its list changed. */
  changeTool(): void {
    this.withChannel = true;
    for (const session of this.sessions.values()) void session.mcp.sendToolListChanged();
  }

  /** Forgets every session, as a restarted server does: the next request with an old session id gets 404. */
  async restart(): Promise<void> {
    const sessions = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(sessions.map((session) => session.transport.close()));
  }

  async stop(): Promise<void> {
    await this.restart();
    this.server.closeAllConnections();
    await new Promise<void>((done) => this.server.close(() => done()));
  }

  private tool(): Tool {
    return {
      name: 'consultar_pedido',
      description: 'Order lookup.',
      inputSchema: {
        type: 'object',
        properties: {
          order_id: { type: 'string' },
          ...(this.withChannel ? { channel: { type: 'string', description: 'Sales channel.' } } : {}),
        },
        required: ['order_id'],
      },
    };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const sessionId = req.headers['mcp-session-id'];
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    const method = (body as { method?: unknown } | undefined)?.method;
    if (typeof method === 'string') this.methods.push(method);
    const known = typeof sessionId === 'string' ? this.sessions.get(sessionId) : undefined;
    if (known) return known.transport.handleRequest(req, res, body);
    if (sessionId !== undefined || method !== 'initialize') {
      res.writeHead(404).end();
      return;
    }
    const mcp = new McpServer(
      { name: 'changing-tools', version: '0.0.0' },
      { capabilities: { tools: { listChanged: true } } },
    );
    mcp.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [this.tool()] }));
    mcp.setRequestHandler(CallToolRequestSchema, () => ({
      content: [{ type: 'text', text: JSON.stringify({ ok: true }) }],
    }));
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        this.sessions.set(id, { transport, mcp });
      },
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res, body);
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
}

describe('McpService tool descriptors', () => {
  let server: ChangingToolServer;
  let service: Awaited<ReturnType<typeof mcpModule>>;

  beforeAll(async () => {
    server = await ChangingToolServer.start();
    const closed = `http://127.0.0.1:${await freePort()}/mcp`;
    service = await mcpModule(
      {
        telecom: { transport: 'streamable_http', url: closed },
        retail: { transport: 'streamable_http', url: server.url },
      },
      { MCP_CONNECT_TIMEOUT_MS: '5000', MCP_CALL_TIMEOUT_MS: '5000' },
    );
  });

  afterAll(async () => {
    await service?.module.close();
    await server?.stop();
  });

  const properties = async () => {
    const [descriptor] = await service.mcp.describeTools(['consultar_pedido']);
    return Object.keys(descriptor.parameters.properties as Record<string, unknown>);
  };

  it('lists a server once for every turn that offers its tools, concurrent ones included', async () => {
    const turns = await Promise.all(
      Array.from({ length: 5 }, () => service.mcp.describeTools(['consultar_pedido'])),
    );
    for (let i = 0; i < 5; i++) turns.push(await service.mcp.describeTools(['consultar_pedido']));
    expect(server.listings).toBe(1);
    expect(turns[0][0]).toMatchObject({ name: 'consultar_pedido', schema_source: 'mcp' });
    // The descriptor itself is built once, not per turn.
    expect(new Set(turns.map(([descriptor]) => descriptor)).size).toBe(1);
  });

  it('lists again when the server announces that its tools changed', async () => {
    expect(await properties()).toEqual(['order_id']);
    server.changeTool();
    // The notification refreshes the list without waiting for a turn to ask.
    await waitUntil('the second tool listing', () => server.listings === 2, 10000);
    expect(await properties()).toEqual(['order_id', 'channel']);
    await properties();
    expect(server.listings).toBe(2);
  });

  it('lists again after the session is replaced', async () => {
    await server.restart();
    // The stale session answers 404: the call reconnects once and succeeds.
    const result = await service.mcp.callTool('consultar_pedido', { order_id: '100231' });
    expect(result).toMatchObject({ ok: true });
    expect(server.listings).toBe(2);
    expect(await properties()).toEqual(['order_id', 'channel']);
    expect(server.listings).toBe(3);
    await properties();
    expect(server.listings).toBe(3);
  });
});
