import type { AppEnv, AuthEnv } from '@agent/config';
import { AuthNotConfiguredError } from '../app.errors';

/** Without keys auth is off, which production must never be. */
export function assertAuthConfigured(
  app: Pick<AppEnv, 'NODE_ENV'>,
  auth: Pick<AuthEnv, 'CHANNEL_API_KEYS' | 'ADMIN_API_KEYS'>,
): void {
  const keys = auth.CHANNEL_API_KEYS.length + auth.ADMIN_API_KEYS.length;
  if (app.NODE_ENV === 'production' && keys === 0) throw new AuthNotConfiguredError();
}
