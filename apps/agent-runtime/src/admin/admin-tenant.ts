import { ForbiddenException } from '@nestjs/common';
import type { Principal } from '../auth/api-keys';
import { RequestValidationError } from '../app.errors';

/** The one tenant of a key that serves exactly one; a key serving several must name it. */
export function singleTenant(principal: Principal): string {
  const tenants = principal.tenants ?? [];
  if (tenants.length === 1) return tenants[0];
  throw new RequestValidationError([
    { field: 'tenant_id', errors: ['tenant_id is required: this key serves several tenants'] },
  ]);
}

/**
 * The tenant a listing or an aggregate covers: what was asked (a global key may ask for none: every tenant),
 * confined to the key's tenants (403 for another one), defaulting to the key's only tenant.
 */
export function tenantScope(principal: Principal, requested: string | undefined): string | undefined {
  if (principal.tenants === null) return requested;
  if (requested !== undefined && !principal.tenants.includes(requested)) {
    throw new ForbiddenException('this admin key may not read data of another tenant');
  }
  return requested ?? singleTenant(principal);
}
