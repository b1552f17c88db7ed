import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Pool } from 'pg';
import { z } from 'zod';
import { EmbeddedPostgres } from '@agent/database';
import { createHttpServer } from './http';
import { ReferenceStore } from './store';
import { createReferenceMcpServer, SERVER_NAME } from './tools';

const envSchema = z.object({
  MCP_TRANSPORT: z.enum(['http', 'stdio']).default('http'),
  MCP_HOST: z.string().min(1).default('0.0.0.0'),
  MCP_PORT: z.coerce.number().int().min(0).max(65535).default(3100),
  MCP_PATH: z.string().startsWith('/').default('/mcp'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'expected a postgres:// URL')
    .optional()
    .or(z.literal('').transform(() => undefined)),
  REFERENCE_MCP_SCHEMA: z
    .string()
    .regex(/^[a-z_][a-z0-9_]*$/, 'must be a lower-case identifier')
    .default('reference_mcp'),
  REFERENCE_MCP_DATA_DIR: z.string().min(1).default(join('.data', 'reference-mcp')),
  REFERENCE_MCP_RESET: z
    .enum(['true', 'false', '1', '0', ''])
    .default('false')
    .transform((v) => v === 'true' || v === '1'),
});

/** Every log line goes to stderr: on stdio, stdout carries the protocol. */
function log(message: string): void {
  process.stderr.write(`[${SERVER_NAME}] ${message}\n`);
}

async function main(): Promise<void> {
  const parsed = envSchema.safeParse(process.env);
  if (!parsed.success) {
    throw new Error(
      `invalid environment: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  const env = parsed.data;
  const transport = process.argv.includes('--stdio') ? 'stdio' : env.MCP_TRANSPORT;

  // PGlite takes seconds to boot, and much longer on a loaded machine.
  const embedded = env.DATABASE_URL ? null : await EmbeddedPostgres.start(env.REFERENCE_MCP_DATA_DIR, 180000);
  if (embedded) log(`DATABASE_URL is not set: embedded Postgres in ${embedded.dataDir}`);
  const pool = new Pool({
    connectionString: embedded?.url ?? env.DATABASE_URL,
    // PGlite serves one session: a second connection would interleave transactions.
    max: embedded ? 1 : 10,
    connectionTimeoutMillis: 5000,
    application_name: SERVER_NAME,
  });
  pool.on('error', (error) => log(`idle database connection failed: ${error.message}`));
  const store = new ReferenceStore(pool, env.REFERENCE_MCP_SCHEMA);
  await store.setUp(env.REFERENCE_MCP_RESET);
  log(`data ready in schema ${env.REFERENCE_MCP_SCHEMA}${env.REFERENCE_MCP_RESET ? ' (reset)' : ''}`);

  let closing = false;
  const closers: (() => Promise<void>)[] = [];
  const shutdown = async (reason: string) => {
    if (closing) return;
    closing = true;
    log(`stopping (${reason})`);
    for (const close of closers) await close().catch(() => undefined);
    await pool.end().catch(() => undefined);
    await embedded?.stop();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  // Started by a parent over IPC (tests): never outlive it.
  process.on('disconnect', () => void shutdown('parent disconnected'));

  if (transport === 'stdio') {
    const server = createReferenceMcpServer(store);
    const stdio = new StdioServerTransport();
    closers.push(() => server.close());
    process.stdin.on('end', () => void shutdown('stdin closed'));
    await server.connect(stdio);
    log('serving MCP over stdio');
    return;
  }

  const http = createHttpServer({ store, path: env.MCP_PATH, log });
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  );
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(env.MCP_PORT, env.MCP_HOST, () => resolve());
  });
  const port = (http.address() as AddressInfo).port;
  log(`listening on http://${env.MCP_HOST}:${port}${env.MCP_PATH}`);
  process.send?.({ ready: true, port });
}

main().catch((error: unknown) => {
  log(`failed to start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
