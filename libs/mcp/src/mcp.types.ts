import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ClientMetadata, ToolArguments } from '@agent/contracts';

/** What the agents see of a call (the state's `mcp_results` keep it): contracts own the shape. */
export type { McpToolResult } from '@agent/contracts';

/** Error text of an unreachable server (the reference's "MCP Tool Router indisponível"). */
export const MCP_UNAVAILABLE_ERROR = 'MCP Tool Router unavailable';

export type PreparationErrorCode =
  | 'mcp_disabled'
  | 'not_configured'
  | 'server_disabled'
  | 'missing_parameters'
  | 'invalid_arguments'
  /** The model called a tool its intent does not allow. */
  | 'tool_not_allowed'
  /** The model's arguments are not a JSON object. */
  | 'malformed_arguments';

export interface PreparationError {
  code: PreparationErrorCode;
  message: string;
  missing_parameters?: string[];
  invalid_parameters?: { name: string; reason: string }[];
}

/** A call ready to send: the server and the final arguments. */
export interface PreparedCall {
  tool_name: string;
  server: string;
  arguments: ToolArguments;
}

export type PrepareResult =
  | { ok: true; call: PreparedCall }
  | {
      ok: false;
      tool_name: string;
      server: string | null;
      error: PreparationError;
      arguments: ToolArguments;
    };

/** Whose MCP servers serve a call: the agent_id's own mcp_servers file, else the global one. */
export interface AgentScope {
  agentId?: string;
}

export interface PrepareOptions extends AgentScope {
  /** Values the tool's `map` may read: the client's message metadata with the caller's user_id and tenant_id. */
  context?: ClientMetadata;
  /** Report missing required arguments as an error (default true). */
  requireComplete?: boolean;
}

export interface CallOptions extends AgentScope {
  /** Sent as `confirmed: true`: the customer explicitly confirmed a transactional operation. */
  confirmed?: boolean;
  /** Sent as `idempotency_key`: the server acts at most once per key. */
  idempotencyKey?: string;
}

/** A tool's JSON Schema for its arguments (an object schema), as MCP lists it and the model is offered it. */
export type ToolInputSchema = Tool['inputSchema'];

/** A tool as offered to the LLM (OpenAI function tool) plus the policy the runtime enforces. */
export interface ToolDescriptor {
  name: string;
  server: string;
  description: string;
  parameters: ToolInputSchema;
  operation_type: 'read_only' | 'transactional';
  require_confirmation: boolean;
  requires: string[];
  schema_source: 'mcp' | 'tools.yaml';
}

/** Arguments the runtime owns; never offered to the model. */
export const RUNTIME_ARGUMENTS = ['confirmed', 'confirmation', 'idempotency_key'] as const;
