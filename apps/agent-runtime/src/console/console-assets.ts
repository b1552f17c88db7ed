import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** Where the operator console is served. Its API calls go to the admin API under the same origin. */
export const CONSOLE_PATH = '/console/';

/**
 * The console is static files only: the data comes from the admin API with the operator's key, so the page
 * itself can be public. The policy keeps anything but this origin's own scripts out of the page that holds
 * an admin key (ECharts sets inline styles, hence style-src 'unsafe-inline').
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** `dist/console` of the repository (or image) this file runs from, compiled or not. */
export function consoleAssetsDir(from = __dirname): string {
  let dir = from;
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) return join(from, 'console');
    dir = parent;
  }
  return join(dir, 'dist', 'console');
}

/**
 * Serves the built console under /console/. Hashed assets are cached for good; index.html is revalidated so
 * a new release is picked up on reload. Without a build, /console/ says how to make one.
 */
export async function registerConsole(app: NestFastifyApplication, root = consoleAssetsDir()): Promise<void> {
  const fastify = app.getHttpAdapter().getInstance();
  if (!existsSync(join(root, 'index.html'))) {
    const notBuilt = (request: FastifyRequest, reply: FastifyReply) =>
      reply.status(404).send({
        error: { code: 'CONSOLE_NOT_BUILT', message: 'the console is not built: run `npm run build`' },
        request_id: String(request.id),
      });
    fastify.get('/console', notBuilt);
    fastify.get('/console/*', notBuilt);
    return;
  }
  await app.register(fastifyStatic, {
    root,
    prefix: CONSOLE_PATH,
    decorateReply: false,
    index: 'index.html',
    cacheControl: false,
    setHeaders: (reply, path) => {
      void reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
      void reply.header(
        'cache-control',
        path.endsWith('index.html') ? 'no-cache' : 'public, max-age=31536000, immutable',
      );
    },
  });
  // The address as people type it.
  fastify.get('/console', (_request, reply) => reply.redirect(CONSOLE_PATH));
}
