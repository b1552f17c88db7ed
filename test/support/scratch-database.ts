import { Client } from 'pg';

/** A database of a test's own. */
export interface ScratchDatabase {
  url: string;
  /** Drops it, closing whatever is still connected. */
  drop(): Promise<void>;
}

/** Runs one statement on the database of `serverUrl` (CREATE/DROP DATABASE, roles). */
export async function onServer(serverUrl: string, sql: string): Promise<void> {
  const client = new Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * An empty database on the server of `serverUrl` (DATABASE_URL), for a test that reshapes or breaks a schema,
 * or needs one nothing has migrated yet, without touching the database the other suites share.
 */
export async function scratchDatabase(serverUrl: string, prefix: string): Promise<ScratchDatabase> {
  const name = `${prefix}_${process.pid}_${Date.now().toString(36)}`;
  await onServer(serverUrl, `CREATE DATABASE "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => onServer(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
  };
}
