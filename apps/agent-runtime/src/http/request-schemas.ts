import type { OpenAPIObject, ParameterObject, ReferenceObject, SchemaObject } from '@nestjs/swagger';
import Ajv, { ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type {
  FastifyInstance,
  FastifySchema,
  FastifySchemaCompiler,
  FastifySchemaValidationError,
  preValidationHookHandler,
  RouteOptions,
} from 'fastify';
import { FieldErrors, RequestValidationError } from '../app.errors';
import { PATTERN_MESSAGES } from './request-rules';

type JsonSchema = Record<string, unknown>;

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** More than this many field errors in one answer says nothing more to the caller. */
const MAX_FIELD_ERRORS = 20;

/** Resolves `#/components/schemas/X` references (request DTOs are flat, so one level of nesting is plenty). */
function resolve(document: OpenAPIObject, schema: SchemaObject | ReferenceObject): JsonSchema {
  if ('$ref' in schema) {
    const name = schema.$ref.replace('#/components/schemas/', '');
    const target = document.components?.schemas?.[name];
    if (!target) throw new Error(`OpenAPI schema ${schema.$ref} not found`);
    return resolve(document, target);
  }
  const { properties, items, ...rest } = schema;
  return {
    ...rest,
    ...(properties
      ? {
          properties: Object.fromEntries(
            Object.entries(properties).map(([name, property]) => [name, resolve(document, property)]),
          ),
          additionalProperties: schema.additionalProperties ?? false,
        }
      : {}),
    ...(items ? { items: resolve(document, items) } : {}),
  };
}

/** `{type: object}` of the path or query parameters of an operation; unknown query parameters are refused. */
function parametersSchema(
  document: OpenAPIObject,
  parameters: (ParameterObject | ReferenceObject)[],
  location: 'path' | 'query',
): JsonSchema | undefined {
  const own = parameters.filter(
    (parameter): parameter is ParameterObject => !('$ref' in parameter) && parameter.in === location,
  );
  if (own.length === 0) {
    return location === 'query' ? { type: 'object', additionalProperties: false } : undefined;
  }
  return {
    type: 'object',
    properties: Object.fromEntries(
      own.map((parameter) => [parameter.name, parameter.schema ? resolve(document, parameter.schema) : {}]),
    ),
    required: own.filter((parameter) => parameter.required).map((parameter) => parameter.name),
    additionalProperties: false,
  };
}

/**
 * The fastify route schemas (body, querystring, params) of every operation of the OpenAPI document, keyed by
 * `METHOD /path/:param`: the document generated from the DTOs is the one description of what is accepted.
 */
export function routeSchemas(document: OpenAPIObject): Map<string, FastifySchema> {
  const schemas = new Map<string, FastifySchema>();
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of HTTP_METHODS) {
      const operation = item[method];
      if (!operation) continue;
      const parameters = operation.parameters ?? [];
      const body =
        operation.requestBody && !('$ref' in operation.requestBody)
          ? operation.requestBody.content['application/json']?.schema
          : undefined;
      const schema: FastifySchema = {
        querystring: parametersSchema(document, parameters, 'query'),
        ...(body ? { body: resolve(document, body) } : {}),
      };
      const params = parametersSchema(document, parameters, 'path');
      if (params) schema.params = params;
      schemas.set(`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`, schema);
    }
  }
  return schemas;
}

/**
 * Bodies are JSON and validated as sent (a number is not a string); path and query parameters are text and
 * coerced (`limit=5` is the integer 5, `purge_memory=true` the boolean). Both report every error.
 */
function compilers(): { body: Ajv; text: Ajv } {
  const options = { allErrors: true, useDefaults: false, removeAdditional: false, strict: true } as const;
  const body = new Ajv({ ...options, coerceTypes: false });
  const text = new Ajv({ ...options, coerceTypes: true });
  for (const ajv of [body, text]) {
    ajv.addVocabulary(['example']);
    addFormats(ajv, ['date-time']);
  }
  return { body, text };
}

let ajv: { body: Ajv; text: Ajv } | null = null;
const validators = new Map<string, ValidateFunction>();

/**
 * One compiled validator per distinct schema and part for the whole process: compiling is the expensive step
 * (milliseconds each), and most admin routes share their path and query schemas.
 */
