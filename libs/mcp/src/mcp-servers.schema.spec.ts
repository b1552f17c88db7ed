import { EnvValidationError, parseEnvNamespace } from '@agent/config';
import { envKeyOf, expandEnv, mcpServersFileSchema } from './mcp-servers.schema';

describe('mcp_servers.yaml and MCP env', () => {
  it('validates each transport with its own fields', () => {
    const parsed = mcpServersFileSchema.safeParse({
      servers: {
        ok: { transport: 'streamable_http', url: 'http://mcp:3100/mcp' },
        local: { transport: 'stdio', command: 'node', args: ['server.js', '--stdio'] },
        bad: { transport: 'streamable_http', url: 'ftp://x' },
        wrong: { transport: 'sse', url: 'http://x' },
      },
    });
    expect(parsed.success).toBe(false);
    const paths = parsed.error?.issues.map((i) => i.path.join('.'));
    expect(paths).toEqual(expect.arrayContaining(['servers.bad.url', 'servers.wrong.transport']));
  });

  it('reads MCP_SERVER_<NAME>_URL overrides and rejects a bad one', () => {
    expect(envKeyOf('retail-orders.v2')).toBe('RETAIL_ORDERS_V2');
    const env = parseEnvNamespace('mcp', {
      MCP_SERVER_RETAIL_URL: 'http://mcp:3100/mcp/',
      MCP_CALL_TIMEOUT_MS: '2500',
    });
    expect(env.MCP_SERVER_URLS).toEqual({ RETAIL: 'http://mcp:3100/mcp' });
    expect(env.MCP_CALL_TIMEOUT_MS).toBe(2500);
    expect(() => parseEnvNamespace('mcp', { MCP_SERVER_TELECOM_URL: 'not a url' })).toThrow(
      EnvValidationError,
    );
    expect(() => parseEnvNamespace('rag', { RAG_CHUNK_SIZE: '100', RAG_CHUNK_OVERLAP: '100' })).toThrow(
      /RAG_CHUNK_OVERLAP: must be smaller than RAG_CHUNK_SIZE/,
    );
  });

  it('expands ${VAR} in headers and stdio env', () => {
    expect(expandEnv('Bearer ${TOKEN}', { TOKEN: 'abc' })).toBe('Bearer abc');
    expect(expandEnv('${MISSING}-x', {})).toBe('-x');
  });
});
