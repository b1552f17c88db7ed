import type { ContentScreen, RetrievedChunk, ToolArguments, TurnState } from '@agent/contracts';
import { CallOptions, McpService, McpToolResult, PreparedCall, PrepareOptions } from '@agent/mcp';

/** Error of a tool result the tool rails blocked: the agent handles it like any other tool error. */
export const TOOL_RESULT_WITHHELD = 'tool result withheld by the guardrails';

/**
 * The MCP calls of one agent turn, each result screened by the tool rails before the model or an answer sees
 * it: a sanitized result replaces the original, a blocked one becomes a tool error that says whether the tool
 * had run (`executed`), so a transaction that ran is never reported as failed.
 */
export class ScreenedTools {
  constructor(
    private readonly mcp: McpService,
    private readonly screen: ContentScreen,
    private readonly state: TurnState,
  ) {}

  async callTool(
    name: string,
    args: ToolArguments,
    options: CallOptions & PrepareOptions,
  ): Promise<McpToolResult> {
    return this.screened(await this.mcp.callTool(name, args, { ...options, agentId: this.state.agent_id }));
  }

  async call(prepared: PreparedCall, options: CallOptions): Promise<McpToolResult> {
    return this.screened(await this.mcp.call(prepared, { ...options, agentId: this.state.agent_id }));
  }

  private async screened(result: McpToolResult): Promise<McpToolResult> {
    const text = JSON.stringify({ result: result.result ?? null, error: result.error });
    const verdict = await this.screen({ stage: 'tool', source: result.tool_name, text, state: this.state });
    if (verdict.blocked) {
      return {
        ...result,
        ok: false,
        result: { withheld_by: verdict.codes, executed: result.ok },
        error: TOOL_RESULT_WITHHELD,
      };
    }
    if (verdict.text === text) return result;
    const masked = parseBody(verdict.text);
    // Masking a bare number (a CPF sent as a JSON number) leaves no valid JSON: the model reads the text.
    return masked
      ? { ...result, result: masked.result, error: masked.error }
      : { ...result, result: verdict.text, error: result.error === null ? null : verdict.text };
  }
}

/** Whether a tool result was withheld after the tool ran (its effect happened; only its content is gone). */
export function executedButWithheld(result: McpToolResult): boolean {
  const body = result.result;
  return (
    result.error === TOOL_RESULT_WITHHELD &&
    typeof body === 'object' &&
    body !== null &&
    'executed' in body &&
    body.executed === true
  );
}

function parseBody(text: string): { result: unknown; error: string | null } | null {
  try {
    const value = JSON.parse(text) as { result?: unknown; error?: unknown };
    return typeof value.error === 'string' || value.error === null
      ? { result: value.result, error: value.error }
      : null;
  } catch {
    return null;
  }
}

/**
 * Retrieved passages that pass the retrieval rails, masked where a rail sanitized them; a blocked passage is
 * dropped and the agent carries on with the rest.
 */
export async function screenPassages(
  documents: readonly RetrievedChunk[],
  screen: ContentScreen,
  state: TurnState,
  signal?: AbortSignal,
): Promise<RetrievedChunk[]> {
  // Every screening settles before a failure (a caller giving up) is passed on, so each one's cost is on record.
  const settled = await Promise.allSettled(
    documents.map(async (document) => {
      const title = document.title.replace(/\s+/g, ' ');
      const text = `${title}\n${document.content}`;
      const verdict = await screen({
        stage: 'retrieval',
        source: `${document.source}#${document.chunk_index}`,
        text,
        state,
        signal,
      });
      if (verdict.blocked) return null;
      if (verdict.text === text) return document;
      const newline = verdict.text.indexOf('\n');
      return {
        ...document,
        title: newline === -1 ? title : verdict.text.slice(0, newline),
        content: newline === -1 ? verdict.text : verdict.text.slice(newline + 1),
      };
    }),
  );
  const failed = settled.find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
  return settled
    .map((outcome) => (outcome.status === 'fulfilled' ? outcome.value : null))
    .filter((document): document is RetrievedChunk => document !== null);
}
