import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { AppModule } from './app.module';

export function openApiConfig(): Omit<OpenAPIObject, 'paths'> {
  return new DocumentBuilder()
    .setTitle('Agent Runtime')
    .setDescription(
      'Enterprise conversational agent runtime: one turn per request, semantic route stickiness, global session control. ' +
        'Channel endpoints take a channel key bound to a tenant, admin endpoints an admin key (global or per tenant): ' +
        '`Authorization: Bearer <key>`. Errors are `{error: {code, message, details?}, request_id}`.',
    )
    .setVersion('0.1.0')
    .addBearerAuth()
    .build();
}

/** The document served at /docs for a running app. */
export function openApiDocument(app: NestFastifyApplication): OpenAPIObject {
  return SwaggerModule.createDocument(app, openApiConfig());
}

/**
 * The same document without starting anything: Nest's preview mode builds the module graph but instantiates
 * no provider (no database, no config files). `openapi.json` is this, and a unit test keeps them equal.
 */
export async function generateOpenApiDocument(): Promise<OpenAPIObject> {
  const app = await NestFactory.create<NestFastifyApplication>(AppModule, new FastifyAdapter(), {
    preview: true,
    logger: false,
    abortOnError: false,
  });
  try {
    return openApiDocument(app);
  } finally {
    await app.close();
  }
}
