import { EnvValidationError } from './config.errors';
import { parseEnvNamespace, validateEnv } from './env';

describe('validateEnv', () => {
  it('accepts an empty environment with documented defaults', () => {
    expect(() => validateEnv({})).not.toThrow();
    const continuity = parseEnvNamespace('continuity', {});
    expect(continuity).toMatchObject({
      ENABLE_ROUTE_STICKINESS: true,
      ROUTE_STICKINESS_STRATEGY: 'sequential',
      ROUTE_STICKINESS_LLM_PROFILE: 'route_continuity',
      ROUTE_STICKINESS_CONFIDENCE_THRESHOLD: 0.9,
      ROUTE_STICKINESS_HISTORY_TURNS: 2,
      ROUTE_STICKINESS_MAX_TOKENS: 80,
      AGENT_SPECULATIVE_START: 'adaptive',
    });
    expect(parseEnvNamespace('checkpoint', {})).toMatchObject({
      CHECKPOINT_RETENTION: 3,
      TURN_LOCK_TIMEOUT_MS: 10000,
    });
    expect(parseEnvNamespace('app', {}).PORT).toBe(3000);
  });

  it('reports every bad variable in one error, each by name', () => {
    let caught: unknown;
    try {
      validateEnv({
        PORT: 'eighty',
        ENABLE_ROUTE_STICKINESS: 'maybe',
        ROUTE_STICKINESS_CONFIDENCE_THRESHOLD: '1.5',
        DATABASE_URL: 'mysql://nope',
        ROUTING_MODE: 'chaos',
        CHANNEL_API_KEYS: 'no-tenant-here',
        TURN_LOCK_TIMEOUT_MS: '-1',
        AGENT_SPECULATIVE_START: 'sometimes',
      });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(EnvValidationError);
    const problems = (caught as EnvValidationError).problems.join('\n');
    for (const name of [
      'PORT',
      'ENABLE_ROUTE_STICKINESS',
      'ROUTE_STICKINESS_CONFIDENCE_THRESHOLD',
      'DATABASE_URL',
      'ROUTING_MODE',
      'CHANNEL_API_KEYS',
      'TURN_LOCK_TIMEOUT_MS',
      'AGENT_SPECULATIVE_START',
    ]) {
      expect(problems).toContain(name);
    }
    expect((caught as EnvValidationError).problems).toHaveLength(8);
  });

  it('parses tenant-bound channel keys and global or tenant admin keys', () => {
    const auth = parseEnvNamespace('auth', {
      CHANNEL_API_KEYS: 'acme:key-acme-123, globex:key-globex-456',
      ADMIN_API_KEYS: 'admin-global-key,acme:admin-acme-key',
    });
    expect(auth.CHANNEL_API_KEYS).toEqual([
      { tenant: 'acme', key: 'key-acme-123' },
      { tenant: 'globex', key: 'key-globex-456' },
    ]);
    expect(auth.ADMIN_API_KEYS).toEqual([
      { tenant: null, key: 'admin-global-key', name: null },
      { tenant: 'acme', key: 'admin-acme-key', name: null },
    ]);
  });

  it('names admin keys with name@tenant:key or name@*:key, and keeps a key one person', () => {
    const auth = parseEnvNamespace('auth', {
      ADMIN_API_KEYS:
        'maria@acme:key-of-maria, maria.silva@example.com@globex:key-of-ms, lead@*:key-of-lead, *:key-global',
    });
    expect(auth.ADMIN_API_KEYS).toEqual([
      { tenant: 'acme', key: 'key-of-maria', name: 'maria' },
      { tenant: 'globex', key: 'key-of-ms', name: 'maria.silva@example.com' },
      { tenant: null, key: 'key-of-lead', name: 'lead' },
      { tenant: null, key: 'key-global', name: null },
    ]);
    // The same key for two tenants is one person.
    expect(
      parseEnvNamespace('auth', { ADMIN_API_KEYS: 'maria@acme:key-of-maria,maria@globex:key-of-maria' })
        .ADMIN_API_KEYS,
    ).toHaveLength(2);
    for (const [list, problem] of [
      ['maria@acme:key-of-maria,joao@globex:key-of-maria', /same name/],
      ['maria@acme:key-of-maria,globex:key-of-maria', /same name/],
      ['@acme:key-of-maria', /key name/],
      ['ma ria@acme:key-of-maria', /key name/],
      ['maria@:key-of-maria', /tenant \(or \*\)/],
    ] as const) {
      let caught: unknown;
      try {
        parseEnvNamespace('auth', { ADMIN_API_KEYS: list });
      } catch (error) {
        caught = error;
      }
      expect(String(caught)).toMatch(problem);
      expect(String(caught)).not.toContain('key-of-maria');
    }
  });

  it('refuses keys shorter than 8 characters, global admin keys included', () => {
    for (const env of [
      { ADMIN_API_KEYS: 'x' },
      { ADMIN_API_KEYS: 'short7!' },
      { ADMIN_API_KEYS: 'acme:short' },
      { CHANNEL_API_KEYS: 'acme:1234567' },
    ]) {
      expect(() => parseEnvNamespace('auth', env)).toThrow(/at least 8 characters/);
    }
    expect(parseEnvNamespace('auth', { ADMIN_API_KEYS: '12345678' }).ADMIN_API_KEYS).toEqual([
      { tenant: null, key: '12345678', name: null },
    ]);
  });

  it('trusts X-Forwarded-For only from the proxies TRUST_PROXY names', () => {
    expect(parseEnvNamespace('app', {}).TRUST_PROXY).toEqual([]);
    expect(
      parseEnvNamespace('app', { TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,loopback,::1,fd00::/8' }).TRUST_PROXY,
    ).toEqual(['10.0.0.0/8', '127.0.0.1', 'loopback', '::1', 'fd00::/8']);
    for (const bad of ['true', '*', '1', '10.0.0.0/33', 'proxy.internal', '10.0.0.1/8/1']) {
      expect(() => parseEnvNamespace('app', { TRUST_PROXY: bad })).toThrow(/TRUST_PROXY|expected IP/);
    }
  });

  it('shares rate limits through Redis only when REDIS_URL is a redis URL', () => {
    expect(parseEnvNamespace('auth', {}).REDIS_URL).toBeUndefined();
    expect(parseEnvNamespace('auth', { REDIS_URL: 'rediss://:pw@redis:6380/0' }).REDIS_URL).toBe(
      'rediss://:pw@redis:6380/0',
    );
    expect(() => parseEnvNamespace('auth', { REDIS_URL: 'http://redis:6379' })).toThrow(/redis:\/\//);
    // The error never echoes the value, which may carry a password.
    expect(() => parseEnvNamespace('auth', { REDIS_URL: 'nope:secret@' })).not.toThrow(/secret/);
  });

  it('serves a knowledge base without ingesting it, and refuses to be told to ingest it too', () => {
    expect(parseEnvNamespace('rag', {})).toMatchObject({
      RAG_SERVE_ONLY: false,
      RAG_INGEST_ON_START: true,
      RAG_SEARCH_MODE: 'auto',
    });
    expect(parseEnvNamespace('rag', { RAG_SERVE_ONLY: 'true' }).RAG_INGEST_ON_START).toBe(false);
    expect(
      parseEnvNamespace('rag', { RAG_SERVE_ONLY: 'true', RAG_INGEST_ON_START: '' }).RAG_INGEST_ON_START,
    ).toBe(false);
    expect(parseEnvNamespace('rag', { RAG_INGEST_ON_START: 'false' }).RAG_INGEST_ON_START).toBe(false);
    expect(() => parseEnvNamespace('rag', { RAG_SERVE_ONLY: 'true', RAG_INGEST_ON_START: 'true' })).toThrow(
      /RAG_INGEST_ON_START: cannot be true with RAG_SERVE_ONLY=true/,
    );
    expect(() => parseEnvNamespace('rag', { RAG_SEARCH_MODE: 'semantic' })).toThrow(
      /RAG_SEARCH_MODE: expected one of auto\|vector\|full_text/,
    );
  });
});
