import { CodedError } from '@agent/contracts';

export const MCP_ERROR_CODES = ['MCP_UNAVAILABLE', 'MCP_TIMEOUT'] as const;
export type McpErrorCode = (typeof MCP_ERROR_CODES)[number];

/** The server cannot be reached (connect failed, or the connection dropped and one reconnect failed). */
export class McpUnavailableError extends CodedError<McpErrorCode> {
  constructor(server: string, cause: unknown) {
    super('MCP_UNAVAILABLE', `MCP server ${server} unreachable: ${describeError(cause)}`, { cause });
  }
}

/** The server did not answer within the call's timeout. */
export class McpTimeoutError extends CodedError<McpErrorCode> {
  constructor(server: string, timeoutMs: number, cause: unknown) {
    super('MCP_TIMEOUT', `MCP server ${server} did not answer within ${timeoutMs} ms`, { cause });
  }
}

/** An error's message with its cause's, by shape (errors may come from another realm). */
export function describeError(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  if (typeof message !== 'string') return String(error);
  const causeMessage = ((error as { cause?: { message?: unknown } }).cause ?? {}).message;
  return typeof causeMessage === 'string' && causeMessage !== '' ? `${message}: ${causeMessage}` : message;
}
