import { Client } from 'pg';

/** Postgres' code for a database that does not exist (invalid_catalog_name) and for one created meanwhile. */
const NO_SUCH_DATABASE = '3D000';
const DUPLICATE_DATABASE = '42P04';

/** The URL as a line may show it: host, port and database, never the credentials. */
function shown(url: URL): string {
  return `${url.hostname}:${url.port || '5432'}${url.pathname}`;
}

function reason(error: unknown): string {
  return error instanceof Error && error.message !== '' ? error.message : String(error);
}

async function connects(url: string): Promise<void> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 10000 });
  try {
    await client.connect();
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The database of DATABASE_URL, created on its server when missing, so `DATABASE_URL=…/newdb npm test` runs on a
 * fresh name. Resolves with what it did; rejects with one line a person can act on (the server is down, the
 * password is wrong, the role may not create databases), never with the driver's stack.
 */
export async function ensureTestDatabase(databaseUrl: string): Promise<'exists' | 'created'> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  try {
    await connects(databaseUrl);
    return 'exists';
  } catch (error) {
    if ((error as { code?: unknown }).code !== NO_SUCH_DATABASE) {
      throw new Error(`DATABASE_URL (${shown(url)}): cannot connect: ${reason(error)}`);
    }
  }
  const server = new URL(databaseUrl);
  server.pathname = '/postgres';
  const client = new Client({ connectionString: server.toString(), connectionTimeoutMillis: 10000 });
  try {
    await client.connect();
    await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
    return 'created';
  } catch (error) {
    // Another run created it between the two connections.
    if ((error as { code?: unknown }).code === DUPLICATE_DATABASE) return 'exists';
    throw new Error(
      `DATABASE_URL (${shown(url)}): the database does not exist and cannot be created: ${reason(error)}`,
    );
  } finally {
    await client.end().catch(() => undefined);
  }
}
