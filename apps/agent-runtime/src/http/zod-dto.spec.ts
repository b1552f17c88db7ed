import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { ApiOkResponse, DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { turnResponseSchema } from '@agent/workflow';
import { zodDto } from './zod-dto';

const sharedSchema = z.object({ id: z.string() });
const fixtureSchema = z.object({
  name: z.string().min(1).max(10),
  count: z.number().int().min(0),
  ratio: z.number(),
  flag: z.boolean().optional(),
  at: z.string().datetime(),
  kind: z.enum(['a', 'b']).nullable(),
  either: z.union([z.literal('x'), z.enum(['y', 'z'])]),
  tags: z.array(z.string()),
  extras: z.record(z.string(), z.unknown()),
  shared: sharedSchema.nullable(),
  inner: z.object({ level: z.number().int() }).passthrough(),
  described: z.string().describe('From the schema'),
});
const FixtureDto = zodDto('FixtureDto', fixtureSchema, {
  name: { example: 'n', description: 'From the words' },
});
// Declared after the DTO that nests it: the nested type is resolved when the document is written.
zodDto('SharedDto', sharedSchema);

@Controller('fixture')
class FixtureController {
  @Get()
  @ApiOkResponse({ type: FixtureDto })
  get(): void {}
}

@Module({ controllers: [FixtureController] })
class FixtureModule {}

describe('zodDto', () => {
  it('describes the schema in the OpenAPI document: types, presence, nullability, nested DTOs', async () => {
    const app = await NestFactory.create<NestFastifyApplication>(FixtureModule, new FastifyAdapter(), {
      preview: true,
      logger: false,
    });
    const { components } = SwaggerModule.createDocument(app, new DocumentBuilder().build());
    await app.close();
    expect(components?.schemas).toEqual({
      FixtureDto: {
        type: 'object',
        properties: {
          name: { type: 'string', minLength: 1, maxLength: 10, example: 'n', description: 'From the words' },
          count: { type: 'integer', minimum: 0 },
          ratio: { type: 'number' },
          flag: { type: 'boolean' },
          at: { type: 'string', format: 'date-time' },
          kind: { type: 'string', enum: ['a', 'b'], nullable: true },
          either: { type: 'string', enum: ['x', 'y', 'z'] },
          tags: { type: 'array', items: { type: 'string' } },
          extras: { type: 'object', additionalProperties: true },
          shared: { nullable: true, type: 'object', allOf: [{ $ref: '#/components/schemas/SharedDto' }] },
          inner: { $ref: '#/components/schemas/FixtureInnerDto' },
          described: { type: 'string', description: 'From the schema' },
        },
        required: [
          'name',
          'count',
          'ratio',
          'at',
          'kind',
          'either',
          'tags',
          'extras',
          'shared',
          'inner',
          'described',
        ],
      },
      SharedDto: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      FixtureInnerDto: { type: 'object', properties: { level: { type: 'integer' } }, required: ['level'] },
    });
  });

  it('refuses a construct it cannot describe, naming the field', () => {
    expect(() => zodDto('WhenDto', z.object({ when: z.date() }))).toThrow('WhenDto.when: ZodDate');
    expect(() => zodDto('AgainDto', sharedSchema)).toThrow('the schema already has the DTO SharedDto');
  });

  it('is what openapi.json says the turn response is: the same fields, the same required ones', () => {
    const document = JSON.parse(
      readFileSync(join(__dirname, '..', '..', '..', '..', 'openapi.json'), 'utf8'),
    ) as {
      components: { schemas: Record<string, { properties: Record<string, unknown>; required: string[] }> };
    };
    const documented = document.components.schemas.TurnResponseDto;
    const fields = Object.entries(turnResponseSchema.shape);
    expect(Object.keys(documented.properties)).toEqual(fields.map(([key]) => key));
    // A response field is required unless it can be absent: a default always fills it in.
    expect(documented.required).toEqual(
      fields
        .filter(([, field]) => field.safeParse(undefined).data !== undefined || !field.isOptional())
        .map(([key]) => key),
    );
  });
});
