import 'reflect-metadata';
import { INestApplication, ValidationPipe } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { SwaggerModule } from '@nestjs/swagger';
import helmet from '@fastify/helmet';
import { randomUUID } from 'node:crypto';
import { parseEnvNamespace, validateEnv } from '@agent/config';
import { EventBusService, MetricsService } from '@agent/observability';
import { AppModule } from './app.module';
import { assertAuthConfigured } from './auth/startup-check';
import { registerConsole } from './console/console-assets';
import { flattenValidationErrors, HttpErrorFilter, RequestValidationError } from './http/errors';
import { startupLogger } from './logging';
import { openApiDocument } from './openapi';

/** Builds the HTTP application (fastify) without listening; main.ts and the e2e tests share it. */
export async function createApp(): Promise<NestFastifyApplication> {
  // Fail fast, before any module starts, with every bad variable in one error.
  validateEnv(process.env);
  const app = parseEnvNamespace('app');
  assertAuthConfigured(app, parseEnvNamespace('auth'));
  const adapter = new FastifyAdapter({
    bodyLimit: app.BODY_LIMIT_BYTES,
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    trustProxy: true,
  });
  const nest = await NestFactory.create<NestFastifyApplication>(AppModule, adapter, {
    logger: startupLogger(app),
    // Throw start-up errors to the caller instead of exiting, so main.ts prints them and tests can assert them.
    abortOnError: false,
  });
  await nest.register(helmet, { contentSecurityPolicy: false });
  nest.useGlobalPipes(
    new ValidationPipe({
      whitelist: true,
      forbidNonWhitelisted: true,
      transform: true,
      exceptionFactory: (errors) => new RequestValidationError(flattenValidationErrors(errors)),
    }),
  );
  nest.useGlobalFilters(new HttpErrorFilter(nest.get(EventBusService)));
  const metrics = nest.get(MetricsService);
  const fastify = nest.getHttpAdapter().getInstance();
  fastify.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', String(request.id));
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
  SwaggerModule.setup('docs', nest, openApiDocument(nest), {
    jsonDocumentUrl: 'docs/json',
  });
  await registerConsole(nest);
  return nest;
}

export type { INestApplication };
