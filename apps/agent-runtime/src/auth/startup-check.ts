import type { AppEnv, AuthEnv } from '@agent/config';

export class AuthNotConfiguredError extends Error {
  constructor() {
    super(
      'NODE_ENV=production requires API keys: set CHANNEL_API_KEYS (tenant:key,...) and/or ADMIN_API_KEYS ' +
        '(key or tenant:key,...). Refusing to start with authentication off.',
    );
    this.name = 'AuthNotConfiguredError';
  }
}

/** Without keys auth is off, which production must never be. */
export function assertAuthConfigured(
  app: Pick<AppEnv, 'NODE_ENV'>,
  auth: Pick<AuthEnv, 'CHANNEL_API_KEYS' | 'ADMIN_API_KEYS'>,
): void {
  const keys = auth.CHANNEL_API_KEYS.length + auth.ADMIN_API_KEYS.length;
  if (app.NODE_ENV === 'production' && keys === 0) throw new AuthNotConfiguredError();
}
