import { createRequire } from 'node:module';
import { AppEnv, EnvValidationError } from '@agent/config';
import { Logger, Params, PinoLogger } from 'nestjs-pino';
import { serializeRequest } from './http/request-log';

type LogSettings = Pick<AppEnv, 'LOG_LEVEL' | 'LOG_FORMAT'>;

/**
 * The pino-pretty transport for LOG_FORMAT=pretty. It is a development dependency (the production image logs
 * JSON), so asking for it where it is not installed is a configuration error, said before anything logs.
 */
function prettyTransport(): { target: string; options: Record<string, unknown> } {
  let target: string;
  try {
    target = createRequire(__filename).resolve('pino-pretty');
  } catch {
    throw new EnvValidationError([
      'LOG_FORMAT: pretty needs the pino-pretty package, a development dependency (npm ci installs it); use json here',
    ]);
  }
  return {
    target,
    options: {
      colorize: process.stdout.isTTY === true,
      translateTime: 'SYS:HH:MM:ss.l',
      messageFormat: '{if context}[{context}] {end}{msg}',
      ignore: 'pid,hostname,context',
    },
  };
}

/** pino for the app's logs and the request logs alike. */
export function loggerParams(app: LogSettings): Params {
  return {
    pinoHttp: {
      level: app.LOG_LEVEL,
      ...(app.LOG_FORMAT === 'pretty' ? { transport: prettyTransport() } : {}),
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
export function startupLogger(app: LogSettings): Logger {
  const params = loggerParams(app);
  return new Logger(new PinoLogger(params), params);
}
