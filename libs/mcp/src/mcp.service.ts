import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { dirname, resolve } from 'node:path';
import { Counter, Histogram } from 'prom-client';
import {
  ConfigFileError,
  ConfigFilesService,
  loadYamlFile,
  McpEnv,
  PerAgent,
  ToolConfig,
} from '@agent/config';
import type { ToolArguments } from '@agent/contracts';
import { EventBusService, MetricsService, TracingService } from '@agent/observability';
import { describeError, McpTimeoutError, McpUnavailableError } from './mcp.errors';
import type { McpCallOutcome } from './mcp.events';
import { McpConnection, McpServerHealth } from './mcp-connection';
import { envKeyOf, McpServerConfig, McpServersFile, mcpServersFileSchema } from './mcp-servers.schema';
import {
  AgentScope,
  CallOptions,
  MCP_UNAVAILABLE_ERROR,
  McpToolResult,
  PreparationError,
  PrepareOptions,
  PreparedCall,
  PrepareResult,
  RUNTIME_ARGUMENTS,
  ToolDescriptor,
  ToolInputSchema,
} from './mcp.types';

export const MCP_ENV = Symbol('MCP_ENV');

/** A server as readiness reports it: its configuration, which agents' tool calls go to it, its last contact. */
export interface McpServerStatus extends McpServerHealth {
  name: string;
  transport: McpServerConfig['transport'];
  target: string;
  enabled: boolean;
  /** The agent_ids whose tool calls of this server's tools go here. */
  agents: string[];
  /** The MCP servers files that declare it (mcp_servers.yaml, agents' own files). */
  files: string[];
}

/** One MCP servers file as the service runs it, with its connections: mcp_servers.yaml or an agent_id's own. */
interface ServerSet {
  path: string;
  servers: Record<string, McpServerConfig>;
  connections: Map<string, McpConnection>;
}

/**
 * Facade of McpModule: the tool router. `prepareCall` maps and validates arguments without calling;
 * `call` sends a prepared call through a reusable MCP session and always returns a McpToolResult.
 */
@Injectable()
export class McpService implements OnApplicationShutdown {
  private readonly logger = new Logger(McpService.name);
  /** Each agent_id's servers: its agents.yaml `mcp_servers` file, else mcp_servers.yaml. */
  private readonly serverSets: PerAgent<ServerSet>;
  private readonly callCounter: Counter<'tool' | 'server' | 'outcome'>;
  private readonly callLatency: Histogram<'tool' | 'server'>;
  /**
   * Descriptors derived from a server's listing, built once per listing: a connection hands out the same
   * array until the server's tools change, so a new listing starts a new map.
   */
  private readonly remoteDescriptors = new WeakMap<Tool[], Map<string, ToolDescriptor>>();
  /** Descriptors from tools.yaml alone (server disabled or never listed), which never change. */
  private readonly yamlDescriptors = new Map<string, ToolDescriptor>();
  /** tools.yaml argument patterns, compiled on first use; null for one that does not compile. */
  private readonly patterns = new Map<string, RegExp | null>();

