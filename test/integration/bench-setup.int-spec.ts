import { Client } from 'pg';
import { BenchFailure, ensureDatabase } from '../../bench/lib';
import { freePort } from '../support/app-process';

/**
 * A benchmark pointed at a database that does not exist creates it; one that cannot reach its server, or may not
 * create the database, stops with one line that names the server, the database and the cause.
 */
const url = process.env.DATABASE_URL;

describe('a benchmark database', () => {
  it('cannot be reached: one line with the server, the database and the cause', async () => {
    const nowhere = `postgres://postgres@127.0.0.1:${await freePort()}/bench_nowhere`;
    const failure = ensureDatabase(nowhere);
    await expect(failure).rejects.toBeInstanceOf(BenchFailure);
    await expect(failure).rejects.toThrow(
      /^cannot reach the database 127\.0\.0\.1:\d+\/bench_nowhere: .*ECONNREFUSED/,
    );
  });

  (url ? it : it.skip)('that does not exist is created', async () => {
    const missing = new URL(url ?? '');
    missing.pathname = `/bench_missing_${process.pid}`;
    const exists = async () => {
      const admin = new Client({ connectionString: url });
      await admin.connect();
      try {
        const rows = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [
          `bench_missing_${process.pid}`,
        ]);
        return rows.rowCount === 1;
      } finally {
        await admin.end();
      }
    };
    try {
      expect(await exists()).toBe(false);
      await ensureDatabase(missing.toString());
      expect(await exists()).toBe(true);
      // There already: nothing to do.
      await ensureDatabase(missing.toString());
    } finally {
      const admin = new Client({ connectionString: url });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS "bench_missing_${process.pid}" WITH (FORCE)`);
      await admin.end();
    }
  });

  (url ? it : it.skip)('that may not be created: one line with the cause', async () => {
    const admin = new Client({ connectionString: url });
    await admin.connect();
    const role = `bench_nocreate_${process.pid}`;
    try {
      await admin.query(`CREATE ROLE ${role} LOGIN NOCREATEDB`);
      const limited = new URL(url ?? '');
      limited.username = role;
      limited.password = '';
      limited.pathname = `/bench_refused_${process.pid}`;
      await expect(ensureDatabase(limited.toString())).rejects.toThrow(
        /^the database .*\/bench_refused_\d+ does not exist and cannot be created: permission denied to create database/,
      );
    } finally {
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
    }
  });
});
