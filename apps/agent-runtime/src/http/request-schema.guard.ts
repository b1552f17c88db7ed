import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';

/**
 * The last gate before a handler: fastify validated the request against the route's schema (request-schemas.ts)
 * and attached the outcome, a RequestValidationError with the field errors. Registered after the rate limiter and
 * the key check, so an unauthenticated caller learns nothing about the schema and every refusal is counted.
 */
@Injectable()
export class RequestSchemaGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const { validationError } = context.switchToHttp().getRequest<FastifyRequest>();
    if (validationError) throw validationError;
    return true;
  }
}
