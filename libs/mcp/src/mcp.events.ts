/** How a tool call ended: `unavailable` and `timeout`, the server could not serve it; `error`, the tool failed. */
export type McpCallOutcome = 'ok' | 'unavailable' | 'timeout' | 'error';

/* The events of MCP calls (docs/api.md#events), declared by the module that emits them. */
declare module '@agent/contracts' {
  interface EventPayloads {
    'mcp.tool_call.completed': {
      tool_name: string;
      server: string;
      ok: boolean;
      outcome: McpCallOutcome;
      error: string | null;
      latency_ms: number;
    };
    /** A tool call that failed: before it ran (`preparation`, with the error `code`) or at its server. */
    'NOC.MCP_TOOL_FAILED': {
      tool_name: string;
      server?: string;
      error: string;
      stage: 'preparation' | 'execution';
      code?: string;
    };
  }
}
