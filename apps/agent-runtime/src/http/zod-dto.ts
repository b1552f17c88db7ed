import type { Type } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptions } from '@nestjs/swagger';
import { z } from 'zod';

/**
 * Response DTOs derived from the zod schemas that already define a shape (the turn response, the route decision):
 * the schema stays the one definition, and the DTO class only carries it into the OpenAPI document. A field added
 * to the schema is in the document (and the console's types) with nothing else to change; a zod construct with no
 * OpenAPI form here fails the document's generation with the field's path, so it cannot be left out unnoticed.
 */

/** What the document may add to a derived field: words, never shape. */
type Words = Pick<ApiPropertyOptions, 'description' | 'example'>;
export type FieldWords<T> = { [K in keyof T]?: Words };

/** What a zod schema becomes in the document: a plain type, a nested DTO, or a JSON object of one kind of value. */
type Shape =
  | {
      type: StringConstructor | NumberConstructor | BooleanConstructor | 'integer' | (() => Type<unknown>);
      format?: string;
      minLength?: number;
      maxLength?: number;
      minimum?: number;
      maximum?: number;
      enum?: string[];
      isArray?: boolean;
    }
  | { type: 'object'; additionalProperties: boolean | { type: string } };

interface Property {
  shape: Shape;
  required: boolean;
  nullable: boolean;
  description?: string;
}

/** One DTO class per schema object, shared wherever the schema is nested. */
const derived = new Map<z.ZodTypeAny, Type<unknown>>();

export function zodDto<S extends z.AnyZodObject>(
  name: string,
  schema: S,
  words: FieldWords<z.output<S>> = {},
): Type<unknown> {
  return deriveDto(name, schema, words);
}

function deriveDto(name: string, schema: z.ZodTypeAny, words: Partial<Record<string, Words>>): Type<unknown> {
  const existing = derived.get(schema);
  if (existing) throw new Error(`${name}: the schema already has the DTO ${existing.name}`);
  const dto = { [name]: class {} }[name];
  derived.set(schema, dto);
  for (const [key, field] of fieldsOf(schema, name)) {
    const nestedName = `${name.replace(/Dto$/, '')}${pascal(key)}Dto`;
    const { shape, required, nullable, description } = propertyOf(field, `${name}.${key}`, nestedName);
    const common = {
      ...(nullable ? { nullable } : {}),
      ...(description ? { description } : {}),
      ...words[key],
    };
    const options: ApiPropertyOptions =
      shape.type === 'object'
        ? { ...shape, ...common, selfRequired: required }
        : { ...shape, ...common, required };
    ApiProperty(options)(dto.prototype, key);
  }
  return dto;
}

/** The DTO of a nested object: the one named for it, else one named after where it first appears. */
function dtoOf(schema: z.ZodTypeAny, name: string): Type<unknown> {
  return derived.get(schema) ?? deriveDto(name, schema, {});
}

/** zod types the schemas inside a schema as `any`: each one the walk takes is checked to be a schema. */
function zodSchema(value: unknown, path: string): z.ZodTypeAny {
  if (value instanceof z.ZodType) return value;
  throw new Error(`${path}: not a zod schema`);
}

function fieldsOf(schema: z.ZodTypeAny, path: string): [string, z.ZodTypeAny][] {
  if (!(schema instanceof z.ZodObject)) throw unsupported(path, schema);
  const shape: unknown = schema.shape;
  if (typeof shape !== 'object' || shape === null) throw unsupported(path, schema);
  return Object.entries(shape).map(([key, field]: [string, unknown]) => [
    key,
    zodSchema(field, `${path}.${key}`),
  ]);
}

function pascal(key: string): string {
  return key.replace(/(^|_)([a-z])/g, (_match, _separator, letter: string) => letter.toUpperCase());
}

