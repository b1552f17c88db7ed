import { createHash, timingSafeEqual } from 'node:crypto';
import type { AuthEnv } from '@agent/config';

export type KeyKind = 'channel' | 'admin';

/** Who a request speaks for. `tenants: null` means every tenant (a global admin key, or auth off). */
export interface Principal {
  kind: KeyKind | 'anonymous';
  tenants: string[] | null;
  /** A short, non-reversible id of the key (digest prefix): the rate-limit bucket and the log field. */
  key_id: string | null;
  /** The name ADMIN_API_KEYS gives the key (`name@tenant:key`), or null. */
  key_name: string | null;
}

/** The keys a token matched, by kind (the same token may be configured for several tenants). */
export interface KeyMatch {
  channel: Principal | null;
  admin: Principal | null;
}

interface StoredKey {
  kind: KeyKind;
  tenant: string | null;
  name: string | null;
  digest: Buffer;
}

const NO_MATCH: KeyMatch = { channel: null, admin: null };

function digestOf(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * The configured API keys, kept only as SHA-256 digests. A presented token is hashed and compared with every
 * stored digest using `timingSafeEqual` on equal-length buffers, without stopping at the first match, so the
 * time taken says nothing about which key, or which prefix of a key, was close.
 */
export class ApiKeyRegistry {
  private readonly keys: StoredKey[];

  constructor(env: Pick<AuthEnv, 'CHANNEL_API_KEYS' | 'ADMIN_API_KEYS'>) {
    this.keys = [
      ...env.CHANNEL_API_KEYS.map((entry) => ({
        kind: 'channel' as const,
        tenant: entry.tenant,
        name: null,
        digest: digestOf(entry.key),
      })),
      ...env.ADMIN_API_KEYS.map((entry) => ({
        kind: 'admin' as const,
        tenant: entry.tenant,
        name: entry.name,
        digest: digestOf(entry.key),
      })),
    ];
  }

  /** With no key configured at all, authentication is off (docs/security.md). */
  get enabled(): boolean {
    return this.keys.length > 0;
  }

  get counts(): { channel: number; admin: number } {
    return {
      channel: this.keys.filter((k) => k.kind === 'channel').length,
      admin: this.keys.filter((k) => k.kind === 'admin').length,
    };
  }

  match(token: string): KeyMatch {
    if (token === '') return NO_MATCH;
    const presented = digestOf(token);
    const channel: StoredKey[] = [];
    const admin: StoredKey[] = [];
    for (const key of this.keys) {
      const equal = timingSafeEqual(presented, key.digest);
      if (equal) (key.kind === 'channel' ? channel : admin).push(key);
    }
    const keyId = presented.subarray(0, 6).toString('hex');
    return { channel: principalOf('channel', channel, keyId), admin: principalOf('admin', admin, keyId) };
  }
}

/** The principal of the entries a token matched (every entry of one key has the same name: see ADMIN_API_KEYS). */
function principalOf(kind: KeyKind, entries: StoredKey[], keyId: string): Principal | null {
  if (entries.length === 0) return null;
  const tenants = entries.map((entry) => entry.tenant);
  // One global entry (admin keys without a tenant) widens the key to every tenant.
  const scoped = tenants.includes(null) ? null : [...new Set(tenants as string[])];
  return { kind, tenants: scoped, key_id: keyId, key_name: entries[0].name };
}

/**
 * Who a principal acts as in handoff claims: its key's name, else `key:<key id>` (`admin` when authentication is
 * off). Names have no `:`, so no named key can pass for an unnamed one.
 */
export function operatorOf(principal: Principal): string {
  if (principal.key_name !== null) return principal.key_name;
  return principal.key_id !== null ? `key:${principal.key_id}` : 'admin';
}

/** The token of `Authorization: Bearer <token>`, or null when the header is missing or has another scheme. */
export function bearerToken(header: string | string[] | undefined): string | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(value);
  return match ? match[1] : null;
}

/** True when the principal may act for this tenant. */
export function allowsTenant(principal: Principal, tenantId: string): boolean {
  return principal.tenants === null || principal.tenants.includes(tenantId);
}
