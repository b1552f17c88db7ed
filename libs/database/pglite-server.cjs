// Embedded Postgres (PGlite) served on a loopback port, run as a child process of the app so the app talks
// to it through the ordinary pg driver. Usage: node pglite-server.cjs <dataDir>; reports {port} over IPC.
'use strict';
const { mkdirSync } = require('node:fs');
const { PGlite } = require('@electric-sql/pglite');
const { PGLiteSocketServer } = require('@electric-sql/pglite-socket');

// pgvector, bundled for PGlite in @electric-sql/pglite-pgvector (installed with @electric-sql/pglite-socket);
// without it the database still works and RAG keeps full-text search.
function pgliteExtensions() {
  try {
    const { vector } = require('@electric-sql/pglite-pgvector');
    return { vector };
  } catch {
    return {};
  }
}

async function main() {
  const dataDir = process.argv[2];
  if (!dataDir) throw new Error('usage: pglite-server.cjs <dataDir>');
  mkdirSync(dataDir, { recursive: true });
  const db = await PGlite.create(dataDir, { extensions: pgliteExtensions() });
  // A few sockets so a reconnect never waits for the old one to close; the app's pool uses one.
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 8 });
  await server.start();
  const port = Number(server.getServerConn().split(':').pop());
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    try {
      await server.stop();
      await db.close();
    } finally {
      process.exit(0);
    }
  };
  // While the app is there, stopping is its call: a Ctrl-C reaches the whole process group, and the database
  // must outlive the app's drain of in-flight turns. The app sends 'stop' when it is done.
  const onSignal = () => {
    if (!process.connected) void stop();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // The parent went away: never outlive it.
  process.on('disconnect', stop);
  process.on('message', (message) => {
    if (message === 'stop') void stop();
  });
  // The parent may already be gone (e.g. it failed to start); then there is nobody to serve.
  if (!process.connected) return stop();
  process.send({ port }, (error) => {
    if (error) void stop();
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
