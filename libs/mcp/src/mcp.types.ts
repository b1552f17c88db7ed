import type { JsonRecord } from '@agent/contracts';

/** What the agents see of a call: never an exception. */
export interface McpToolResult {
  ok: boolean;
  /** The tool's structured answer; on a business error it carries the error payload too. */
  result: unknown;
  error: string | null;
  tool_name: string;
  server: string | null;
  latency_ms: number;
}

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
  arguments: JsonRecord;
}

export type PrepareResult =
  | { ok: true; call: PreparedCall }
  | { ok: false; tool_name: string; server: string | null; error: PreparationError; arguments: JsonRecord };

/** Whose MCP servers serve a call: the agent_id's own mcp_servers file, else the global one. */
export interface AgentScope {
  agentId?: string;
}

export interface PrepareOptions extends AgentScope {
  /** Values the tool's `map` may read (message metadata, user_id, ...). */
  context?: JsonRecord;
  /** Report missing required arguments as an error (default true). */
  requireComplete?: boolean;
}

export interface CallOptions extends AgentScope {
  /** Sent as `confirmed: true`: the customer explicitly confirmed a transactional operation. */
  confirmed?: boolean;
  /** Sent as `idempotency_key`: the server acts at most once per key. */
  idempotencyKey?: string;
}

/** A tool as offered to the LLM (OpenAI function tool) plus the policy the runtime enforces. */
export interface ToolDescriptor {
  name: string;
  server: string;
  description: string;
  parameters: JsonRecord;
  operation_type: 'read_only' | 'transactional';
  require_confirmation: boolean;
  requires: string[];
  schema_source: 'mcp' | 'tools.yaml';
}

/** Arguments the runtime owns; never offered to the model. */
export const RUNTIME_ARGUMENTS = ['confirmed', 'confirmation', 'idempotency_key'] as const;
