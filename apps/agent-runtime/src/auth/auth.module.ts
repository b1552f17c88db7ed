import { Inject, Logger, Module, OnModuleInit } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerModule } from '@nestjs/throttler';
import type { FastifyRequest } from 'fastify';
import { authConfig } from '@agent/config';
import { ApiKeyRegistry } from './api-keys';
import { ApiKeyGuard } from './api-key.guard';
import { KeyThrottlerGuard } from './key-throttler.guard';
import { UndeclaredQueryGuard } from '../http/undeclared-query.guard';
import { requestKeyMatch } from './request-principal';
import { LocalRateLimitStorage } from './local-rate-limit.storage';
import { SharedRateLimitStorage } from './shared-rate-limit.storage';

/** The rate limiter's counters: in Redis with REDIS_URL (every replica counts in the same buckets), else local. */
export type RateLimitStorage = SharedRateLimitStorage | LocalRateLimitStorage;
export const RATE_LIMIT_STORAGE = Symbol('RATE_LIMIT_STORAGE');

/**
 * The key registry and the rate-limit storage on their own, so the throttler's async factory can inject them
 * (and readiness can ask the storage whether it answers).
 */
@Module({
  providers: [
    {
      provide: ApiKeyRegistry,
      inject: [authConfig.KEY],
      useFactory: (auth: ConfigType<typeof authConfig>) => new ApiKeyRegistry(auth),
    },
    {
      provide: RATE_LIMIT_STORAGE,
      inject: [authConfig.KEY],
      useFactory: (auth: ConfigType<typeof authConfig>): RateLimitStorage =>
        auth.REDIS_URL
          ? new SharedRateLimitStorage(auth.REDIS_URL, auth.RATE_LIMIT_KEY_PREFIX, auth)
          : new LocalRateLimitStorage(),
    },
  ],
  exports: [ApiKeyRegistry, RATE_LIMIT_STORAGE],
})
export class ApiKeysModule {}

/**
 * The gates of every route, in registration order: the rate limiter first, so failed key guesses are limited
 * too (per client address), then the key check, then the query parameters a route does not declare (a 400 only
 * for a caller with a key; the validation pipe, which runs after every guard, checks the declared ones).
 */
@Module({
  imports: [
    ApiKeysModule,
    ThrottlerModule.forRootAsync({
      imports: [ApiKeysModule],
      inject: [authConfig.KEY, ApiKeyRegistry, RATE_LIMIT_STORAGE],
      useFactory: (
        auth: ConfigType<typeof authConfig>,
        registry: ApiKeyRegistry,
        storage: RateLimitStorage,
      ) => ({
        throttlers: [{ name: 'default', ttl: 60_000, limit: auth.RATE_LIMIT_PER_MINUTE }],
        storage,
        // One bucket per valid key (whatever route it calls); requests without a valid key share their address's bucket.
        getTracker: (_req, context) => {
          // The same request, typed: the throttler hands it over as an untyped record.
          const request = context.switchToHttp().getRequest<FastifyRequest>();
          const match = requestKeyMatch(registry, request);
          const principal = match?.admin ?? match?.channel;
          return principal?.key_id ? `key:${principal.key_id}` : `ip:${request.ip}`;
        },
        generateKey: (_context, tracker, throttlerName) => `${throttlerName}:${tracker}`,
        errorMessage: (_context, detail) =>
          `rate limit exceeded: ${detail.limit} requests per minute; retry after ${detail.timeToBlockExpire} s`,
      }),
    }),
  ],
  providers: [
    { provide: APP_GUARD, useClass: KeyThrottlerGuard },
    { provide: APP_GUARD, useClass: ApiKeyGuard },
    { provide: APP_GUARD, useClass: UndeclaredQueryGuard },
  ],
  exports: [ApiKeysModule],
})
export class AuthModule implements OnModuleInit {
  private readonly logger = new Logger('Auth');

  constructor(
    private readonly registry: ApiKeyRegistry,
    @Inject(authConfig.KEY) private readonly auth: ConfigType<typeof authConfig>,
  ) {}

  onModuleInit(): void {
    if (!this.registry.enabled) {
      this.logger.warn(
        'authentication is OFF: no CHANNEL_API_KEYS or ADMIN_API_KEYS configured; every caller may act for every tenant',
      );
      return;
    }
    const { channel, admin } = this.registry.counts;
    this.logger.log(
      `authentication on: ${channel} channel key(s), ${admin} admin key(s), ${this.auth.RATE_LIMIT_PER_MINUTE} requests/minute per key ` +
        (this.auth.REDIS_URL
          ? '(shared by every replica through Redis)'
          : '(per replica: set REDIS_URL to share it)'),
    );
  }
}
