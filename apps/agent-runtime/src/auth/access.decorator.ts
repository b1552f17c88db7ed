import { SetMetadata } from '@nestjs/common';
import type { KeyKind } from './api-keys';

export type AccessLevel = KeyKind | 'public';

export const ACCESS_METADATA = 'agent-runtime:access';

/**
 * Which key a route needs: a channel key, an admin key, or none (`public`: probes, metrics).
 * A controller without it is treated as admin-only, so a forgotten decorator fails closed.
 */
export const Access = (level: AccessLevel) => SetMetadata(ACCESS_METADATA, level);