/** Presence and nullability, then the shape of what is inside them. */
function propertyOf(field: z.ZodTypeAny, path: string, nestedName: string): Property {
  let schema = field;
  let required = true;
  let nullable = false;
  for (;;) {
    if (schema instanceof z.ZodOptional) {
      required = false;
      schema = zodSchema(schema.unwrap(), path);
    } else if (schema instanceof z.ZodNullable) {
      nullable = true;
      schema = zodSchema(schema.unwrap(), path);
    } else if (schema instanceof z.ZodDefault) {
      schema = zodSchema(schema.removeDefault(), path);
    } else if (schema instanceof z.ZodEffects && schema._def.effect.type !== 'transform') {
      schema = zodSchema(schema.innerType(), path);
    } else {
      break;
    }
  }
  return { shape: shapeOf(schema, path, nestedName), required, nullable, description: schema.description };
}

function shapeOf(schema: z.ZodTypeAny, path: string, nestedName: string): Shape {
  if (schema instanceof z.ZodString) {
    return {
      type: String,
      ...(schema.isDatetime ? { format: 'date-time' } : {}),
      ...(schema.minLength !== null ? { minLength: schema.minLength } : {}),
      ...(schema.maxLength !== null ? { maxLength: schema.maxLength } : {}),
    };
  }
  if (schema instanceof z.ZodNumber) {
    return {
      type: schema.isInt ? 'integer' : Number,
      ...(schema.minValue !== null ? { minimum: schema.minValue } : {}),
      ...(schema.maxValue !== null ? { maximum: schema.maxValue } : {}),
    };
  }
  if (schema instanceof z.ZodBoolean) return { type: Boolean };
  const values = enumValues(schema);
  if (values) return { type: String, enum: values };
  // Lazy: swagger calls it when it writes the document, after every named DTO is declared.
  if (schema instanceof z.ZodObject) return { type: () => dtoOf(schema, nestedName) };
  if (schema instanceof z.ZodArray) {
    const element = zodSchema(schema.element, `${path}[]`);
    const item = shapeOf(element, `${path}[]`, nestedName.replace(/Dto$/, 'ItemDto'));
    if (item.type === 'object') throw unsupported(`${path}[]`, element);
    return { ...item, isArray: true };
  }
  if (schema instanceof z.ZodRecord) {
    const value = zodSchema(schema.valueSchema, `${path}{}`);
    return { type: 'object', additionalProperties: valueSchemaOf(value, `${path}{}`) };
  }
  throw unsupported(path, schema);
}

/** The values of a string enum, a string literal, or a union of them. */
function enumValues(schema: z.ZodTypeAny): string[] | null {
  if (schema instanceof z.ZodEnum) {
    const options: unknown = schema.options;
    return Array.isArray(options) && options.every((option) => typeof option === 'string')
      ? [...options]
      : null;
  }
  if (schema instanceof z.ZodLiteral) {
    const value: unknown = schema.value;
    return typeof value === 'string' ? [value] : null;
  }
  if (schema instanceof z.ZodUnion) {
    const options: unknown = schema.options;
    if (!Array.isArray(options)) return null;
    const parts = options.map((option) => enumValues(zodSchema(option, 'union')));
    return parts.every((part) => part !== null) ? parts.flat() : null;
  }
  return null;
}

/** The value schema of a record: any JSON, or a plain type. */
function valueSchemaOf(schema: z.ZodTypeAny, path: string): boolean | { type: string } {
  if (schema instanceof z.ZodUnknown || schema instanceof z.ZodAny) return true;
  if (schema instanceof z.ZodString) return { type: 'string' };
  if (schema instanceof z.ZodNumber) return { type: schema.isInt ? 'integer' : 'number' };
  if (schema instanceof z.ZodBoolean) return { type: 'boolean' };
  throw unsupported(path, schema);
}

function unsupported(path: string, schema: z.ZodTypeAny): Error {
  return new Error(
    `${path}: ${schema.constructor.name} has no OpenAPI form in zod-dto.ts; give it one there`,
  );
}
