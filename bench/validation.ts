/**
 * npm run bench:validation — what validating a channel message costs per turn: the app's RequestValidationPipe
 * (class-validator through Nest's ValidationPipe, on the body and the `:channel` parameter, as a turn runs it)
 * beside the schemas compiled with ajv that validated requests before (the same rules, read from the OpenAPI
 * document, compiled by fastify's own ajv compiler with the options that path used) and beside the floor: parsing
 * the body, which every request pays anyway. A typical message and a refused one (an id with a space, an unknown
 * field); CPU microseconds per message over alternating rounds, the median round reported.
 * Options (env): BENCH_MESSAGES (messages per round, default 20000), BENCH_ROUNDS (default 7).
 */
import 'reflect-metadata';
import AjvCompiler from '@fastify/ajv-compiler';
import type { ArgumentMetadata } from '@nestjs/common';
import type { OpenAPIObject, ParameterObject, SchemaObject } from '@nestjs/swagger';
import { loadavg } from 'node:os';
import { ChannelMessageDto, ChannelParamDto } from '../apps/agent-runtime/src/http/channel-message.dto';
import { RequestValidationPipe } from '../apps/agent-runtime/src/http/request-validation.pipe';
import { generateOpenApiDocument } from '../apps/agent-runtime/src/openapi';
import { consoleTable, percentile, round } from './lib';

const TYPICAL = JSON.stringify({
  tenant_id: 'acme',
  agent_id: 'telecom_contas',
  session_id: 'web-7f3a2c91',
  message_id: 'm-2b6e0d4a-19f3-4c57-8d2e-6a0f3b71c9e4',
  user_id: 'cust-4821',
  text: 'Minha fatura deste mês veio mais alta que o normal, podem verificar o que aconteceu?',
  metadata: {
    locale: 'pt-BR',
    channel_user: { id: 'wa-5511999990000', name: 'Maria' },
    app_version: '4.12.0',
  },
});
const REFUSED = JSON.stringify({ ...(JSON.parse(TYPICAL) as object), session_id: 'web 7f3a', debug: true });

type Validate = (body: unknown) => Promise<boolean> | boolean;

/** The old path: the document's schemas, closed to unknown properties, compiled once by fastify's ajv compiler. */
function compiledSchemas(document: OpenAPIObject): Validate {
  const body = document.components?.schemas?.ChannelMessageDto;
  const parameters = document.paths['/v1/channels/{channel}/messages'].post?.parameters ?? [];
  const channel = parameters.find((parameter): parameter is ParameterObject => 'in' in parameter);
  if (!body || !channel?.schema) throw new Error('the OpenAPI document has no channel message schemas');
  const compile = AjvCompiler()(
    {},
    {
      customOptions: {
        allErrors: true,
        coerceTypes: false,
        useDefaults: false,
        removeAdditional: false,
        strict: true,
        keywords: ['example'],
      },
    },
  );
  const closed = (schema: SchemaObject) => ({ ...schema, additionalProperties: false });
  const validateBody = compile({ schema: closed(body as SchemaObject), httpPart: 'body' });
  const validateParams = compile({
    schema: closed({ type: 'object', properties: { channel: channel.schema }, required: ['channel'] }),
    httpPart: 'params',
  });
  const validateQuery = compile({ schema: closed({ type: 'object' }), httpPart: 'querystring' });
  return (message) =>
    [validateParams({ channel: 'web' }), validateQuery({}), validateBody(message)].every(Boolean);
}

/** The new path: the pipe on the `:channel` parameter and on the body, as Nest runs it before the handler. */
function validationPipe(): Validate {
  const pipe = new RequestValidationPipe();
  const param: ArgumentMetadata = { type: 'param', metatype: ChannelParamDto };
  const body: ArgumentMetadata = { type: 'body', metatype: ChannelMessageDto };
  return async (message) => {
    try {
      await pipe.transform({ channel: 'web' }, param);
      await pipe.transform(message, body);
      return true;
    } catch {
      return false;
    }
  };
}

/** CPU µs per message of parsing `text` and validating it, `count` times in a row. */
async function cpuMicros(validate: Validate | null, text: string, count: number): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    const parsed: unknown = JSON.parse(text);
    if (validate) await validate(parsed);
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

async function main(): Promise<void> {
  const count = Number(process.env.BENCH_MESSAGES ?? '20000');
  const rounds = Number(process.env.BENCH_ROUNDS ?? '7');
  const paths: [string, Validate | null][] = [
    ['floor: JSON.parse of the body', null],
    ['compiled JSON schemas (ajv, before)', compiledSchemas(await generateOpenApiDocument())],
    ['RequestValidationPipe (class-validator, now)', validationPipe()],
  ];
  for (const [, validate] of paths) {
    if (validate && (!(await validate(JSON.parse(TYPICAL))) || (await validate(JSON.parse(REFUSED))))) {
      throw new Error('a path does not accept the typical message and refuse the other one');
    }
  }
  const samples = new Map<string, number[]>();
  for (let round = 0; round < rounds; round++) {
    for (const [name, validate] of round % 2 === 0 ? paths : [...paths].reverse()) {
      for (const [kind, text] of [
        ['typical', TYPICAL],
        ['refused', REFUSED],
      ] as const) {
        const key = `${name}|${kind}`;
        samples.set(key, [...(samples.get(key) ?? []), await cpuMicros(validate, text, count)]);
      }
    }
  }
  const median = (name: string, kind: string) => percentile(samples.get(`${name}|${kind}`) ?? [], 50);
  const [floor] = paths[0];
  const report = [
    `Node ${process.version}, load average ${loadavg()
      .map((load) => round(load, 1))
      .join(' ')}, ` + `${rounds} rounds of ${count} messages (median round)`,
    '',
    '| path | typical µs | above the floor | refused µs | above the floor |',
    '| --- | --- | --- | --- | --- |',
    ...paths.map(([name]) => {
      const cells = [
        name,
        round(median(name, 'typical'), 2),
        name === floor ? '—' : round(median(name, 'typical') - median(floor, 'typical'), 2),
        round(median(name, 'refused'), 2),
        name === floor ? '—' : round(median(name, 'refused') - median(floor, 'refused'), 2),
      ];
      return `| ${cells.join(' | ')} |`;
    }),
  ];
  console.log(report[0]);
  console.log(consoleTable(report));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
