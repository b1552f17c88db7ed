import type { AppEnv } from '@agent/config';
import { Logger, Params, PinoLogger } from 'nestjs-pino';
import { serializeRequest } from './http/request-log';

/** pino for the app's logs and the request logs alike. */
export function loggerParams(app: Pick<AppEnv, 'LOG_LEVEL'>): Params {
  return {
    pinoHttp: {
      level: app.LOG_LEVEL,
      // The request id is fastify's (the caller's x-request-id when it is a plain token).
      customProps: (req: { id?: unknown }) => ({ request_id: req.id }),
      // Probes are not logged (one line per replica every few seconds). The middleware sees the URL relative to
      // its mount point; the path as requested is `originalUrl`.
      autoLogging: {
        ignore: (req: { url?: string; originalUrl?: string }) =>
          (req.originalUrl ?? req.url ?? '').startsWith('/health'),
      },
      serializers: { req: serializeRequest },
    },
    // Logging off costs nothing per request: no request logger, no per-request context.
    forRoutes: app.LOG_LEVEL === 'silent' ? [] : undefined,
  };
}

/**
 * The logger Nest starts with, before its modules exist: start-up lines are written as they happen, each with
 * its own time, instead of being buffered and flushed together once the app is built.
 */
export function startupLogger(app: Pick<AppEnv, 'LOG_LEVEL'>): Logger {
  const params = loggerParams(app);
  return new Logger(new PinoLogger(params), params);
}
