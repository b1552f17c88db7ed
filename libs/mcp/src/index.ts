export * from './mcp.module';
export * from './mcp.service';
export * from './mcp.types';
export { MCP_ERROR_CODES } from './mcp.errors';
export type { McpErrorCode } from './mcp.errors';
export { envKeyOf, mcpServersFileSchema } from './mcp-servers.schema';
export type { McpServerConfig, McpServersFile } from './mcp-servers.schema';
export type { McpServerHealth } from './mcp-connection';
