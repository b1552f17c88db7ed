import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { SwaggerModule } from '@nestjs/swagger';
import helmet from '@fastify/helmet';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { AppEnv, parseEnvNamespace, validateEnv } from '@agent/config';
import { EventBusService, MetricsService } from '@agent/observability';
import { AppModule } from './app.module';
import { assertAuthConfigured } from './auth/startup-check';
import { registerConsole } from './console/console-assets';
import { closeDrainedConnectionsOnClose } from './http/close-drained-connections';
import { errorBody, HttpErrorFilter, statusOf } from './http/errors';
import { registerJsonBodyParser } from './http/json-body';
import { RequestValidationPipe } from './http/request-validation.pipe';
import { startupLogger } from './logging';
import { assertDemoModelAllowed } from './quick-start/demo-model.start';
import { openApiDocument } from './openapi';

/** A caller's x-request-id is kept when it is a plain token; anything else gets a fresh id. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Longer than any id the API accepts, even fully percent-encoded; a longer segment is refused as invalid. */
const MAX_PARAM_LENGTH = 512;

function fastifyAdapter(app: AppEnv): FastifyAdapter {
  return new FastifyAdapter({
    bodyLimit: app.BODY_LIMIT_BYTES,
    genReqId: (request: IncomingMessage) => {
      const sent = request.headers['x-request-id'];
      return typeof sent === 'string' && REQUEST_ID.test(sent) ? sent : randomUUID();
    },
    // X-Forwarded-For is believed only from the proxies named in TRUST_PROXY, so callers cannot pick their address.
    trustProxy: app.TRUST_PROXY.length > 0 ? app.TRUST_PROXY : false,
    // Receiving headers and body may take this long (handling the request may take longer). Node only tracks the
    // body when the timeout is given at server creation, and checks every connectionsCheckingInterval (30 s by
    // default, far coarser than the timeout itself).
    requestTimeout: app.REQUEST_TIMEOUT_MS,
    http: {
      requestTimeout: app.REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: Math.min(1000, app.REQUEST_TIMEOUT_MS),
    },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Refused before a route is matched, so before the error filter: the envelope is written here.
    frameworkErrors: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      const tooLong = error.code === 'FST_ERR_MAX_PARAM_LENGTH';
      void reply
        .code(statusOf(tooLong ? 'VALIDATION_FAILED' : 'BAD_REQUEST'))
        .send(
          tooLong
            ? errorBody('VALIDATION_FAILED', 'request validation failed', request.id, [
                { field: 'path', errors: [`a path segment is longer than ${MAX_PARAM_LENGTH} characters`] },
              ])
            : errorBody('BAD_REQUEST', 'the URL is not valid', request.id),
        );
    },
    clientErrorHandler: (error, socket) => {
      // Before fastify has a request (timeouts, oversized headers, garbage): the envelope by hand, then close.
      if (error.code === 'ECONNRESET' || socket.destroyed) return;
      const [code, message] =
        error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? (['REQUEST_TIMEOUT', `the request was not received within ${app.REQUEST_TIMEOUT_MS} ms`] as const)
          : error.code === 'HPE_HEADER_OVERFLOW'
            ? (['HEADERS_TOO_LARGE', 'the request headers are too large'] as const)
            : (['BAD_REQUEST', 'malformed HTTP request'] as const);
      const body = JSON.stringify(errorBody(code, message, randomUUID()));
      if (socket.writable) {
        socket.write(
          `HTTP/1.1 ${statusOf(code)} ${code}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      }
      socket.destroy();
    },
  });
}

/** Builds the HTTP application (fastify) without listening; main.ts and the e2e tests share it. */
export async function createApp(): Promise<NestFastifyApplication> {
  // Fail fast, before any module starts, with every bad variable in one error.
  validateEnv(process.env);
  const app = parseEnvNamespace('app');
  assertAuthConfigured(app, parseEnvNamespace('auth'));
  assertDemoModelAllowed(app, parseEnvNamespace('llm'));
  const nest = await NestFactory.create<NestFastifyApplication>(AppModule, fastifyAdapter(app), {
    logger: startupLogger(app),
    // Throw start-up errors to the caller instead of exiting, so main.ts prints them and tests can assert them.
    abortOnError: false,
    // The one body parser is ours (json-body.ts): no form or text bodies.
    bodyParser: false,
  });
  await nest.register(helmet, { contentSecurityPolicy: false });
  nest.useGlobalFilters(new HttpErrorFilter(nest.get(EventBusService)));
  nest.useGlobalPipes(new RequestValidationPipe());
  const fastify = nest.getHttpAdapter().getInstance();
  registerJsonBodyParser(fastify);
  closeDrainedConnectionsOnClose(fastify);
  const metrics = nest.get(MetricsService);
  fastify.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
    done();
  });
  fastify.addHook('onResponse', (request, reply, done) => {
    metrics.httpDuration.observe(
      {
        method: request.method,
        route: request.routeOptions.url ?? 'unmatched',
        status: String(reply.statusCode),
      },
      reply.elapsedTime / 1000,
    );
    done();
  });
  SwaggerModule.setup('docs', nest, openApiDocument(nest), { jsonDocumentUrl: 'docs/json' });
  await registerConsole(nest);
  return nest;
}

export type { INestApplication };
