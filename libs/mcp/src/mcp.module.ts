import { Module } from '@nestjs/common';
import { parseEnvNamespace } from '@agent/config';
import { MCP_ENV, McpService } from './mcp.service';

/** MCP clients (official SDK), the tool router and tool policies. */
@Module({
  providers: [{ provide: MCP_ENV, useFactory: () => parseEnvNamespace('mcp') }, McpService],
  exports: [McpService],
})
export class McpModule {}