  constructor(
    @Inject(MCP_ENV) private readonly env: McpEnv,
    private readonly files: ConfigFilesService,
    private readonly events: EventBusService,
    private readonly tracing: TracingService,
    metrics: MetricsService,
  ) {
    const globalPath = resolve(env.MCP_SERVERS_PATH ?? files.path('mcp_servers.yaml'));
    const global = serverSet(globalPath, loadYamlFile(globalPath, mcpServersFileSchema));
    // MCP_SERVER_<NAME>_URL is the deployment's address of the global file's servers; an agent's file says its own.
    for (const [name, server] of Object.entries(global.servers)) {
      const override = env.MCP_SERVER_URLS[envKeyOf(name)];
      if (override && server.transport === 'streamable_http') {
        global.servers[name] = { ...server, url: override };
      }
    }
    this.serverSets = files.perAgent('mcp_servers', global, (path) =>
      serverSet(path, loadYamlFile(path, mcpServersFileSchema)),
    );
    this.crossValidate(global);
    this.callCounter = new Counter({
      name: 'agent_mcp_tool_calls_total',
      help: 'MCP tool calls by tool, server and outcome (ok|error|unavailable|timeout)',
      labelNames: ['tool', 'server', 'outcome'] as const,
      registers: [metrics.registry],
    });
    this.callLatency = new Histogram({
      name: 'agent_mcp_tool_latency_seconds',
      help: 'MCP tool call latency by tool and server',
      labelNames: ['tool', 'server'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [metrics.registry],
    });
  }

  get enabled(): boolean {
    return this.env.MCP_TOOLS_ENABLED;
  }

  /** The tools.yaml entry of a tool, or null. */
  toolConfig(toolName: string): ToolConfig | null {
    return this.files.tools.tools[toolName] ?? null;
  }

  /**
   * The allowed tools as the LLM sees them: the input schema from the MCP server's tools/list (tools.yaml
   * when the server cannot be listed), without the arguments the runtime owns. A transactional tool is
   * offered without `required`, so the model calls it even before the customer gave every argument and
   * the runtime collects the rest.
   */
  async describeTools(toolNames: readonly string[], scope: AgentScope = {}): Promise<ToolDescriptor[]> {
    const set = this.serverSets.for(scope.agentId);
    const wanted = [...new Set(toolNames)].filter((name) => {
      const config = this.toolConfig(name);
      return config !== null && !config.internal;
    });
    const byServer = new Map<string, Tool[] | null>();
    for (const server of new Set(wanted.map((name) => this.files.tools.tools[name].server))) {
      byServer.set(server, await this.remoteTools(set, server));
    }
    return wanted.map((name) => {
      const remote = byServer.get(this.files.tools.tools[name].server) ?? null;
      const cache = remote ? this.descriptorsOf(remote) : this.yamlDescriptors;
      let descriptor = cache.get(name);
      if (!descriptor) {
        descriptor = describe(name, this.files.tools.tools[name], remote);
        cache.set(name, descriptor);
      }
      return descriptor;
    });
  }

  /** Maps and validates arguments for a tool, without calling it (the reference's prepare_call). */
  prepareCall(toolName: string, args: ToolArguments, options: PrepareOptions = {}): PrepareResult {
    const config = this.toolConfig(toolName);
    const fail = (
      error: PreparationError,
      server: string | null,
      mapped: ToolArguments = {},
    ): PrepareResult => ({
      ok: false,
      tool_name: toolName,
      server,
      error,
      arguments: mapped,
    });
    if (!this.enabled) {
      return fail({ code: 'mcp_disabled', message: 'MCP tools disabled' }, config?.server ?? null);
    }
    const { servers } = this.serverSets.for(options.agentId);
    if (!config || !(config.server in servers)) {
      return fail({ code: 'not_configured', message: 'Tool/server not configured' }, config?.server ?? null);
    }
    if (!servers[config.server].enabled) {
      return fail(
        { code: 'server_disabled', message: `MCP server ${config.server} is disabled` },
        config.server,
      );
    }
    const properties = config.args_schema.properties;
    const context = options.context ?? {};
    const mapped: ToolArguments = {};
    const invalid: { name: string; reason: string }[] = [];
    for (const [name, property] of Object.entries(properties)) {
      const raw = firstPresent(args[name], context[config.map[name] ?? ''], config.defaults[name]);
      if (raw === undefined) continue;
      const coerced = coerce(raw, property.type);
      if (coerced === undefined) {
        invalid.push({ name, reason: `expected ${property.type}` });
        continue;
      }
      if (property.enum && !property.enum.includes(coerced as string | number)) {
        invalid.push({ name, reason: `must be one of ${property.enum.join(', ')}` });
        continue;
      }
      if (property.pattern && typeof coerced === 'string' && !this.matches(property.pattern, coerced)) {
        invalid.push({ name, reason: `does not match ${property.pattern}` });
        continue;
      }
      mapped[name] = coerced;
    }
    if (invalid.length > 0) {
      return fail(
        {
          code: 'invalid_arguments',
          message: `invalid arguments: ${invalid.map((i) => `${i.name} ${i.reason}`).join('; ')}`,
          invalid_parameters: invalid,
        },
        config.server,
        mapped,
      );
    }
    const missing = requiredArguments(config).filter((name) => mapped[name] === undefined);
    if (missing.length > 0 && options.requireComplete !== false) {
      return fail(
        {
          code: 'missing_parameters',
          message: `missing parameters: ${missing.join(', ')}`,
          missing_parameters: missing,
        },
        config.server,
        mapped,
      );
    }
    return { ok: true, call: { tool_name: toolName, server: config.server, arguments: mapped } };
  }

  /** Sends a prepared call. Emits mcp.tool_call.completed always and NOC.MCP_TOOL_FAILED when not ok. */
  async call(prepared: PreparedCall, options: CallOptions = {}): Promise<McpToolResult> {
    const args: ToolArguments = { ...prepared.arguments };
    if (options.confirmed) args.confirmed = true;
    if (options.idempotencyKey) args.idempotency_key = options.idempotencyKey;
    const started = performance.now();
    const result = await this.tracing.span(
      'mcp.tool_call',
      { 'mcp.tool': prepared.tool_name, 'mcp.server': prepared.server },
      () => this.send(this.serverSets.for(options.agentId), prepared, args, started),
    );
    const outcome: McpCallOutcome = result.ok
      ? 'ok'
      : result.error === MCP_UNAVAILABLE_ERROR
        ? 'unavailable'
        : /did not answer within/.test(result.error ?? '')
          ? 'timeout'
          : 'error';
    this.callCounter.inc({ tool: prepared.tool_name, server: prepared.server, outcome });
    this.callLatency.observe({ tool: prepared.tool_name, server: prepared.server }, result.latency_ms / 1000);
    this.events.emit('mcp.tool_call.completed', {
      tool_name: result.tool_name,
      server: prepared.server,
      ok: result.ok,
      outcome,
      error: result.error,
      latency_ms: result.latency_ms,
    });
    if (!result.ok) {
      this.events.emit('NOC.MCP_TOOL_FAILED', {
        tool_name: result.tool_name,
        server: prepared.server,
        error: result.error ?? 'unknown error',
        stage: 'execution',
      });
    }
    return result;
  }

  /** prepareCall then call; a preparation error becomes an ok:false result without any call. */
  async callTool(
    toolName: string,
    args: ToolArguments,
    options: CallOptions & PrepareOptions = {},
  ): Promise<McpToolResult> {
    const prepared = this.prepareCall(toolName, args, options);
    if (!prepared.ok) return this.refuse(toolName, prepared.error);
    return this.call(prepared.call, options);
  }

  /**
   * The ok:false result of a call that never reached its server (disabled, not configured, not allowed,
   * invalid or missing arguments), reported like any failed call with NOC.MCP_TOOL_FAILED.
   */
  refuse(toolName: string, error: PreparationError): McpToolResult {
    const server = this.toolConfig(toolName)?.server ?? null;
    this.events.emit('NOC.MCP_TOOL_FAILED', {
      tool_name: toolName,
      ...(server ? { server } : {}),
      error: error.message,
      stage: 'preparation',
      code: error.code,
    });
    return {
      ok: false,
      result: { preparation_error: error },
      error: error.message,
      tool_name: toolName,
      server,
      latency_ms: 0,
    };
  }

  /**
   * Readiness detail: every server of every agent's MCP servers file, once however many files declare it
   * (same name, transport and target), with the agents using it and its last contact. Calls nothing.
   */
  describe(): { enabled: boolean; servers: McpServerStatus[] } {
    const servers = new Map<string, { status: McpServerStatus; contacts: McpServerHealth[] }>();
    for (const { value: set, agents } of this.serverSets.users()) {
      for (const [name, server] of Object.entries(set.servers)) {
        const target =
          server.transport === 'streamable_http' ? server.url : [server.command, ...server.args].join(' ');
        const key = JSON.stringify([name, server.transport, target]);
        const entry = servers.get(key) ?? {
          status: {
            name,
            transport: server.transport,
            target,
            enabled: server.enabled,
            agents: [],
            files: [],
            state: 'unknown',
            last_success_at: null,
            last_failure: null,
          },
          contacts: [],
        };
        entry.status.agents.push(...agents.filter((agent) => !entry.status.agents.includes(agent)));
        entry.status.files.push(set.path);
        const connection = set.connections.get(name);
        if (connection) entry.contacts.push(connection.health());
        servers.set(key, entry);
      }
    }
    return {
      enabled: this.enabled,
      servers: [...servers.values()].map(({ status, contacts }) => ({
        ...status,
        ...latestContact(contacts),
      })),
    };
  }

  async onApplicationShutdown(): Promise<void> {
    const connections = this.serverSets.distinct().flatMap((set) => [...set.connections.values()]);
    await Promise.all(connections.map((connection) => connection.close()));
    for (const set of this.serverSets.distinct()) set.connections.clear();
  }

  private async send(
    set: ServerSet,
    prepared: PreparedCall,
    args: ToolArguments,
    started: number,
  ): Promise<McpToolResult> {
    const base = { tool_name: prepared.tool_name, server: prepared.server };
    const elapsed = () => Math.round((performance.now() - started) * 100) / 100;
    try {
      const raw = await this.connection(set, prepared.server).callTool(prepared.tool_name, args);
      const body = resultBody(raw);
      if (raw.isError) {
        return { ...base, ok: false, result: body, error: errorText(body), latency_ms: elapsed() };
      }
      return { ...base, ok: true, result: body, error: null, latency_ms: elapsed() };
    } catch (error) {
      if (error instanceof McpUnavailableError) {
        this.logger.warn(error.message);
        return { ...base, ok: false, result: null, error: MCP_UNAVAILABLE_ERROR, latency_ms: elapsed() };
      }
      if (error instanceof McpTimeoutError) {
        return { ...base, ok: false, result: null, error: error.message, latency_ms: elapsed() };
      }
      return { ...base, ok: false, result: null, error: describeError(error), latency_ms: elapsed() };
    }
  }

  /** An invalid pattern lets the value through: the server still validates its arguments. */
  private matches(pattern: string, value: string): boolean {
    let regex = this.patterns.get(pattern);
    if (regex === undefined) {
      regex = compileOrNull(pattern);
      this.patterns.set(pattern, regex);
    }
    return regex === null || regex.test(value);
  }

  private descriptorsOf(list: Tool[]): Map<string, ToolDescriptor> {
    let descriptors = this.remoteDescriptors.get(list);
    if (!descriptors) {
      descriptors = new Map();
      this.remoteDescriptors.set(list, descriptors);
    }
    return descriptors;
  }

  private async remoteTools(set: ServerSet, server: string): Promise<Tool[] | null> {
    if (!this.enabled || !set.servers[server]?.enabled) return null;
    const connection = this.connection(set, server);
    // Logged when the server goes down, not on every turn while it stays down (the health endpoint shows it).
    const wasDown = connection.health().state === 'down';
    try {
      return await connection.listTools();
    } catch (error) {
      if (!wasDown) {
        this.logger.warn(`tools/list of ${server} failed, using tools.yaml schemas: ${describeError(error)}`);
      }
      return connection.cachedTools();
    }
  }

  private connection(set: ServerSet, server: string): McpConnection {
    let connection = set.connections.get(server);
    if (!connection) {
      connection = new McpConnection(server, set.servers[server], {
        connectTimeoutMs: this.env.MCP_CONNECT_TIMEOUT_MS,
        callTimeoutMs: this.env.MCP_CALL_TIMEOUT_MS,
        toolsCacheTtlMs: this.env.MCP_TOOLS_CACHE_TTL_MS,
        baseDir: dirname(this.files.configDir),
        clientVersion: '0.1.0',
        log: (message) => this.logger.warn(message),
      });
      set.connections.set(server, connection);
    }
    return connection;
  }

  /** Every tool's server is in the global file; an agent's own file may leave some out (those tools are refused). */
  private crossValidate(global: ServerSet): void {
    const problems = Object.entries(this.files.tools.tools)
      .filter(([, tool]) => !(tool.server in global.servers))
      .map(([name, tool]) => `tools.${name}.server: "${tool.server}" is not declared in ${global.path}`);
    if (problems.length > 0) throw new ConfigFileError(this.files.path('tools.yaml'), problems);
  }
}

/** Of the connections of one server (one per file declaring it), the one contacted last says its state. */
function latestContact(contacts: readonly McpServerHealth[]): McpServerHealth {
  const at = (health: McpServerHealth) =>
    Math.max(Date.parse(health.last_success_at ?? '') || 0, Date.parse(health.last_failure?.at ?? '') || 0);
  return contacts.reduce<McpServerHealth>((latest, health) => (at(health) > at(latest) ? health : latest), {
    state: 'unknown',
    last_success_at: null,
    last_failure: null,
  });
}

function serverSet(path: string, file: McpServersFile): ServerSet {
  return { path, servers: { ...file.servers }, connections: new Map() };
}

/** The arguments a call cannot go without: args_schema.required plus the policy's `requires`. */
export function requiredArguments(config: ToolConfig): string[] {
  return [...new Set([...config.args_schema.required, ...config.requires])];
}

/** A tool as the model is offered it: the listed input schema when the server has the tool, else tools.yaml's. */
function describe(name: string, config: ToolConfig, listed: readonly Tool[] | null): ToolDescriptor {
  const remote = listed?.find((tool) => tool.name === name);
  const source = remote ? remote.inputSchema : yamlSchema(config);
  return {
    name,
    server: config.server,
    description: config.description,
    parameters: offeredSchema(source, config),
    operation_type: config.operation_type,
    require_confirmation: config.require_confirmation,
    requires: requiredArguments(config),
    schema_source: remote ? 'mcp' : 'tools.yaml',
  };
}

function yamlSchema(config: ToolConfig): ToolInputSchema {
  return {
    type: 'object',
    properties: Object.fromEntries(
      Object.entries(config.args_schema.properties).map(([name, property]) => [
        name,
        {
          type: property.type,
          ...(property.description ? { description: property.description } : {}),
          ...(property.enum ? { enum: property.enum } : {}),
        },
      ]),
    ),
    required: config.args_schema.required,
  };
}

function offeredSchema(source: ToolInputSchema, config: ToolConfig): ToolInputSchema {
  const properties = { ...(source.properties ?? {}) };
  for (const name of RUNTIME_ARGUMENTS) delete properties[name];
  const required = (source.required ?? []).filter((name) => name in properties);
  return {
    type: 'object',
    properties,
    ...(config.operation_type === 'transactional' || required.length === 0 ? {} : { required }),
  };
}

function firstPresent(...values: unknown[]): unknown {
  return values.find((value) => value !== undefined && value !== null && value !== '');
}

function coerce(value: unknown, type: 'string' | 'number' | 'integer' | 'boolean'): unknown {
  switch (type) {
    case 'string':
      if (typeof value === 'string') return value.trim() === '' ? undefined : value.trim();
      return typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined;
    case 'number':
    case 'integer': {
      const parsed =
        typeof value === 'number' ? value : typeof value === 'string' ? Number(value.trim()) : NaN;
      if (!Number.isFinite(parsed) || (type === 'integer' && !Number.isInteger(parsed))) return undefined;
      return parsed;
    }
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (value === 'true') return true;
      if (value === 'false') return false;
      return undefined;
  }
}

function compileOrNull(pattern: string): RegExp | null {
  try {
    return new RegExp(pattern);
  } catch {
    return null;
  }
}

/** structuredContent when present, else the JSON of the first text block, else its text. */
function resultBody(result: CallToolResult): unknown {
  if (result.structuredContent !== undefined) return result.structuredContent;
  const text = result.content
    .filter((block): block is { type: 'text'; text: string } => block.type === 'text')
    .map((block) => block.text)
    .join('\n');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function errorText(body: unknown): string {
  if (typeof body === 'string') return body || 'tool returned an error';
  if (body && typeof body === 'object') {
    if ('message' in body && typeof body.message === 'string') return body.message;
    if ('error' in body && typeof body.error === 'string') return body.error;
  }
  return 'tool returned an error';
}
