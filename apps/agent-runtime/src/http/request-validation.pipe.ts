import { ArgumentMetadata, ValidationPipe } from '@nestjs/common';
import type { ValidationError } from 'class-validator';
import { FieldErrors, RequestValidationError } from '../app.errors';
import { TYPE_CONSTRAINTS } from './request-rules';

/** More than this many field errors in one answer says nothing more to the caller. */
export const MAX_FIELD_ERRORS = 20;

/**
 * Keys no DTO has and class-transformer cannot copy (it would take `constructor` for the class to build). Nest's
 * pipe strips them silently, at any depth, metadata included; here a request carrying one is refused instead,
 * so what is accepted is exactly what was sent.
 */
const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Every body, path and query DTO is validated by class-validator through Nest's ValidationPipe: unknown fields
 * are refused (whitelist), query text is read as the type its field names, and every failure is a
 * RequestValidationError (400 VALIDATION_FAILED, `details: [{field, errors[]}]`). Pipes run after the guards, so
 * an unauthenticated caller learns nothing about the schema and every refusal is rate limited.
 */
export class RequestValidationPipe extends ValidationPipe {
  constructor() {
    super({
      whitelist: true,
      forbidNonWhitelisted: true,
      transform: true,
      exceptionFactory: (errors: ValidationError[]) => new RequestValidationError(fieldErrors(errors)),
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'custom') return super.transform(value, metadata);
    // A body that is left out is an empty one (the DTO's required fields then say what is missing); one that is
    // sent must be an object: `null`, `[]` or `"end"` is not an empty body.
    if (metadata.type === 'body' && value !== undefined && !isObject(value)) {
      throw new RequestValidationError([{ field: 'body', errors: ['body must be an object'] }]);
    }
    const reserved = reservedKey(value, '');
    if (reserved) {
      throw new RequestValidationError([
        { field: reserved.path, errors: [`property ${reserved.key} should not exist`] },
      ]);
    }
    return super.transform(value, metadata);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The first reserved key in a parsed JSON value (its depth is bounded by the body parser), with its path. */
function reservedKey(value: unknown, path: string): { key: string; path: string } | null {
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const found = reservedKey(item, `${path}[${index}]`);
      if (found) return found;
    }
    return null;
  }
  if (!isObject(value)) return null;
  for (const key of Object.keys(value)) {
    const at = path ? `${path}.${key}` : key;
    if (RESERVED_KEYS.has(key)) return { key, path: at };
    const found = reservedKey(value[key], at);
    if (found) return found;
  }
  return null;
}

/**
 * class-validator's errors in the shape of the 400 `details`; a field that is missing or of the wrong type says
 * only that.
 */
export function fieldErrors(errors: ValidationError[], parent = ''): FieldErrors {
  const result: FieldErrors = [];
  for (const error of errors) {
    if (result.length >= MAX_FIELD_ERRORS) break;
    const field = parent ? `${parent}.${error.property}` : error.property;
    const constraints = error.constraints ?? {};
    const typeError = TYPE_CONSTRAINTS.find((name) => constraints[name] !== undefined);
    const messages = typeError ? [constraints[typeError]] : Object.values(constraints);
    if (messages.length > 0) result.push({ field, errors: messages });
    if (error.children?.length) result.push(...fieldErrors(error.children, field));
  }
  return result.slice(0, MAX_FIELD_ERRORS);
}
