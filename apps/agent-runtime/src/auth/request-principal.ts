import type { FastifyRequest } from 'fastify';
import { ApiKeyRegistry, bearerToken, KeyMatch, Principal } from './api-keys';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by ApiKeyGuard on every non-public route. */
    principal?: Principal;
  }
}

/** Auth off (no key configured): every request acts for every tenant. */
export const ANONYMOUS: Principal = { kind: 'anonymous', tenants: null, key_id: null, key_name: null };

const matches = new WeakMap<FastifyRequest, KeyMatch | null>();

/**
 * The keys the request's bearer token matched (null without a bearer token), hashed once per request:
 * the rate limiter and the auth guard both need it.
 */
export function requestKeyMatch(registry: ApiKeyRegistry, request: FastifyRequest): KeyMatch | null {
  if (matches.has(request)) return matches.get(request) ?? null;
  const token = bearerToken(request.headers.authorization);
  const match = token === null ? null : registry.match(token);
  matches.set(request, match);
  return match;
}

/** The principal ApiKeyGuard attached; a route that reads it without the guard is a wiring bug. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error('no principal on the request: is ApiKeyGuard registered?');
  return request.principal;
}
