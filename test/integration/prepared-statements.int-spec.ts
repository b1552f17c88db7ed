import { createDataSource, DatabaseService, statement } from '@agent/database';
import { scratchDatabase, ScratchDatabase } from '../support/scratch-database';

/**
 * DatabaseService.run's named statements on a real server, in a database of their own (the tests change a
 * column's type under statements the pool's connections have prepared).
 */
const url = process.env.DATABASE_URL;
const READ = statement<[], { v: string }>('prepared_probe_read', 'SELECT v FROM probe');

if (url) {
  describe('named statements after a migration', () => {
    let scratch: ScratchDatabase;

    beforeAll(async () => {
      scratch = await scratchDatabase(url, 'prepared');
    });

    afterAll(async () => {
      await scratch?.drop();
    });

    it('prepares a statement again on every connection whose plan a column type change made stale', async () => {
      const dataSource = await createDataSource({ url: scratch.url, poolSize: 3, embedded: false });
      const db = new DatabaseService(dataSource, null, true);
      try {
        await dataSource.query(`CREATE TABLE probe (v text)`);
        await dataSource.query(`INSERT INTO probe VALUES ('x')`);
        // Three at once: the pool opens three connections, and each prepares the statement.
        await Promise.all([db.run(READ, []), db.run(READ, []), db.run(READ, [])]);
        await dataSource.query(`ALTER TABLE probe ALTER COLUMN v TYPE varchar(10)`);
        // Every idle connection now holds a stale plan; each is dropped in turn until a fresh one prepares it.
        expect(await db.run(READ, [])).toEqual([{ v: 'x' }]);
        expect(await db.run(READ, [])).toEqual([{ v: 'x' }]);
        const prepared: { name: string }[] = await dataSource.query(
          'SELECT name FROM pg_prepared_statements',
        );
        expect(prepared.map((row) => row.name)).toEqual([READ.name]);
      } finally {
        await db.onApplicationShutdown();
      }
    });

    it('still fails a statement the server refuses for another reason', async () => {
      const dataSource = await createDataSource({ url: scratch.url, poolSize: 1, embedded: false });
      const db = new DatabaseService(dataSource, null, true);
      try {
        await expect(
          db.run({ name: 'prepared_probe_bad', text: 'SELECT nope FROM probe' }, []),
        ).rejects.toThrow(/column "nope" does not exist/);
      } finally {
        await db.onApplicationShutdown();
      }
    });
  });
} else {
  describe('named statements after a migration', () => {
    it.skip('needs DATABASE_URL (CI sets it): the embedded PGlite never names statements', () => undefined);
  });
}
