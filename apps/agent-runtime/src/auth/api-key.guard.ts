import {
  CanActivate,
  ExecutionContext,
  ForbiddenException,
  Injectable,
  UnauthorizedException,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { ACCESS_METADATA, AccessLevel } from './access.decorator';
import { ApiKeyRegistry } from './api-keys';
import { ANONYMOUS, requestKeyMatch } from './request-principal';

/**
 * `Authorization: Bearer <key>` (docs/security.md): 401 without a key or with an unknown one; 403 for a valid key of
 * the wrong kind. Tenant checks need the parsed request, so controllers make them (403 for a channel key
 * posting for another tenant, 404 for a tenant-scoped admin key asking for another tenant's session).
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly registry: ApiKeyRegistry,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const level =
      this.reflector.getAllAndOverride<AccessLevel | undefined>(ACCESS_METADATA, [
        context.getHandler(),
        context.getClass(),
      ]) ?? 'admin';
    if (level === 'public') return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    if (!this.registry.enabled) {
      request.principal = ANONYMOUS;
      return true;
    }
    const match = requestKeyMatch(this.registry, request);
    if (match === null) {
      throw new UnauthorizedException('missing API key: send Authorization: Bearer <key>');
    }
    const principal = match[level];
    if (principal) {
      request.principal = principal;
      return true;
    }
    if (match.channel || match.admin) {
      throw new ForbiddenException(`this key may not call ${level} endpoints`);
    }
    throw new UnauthorizedException('invalid API key');
  }
}
