import { allowsTenant, ApiKeyRegistry, bearerToken, operatorOf } from './api-keys';
import { ANONYMOUS } from './request-principal';
import { AuthNotConfiguredError } from '../app.errors';
import { assertAuthConfigured } from './startup-check';

const registry = new ApiKeyRegistry({
  CHANNEL_API_KEYS: [
    { tenant: 'acme', key: 'channel-key-acme' },
    { tenant: 'globex', key: 'channel-key-globex' },
  ],
  ADMIN_API_KEYS: [
    { tenant: null, key: 'admin-key-global', name: null },
    { tenant: 'acme', key: 'admin-key-acme', name: null },
    { tenant: 'acme', key: 'admin-key-maria', name: 'maria' },
    { tenant: 'globex', key: 'admin-key-maria', name: 'maria' },
  ],
});

describe('ApiKeyRegistry', () => {
  it('binds a channel key to its tenant and nothing else', () => {
    const match = registry.match('channel-key-acme');
    expect(match.admin).toBeNull();
    expect(match.channel).toMatchObject({ kind: 'channel', tenants: ['acme'] });
    expect(allowsTenant(match.channel!, 'acme')).toBe(true);
    expect(allowsTenant(match.channel!, 'globex')).toBe(false);
  });

  it('gives a bare admin key every tenant and a tenant:key admin key one', () => {
    expect(registry.match('admin-key-global').admin).toMatchObject({ kind: 'admin', tenants: null });
    expect(registry.match('admin-key-acme').admin).toMatchObject({ kind: 'admin', tenants: ['acme'] });
  });

  it('matches nothing for unknown keys, prefixes, extensions and the empty string', () => {
    for (const token of ['nope', 'channel-key-acm', 'channel-key-acmee', 'CHANNEL-KEY-ACME', '']) {
      expect(registry.match(token)).toEqual({ channel: null, admin: null });
    }
  });

  it('identifies keys by a digest prefix that does not reveal the key', () => {
    const id = registry.match('admin-key-acme').admin!.key_id!;
    expect(id).toMatch(/^[0-9a-f]{12}$/);
    expect('admin-key-acme').not.toContain(id);
    expect(registry.match('channel-key-globex').channel!.key_id).not.toBe(id);
  });

  it('names a key by its configured name, else by its id, and every tenant entry of it alike', () => {
    const maria = registry.match('admin-key-maria').admin!;
    expect(maria).toMatchObject({ tenants: ['acme', 'globex'], key_name: 'maria' });
    expect(operatorOf(maria)).toBe('maria');
    const unnamed = registry.match('admin-key-acme').admin!;
    expect(unnamed.key_name).toBeNull();
    expect(operatorOf(unnamed)).toBe(`key:${unnamed.key_id}`);
    expect(operatorOf(ANONYMOUS)).toBe('admin');
  });

  it('is off without keys', () => {
    expect(new ApiKeyRegistry({ CHANNEL_API_KEYS: [], ADMIN_API_KEYS: [] }).enabled).toBe(false);
    expect(registry.enabled).toBe(true);
    expect(registry.counts).toEqual({ channel: 2, admin: 4 });
  });
});

describe('bearerToken', () => {
  it('reads only the Bearer scheme', () => {
    expect(bearerToken('Bearer abc.def')).toBe('abc.def');
    expect(bearerToken('bearer   abc ')).toBe('abc');
    expect(bearerToken('Basic abc')).toBeNull();
    expect(bearerToken('Bearer')).toBeNull();
    expect(bearerToken('Bearer a b')).toBeNull();
    expect(bearerToken(undefined)).toBeNull();
  });
});

describe('assertAuthConfigured', () => {
  const none = { CHANNEL_API_KEYS: [], ADMIN_API_KEYS: [], RATE_LIMIT_PER_MINUTE: 600 };

  it('refuses production without keys, with a message naming the variables', () => {
    expect(() => assertAuthConfigured({ NODE_ENV: 'production' }, none)).toThrow(AuthNotConfiguredError);
    expect(() => assertAuthConfigured({ NODE_ENV: 'production' }, none)).toThrow(
      /CHANNEL_API_KEYS.*ADMIN_API_KEYS/,
    );
  });

  it('allows production with keys and development without', () => {
    expect(() =>
      assertAuthConfigured(
        { NODE_ENV: 'production' },
        { ...none, ADMIN_API_KEYS: [{ tenant: null, key: 'admin-key-global', name: null }] },
      ),
    ).not.toThrow();
    expect(() => assertAuthConfigured({ NODE_ENV: 'development' }, none)).not.toThrow();
  });
});
