import { z } from 'zod';

const identifier = z
  .string()
  .trim()
  .regex(/^[A-Za-z][A-Za-z0-9_.-]*$/, 'must be an identifier (letters, digits, _ . -)');

const httpServerSchema = z
  .object({
    transport: z.literal('streamable_http'),
    url: z
      .string()
      .url()
      .refine((value) => /^https?:\/\//.test(value), 'must be an http(s) URL'),
    enabled: z.boolean().default(true),
    description: z.string().default(''),
    /** Static request headers (an API gateway key, for instance); values support ${ENV_VAR}. */
    headers: z.record(z.string()).default({}),
    timeout_ms: z.number().int().min(100).max(600000).optional(),
  })
  .strict();

const stdioServerSchema = z
  .object({
    transport: z.literal('stdio'),
    command: z.string().trim().min(1),
    args: z.array(z.string()).default([]),
    /** Extra environment of the child process; values support ${ENV_VAR}. */
    env: z.record(z.string()).default({}),
    cwd: z.string().optional(),
    enabled: z.boolean().default(true),
    description: z.string().default(''),
    timeout_ms: z.number().int().min(100).max(600000).optional(),
  })
  .strict();

export const mcpServerSchema = z.discriminatedUnion('transport', [httpServerSchema, stdioServerSchema]);
export const mcpServersFileSchema = z.object({ servers: z.record(identifier, mcpServerSchema) }).strict();

export type McpServerConfig = z.output<typeof mcpServerSchema>;
export type McpHttpServerConfig = z.output<typeof httpServerSchema>;
export type McpStdioServerConfig = z.output<typeof stdioServerSchema>;
export type McpServersFile = z.output<typeof mcpServersFileSchema>;

/** The MCP_SERVER_<NAME>_URL key part of a server name: upper-cased, non-alphanumerics as `_`. */
export function envKeyOf(serverName: string): string {
  return serverName.toUpperCase().replace(/[^A-Z0-9]/g, '_');
}

/** Replaces ${VAR} with the environment's value (empty when unset). */
export function expandEnv(value: string, env: NodeJS.ProcessEnv = process.env): string {
  return value.replace(/\$\{([A-Z_][A-Z0-9_]*)\}/g, (_match, name: string) => env[name] ?? '');
}
