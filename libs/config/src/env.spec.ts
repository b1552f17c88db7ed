import { EnvValidationError, parseEnvNamespace, validateEnv } from './env';

describe('validateEnv', () => {
  it('accepts an empty environment with documented defaults', () => {
    expect(() => validateEnv({})).not.toThrow();
    const continuity = parseEnvNamespace('continuity', {});
    expect(continuity).toMatchObject({
      ENABLE_ROUTE_STICKINESS: false,
      ROUTE_STICKINESS_LLM_PROFILE: 'route_continuity',
      ROUTE_STICKINESS_CONFIDENCE_THRESHOLD: 0.9,
      ROUTE_STICKINESS_HISTORY_TURNS: 2,
      ROUTE_STICKINESS_MAX_TOKENS: 80,
    });
    expect(parseEnvNamespace('checkpoint', {})).toMatchObject({
      CHECKPOINT_RETENTION: 20,
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
    ]) {
      expect(problems).toContain(name);
    }
    expect((caught as EnvValidationError).problems).toHaveLength(7);
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
      { tenant: null, key: 'admin-global-key' },
      { tenant: 'acme', key: 'admin-acme-key' },
    ]);
  });
});
