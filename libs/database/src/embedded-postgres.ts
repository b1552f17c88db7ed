import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import type { PGLiteSocketServer } from '@electric-sql/pglite-socket';

/**
 * The embedded default: PGlite (WASM Postgres) served on a private loopback port, so the app reaches it
 * through the same pg/TypeORM code path as a real server. Single-process and no fsync: for trying the
 * service and for tests, never for production.
 */
export class EmbeddedPostgres {
  private constructor(
    private readonly db: PGlite,
    private readonly server: PGLiteSocketServer,
    readonly port: number,
    readonly dataDir: string,
  ) {}

  static async start(dataDir: string): Promise<EmbeddedPostgres> {
    const absolute = resolve(dataDir);
    mkdirSync(absolute, { recursive: true });
    const { PGlite } = await import('@electric-sql/pglite');
    const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
    const db = await PGlite.create(absolute);
    // A few sockets so a reconnect never waits for the old one to close; the pool itself uses one.
    const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 4 });
    await server.start();
    const port = Number(server.getServerConn().split(':').pop());
    if (!Number.isInteger(port) || port <= 0) {
      await server.stop();
      await db.close();
      throw new Error('embedded Postgres did not bind a TCP port');
    }
    return new EmbeddedPostgres(db, server, port, absolute);
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  async stop(): Promise<void> {
    await this.server.stop();
    await this.db.close();
  }
}