const compile: FastifySchemaCompiler<JsonSchema> = ({ schema, httpPart }) => {
  const part = httpPart === 'body' ? 'body' : 'text';
  const key = `${part}:${JSON.stringify(schema)}`;
  let validate = validators.get(key);
  if (!validate) {
    ajv ??= compilers();
    validate = ajv[part].compile(schema);
    validators.set(key, validate);
  }
  return validate;
};

/**
 * Attaches the schemas of the OpenAPI document to the routes as Nest registers them. Validation runs in fastify
 * (compiled once per route) with `attachValidation`: the RequestValidationError waits on the request and
 * RequestSchemaGuard throws it after the rate limit and the key check, as the guards' order promises.
 */
export function registerRequestSchemas(fastify: FastifyInstance, document: OpenAPIObject): void {
  const schemas = routeSchemas(document);
  fastify.setValidatorCompiler(compile);
  fastify.setSchemaErrorFormatter(
    (errors, part) =>
      new RequestValidationError(fieldErrors(errors, part === 'querystring' ? 'query' : part)),
  );
  fastify.addHook('onRoute', (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const schema = schemas.get(`${methods[0]} ${route.url}`);
    if (!schema) return;
    route.schema = { ...route.schema, ...schema };
    route.attachValidation = true;
    if (schema.body !== undefined && !requiresFields(schema.body)) {
      const earlier = route.preValidation === undefined ? [] : [route.preValidation].flat();
      route.preValidation = [...earlier, absentBodyIsEmpty];
    }
  });
}

/** True when a body schema names a required property: then the body cannot be left out. */
function requiresFields(schema: unknown): boolean {
  if (typeof schema !== 'object' || schema === null || !('required' in schema)) return false;
  return Array.isArray(schema.required) && schema.required.length > 0;
}

/**
 * A route whose body fields are all optional takes no body as an empty object (`curl -X POST` without `-d`, or an
 * empty `application/json` body); a body that is there is validated as sent, so `null` or `[]` is still a 400.
 */
const absentBodyIsEmpty: preValidationHookHandler = (request, _reply, done) => {
  if (request.body === undefined) request.body = {};
  done();
};

/** Field errors of a failed validation, in the shape of the 400 `details`: `[{field, errors[]}]`. */
function fieldErrors(errors: FastifySchemaValidationError[], part: string): FieldErrors {
  const byField = new Map<string, string[]>();
  for (const error of errors) {
    const path = error.instancePath.split('/').slice(1).join('.');
    const { field, message } = describe(error, path, part);
    byField.set(field, [...(byField.get(field) ?? []), message]);
    if (byField.size >= MAX_FIELD_ERRORS) break;
  }
  return [...byField.entries()].map(([field, messages]) => ({ field, errors: messages }));
}

function describe(
  error: FastifySchemaValidationError,
  path: string,
  part: string,
): { field: string; message: string } {
  const params = error.params;
  const field = path || part;
  switch (error.keyword) {
    case 'required': {
      const missing = String(params.missingProperty);
      return { field: path ? `${path}.${missing}` : missing, message: `${missing} is required` };
    }
    case 'additionalProperties': {
      const extra = String(params.additionalProperty);
      return { field: path ? `${path}.${extra}` : extra, message: `property ${extra} should not exist` };
    }
    case 'pattern': {
      const meaning = PATTERN_MESSAGES[String(params.pattern)];
      return { field, message: `${field} ${meaning ?? `must match ${String(params.pattern)}`}` };
    }
    case 'maxLength':
      return { field, message: `${field} must be at most ${String(params.limit)} characters` };
    case 'minLength':
      return { field, message: `${field} must not be empty` };
    case 'type':
      return { field, message: `${field} must be ${articled(String(params.type))}` };
    case 'enum':
      return {
        field,
        message: `${field} must be one of ${(params.allowedValues as unknown[]).map(String).join(', ')}`,
      };
    case 'format':
      return { field, message: `${field} must be an ISO-8601 ${String(params.format)}` };
    case 'minimum':
    case 'maximum':
      return { field, message: `${field} must be ${String(params.comparison)} ${String(params.limit)}` };
    default:
      return { field, message: `${field} ${error.message ?? 'is not valid'}` };
  }
}

function articled(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}
