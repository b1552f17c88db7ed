import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from '../support/app-process';
import { REPO_ROOT } from '../support/repo-root';
import { onServer } from '../support/scratch-database';
import { ensureTestDatabase } from '../support/test-database';

/**
 * `DATABASE_URL=…/newdb npm test`: the suites' global set-up creates the database when the server lacks it, and
 * a database it cannot reach or make stops the run with one line instead of a stack trace per test file.
 */
const serverUrl = process.env.DATABASE_URL;

function withDatabase(name: string, user?: string): string {
  const url = new URL(serverUrl ?? '');
  url.pathname = `/${name}`;
  if (user) url.username = user;
  return url.toString();
}

describe('the test database of DATABASE_URL', () => {
  it('stops the run with one line when the server cannot be reached', async () => {
    const run = spawnSync(
      process.execPath,
      [
        join(REPO_ROOT, 'node_modules', 'jest', 'bin', 'jest.js'),
        '-c',
        'test/jest.integration.config.js',
        'test/integration/prepared-statements',
      ],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, DATABASE_URL: `postgres://u:secret@127.0.0.1:${await freePort()}/nowhere` },
        encoding: 'utf8',
        timeout: 60000,
      },
    );
    expect(run.status).toBe(1);
    const lines = `${run.stdout}${run.stderr}`.split('\n').filter((line) => line.trim() !== '');
    expect(lines).toEqual([
      expect.stringMatching(/^DATABASE_URL \(127\.0\.0\.1:\d+\/nowhere\): cannot connect: .*ECONNREFUSED/),
    ]);
  }, 90000);

  if (serverUrl) {
    it('creates a missing database once, then finds it', async () => {
      const name = `test_db_${process.pid}_${Date.now().toString(36)}`;
      try {
        expect(await ensureTestDatabase(withDatabase(name))).toBe('created');
        expect(await ensureTestDatabase(withDatabase(name))).toBe('exists');
      } finally {
        await onServer(serverUrl, `DROP DATABASE IF EXISTS "${name}"`);
      }
    });

    it('says in one line that a role which may not create databases cannot make it', async () => {
      const role = `test_db_role_${process.pid}_${Date.now().toString(36)}`;
      await onServer(serverUrl, `CREATE ROLE "${role}" LOGIN NOCREATEDB`);
      try {
        await expect(ensureTestDatabase(withDatabase(`${role}_db`, role))).rejects.toThrow(
          /^DATABASE_URL \(.+\/test_db_role_\w+_db\): the database does not exist and cannot be created: permission denied to create database$/,
        );
      } finally {
        await onServer(serverUrl, `DROP ROLE IF EXISTS "${role}"`);
      }
    });
  } else {
    it.skip('needs DATABASE_URL (CI sets it): creating the test database did not run', () => undefined);
  }
});
