import type { FastifyInstance } from 'fastify';

/**
 * Lets closing the app end once the requests under way have their answers. Node's server.close() drops only the
 * connections idle at that instant: one whose answer was still being written (a streamed turn) stays open as
 * keep-alive once it ends, and so does one a client opened without sending a request yet (a client reconnecting
 * after an aborted stream, a balancer's spare); close() then waits for the client to hang up, up to the keep-alive
 * timeout it was told (72 s). Once no request is under way, every connection left is idle: all of them close.
 */
export function closeDrainedConnectionsOnClose(fastify: FastifyInstance): void {
  const server = fastify.server;
  let underWay = 0;
  let closing = false;
  const closeIfDrained = () => {
    if (closing && underWay === 0) server.closeAllConnections();
  };
  server.on('request', (_request, response) => {
    underWay++;
    // 'close' follows the answer's end or the client's hang-up, hijacked answers included.
    response.once('close', () => {
      underWay--;
      closeIfDrained();
    });
  });
  // Before server.close(): the requests under way still answer, on connections that then close.
  fastify.addHook('preClose', (done) => {
    closing = true;
    closeIfDrained();
    done();
  });
}
