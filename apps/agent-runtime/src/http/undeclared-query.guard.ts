import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { DECORATORS } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { RequestValidationError } from '../app.errors';
import { MAX_FIELD_ERRORS } from './request-validation.pipe';

/**
 * True when a handler reads the query through a `@Query()` DTO (which then validates every parameter), or is no
 * part of the API document (metrics): the document says what the API takes.
 */
function declaresQuery(controller: object, handler: string): boolean {
  const excluded: unknown = Reflect.getMetadata(DECORATORS.API_EXCLUDE_CONTROLLER, controller);
  if (Array.isArray(excluded) && excluded[0] === true) return true;
  const args: unknown = Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, handler);
  // Nest keys a handler's parameters `${RouteParamtypes}:${index}`.
  return isRecord(args) && Object.keys(args).some((key) => key.startsWith(`${RouteParamtypes.QUERY}:`));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/**
 * A route of the API takes the query parameters its `@Query()` DTO declares (the validation pipe checks them) and
 * none otherwise: this refuses any query parameter on a route without one, as unknown body fields are refused. A
 * guard, registered after the rate limiter and the key check, because pipes only run for declared parameters.
 */
@Injectable()
export class UndeclaredQueryGuard implements CanActivate {
  private readonly declared = new WeakMap<object, boolean>();

  canActivate(context: ExecutionContext): boolean {
    const handler = context.getHandler();
    let declared = this.declared.get(handler);
    if (declared === undefined) {
      declared = declaresQuery(context.getClass(), handler.name);
      this.declared.set(handler, declared);
    }
    if (declared) return true;
    const { query } = context.switchToHttp().getRequest<FastifyRequest>();
    const names = isRecord(query) ? Object.keys(query) : [];
    if (names.length === 0) return true;
    throw new RequestValidationError(
      names
        .slice(0, MAX_FIELD_ERRORS)
        .map((name) => ({ field: name, errors: [`property ${name} should not exist`] })),
    );
  }
}
