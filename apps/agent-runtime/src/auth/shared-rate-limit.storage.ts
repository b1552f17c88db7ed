import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import type { ThrottlerStorage } from '@nestjs/throttler';
import { RateLimitUnavailableError } from '../app.errors';

type StorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/**
 * Rate-limit counters in Redis, shared by every replica: the maintained storage of @nestjs/throttler for Redis
 * (an atomic Lua increment per hit), with keys under a prefix and a request that fails fast when Redis is away.
 */
export class SharedRateLimitStorage extends ThrottlerStorageRedisService {
  constructor(url: string, keyPrefix: string) {
    // One reconnection attempt per command: a request waits ~100 ms for Redis, not the default 20 retries.
    super(url, { keyPrefix, maxRetriesPerRequest: 1, connectTimeout: 2000 });
  }

  override async increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<StorageRecord> {
    try {
      return await super.increment(key, ttl, limit, blockDuration, throttlerName);
    } catch (error) {
      throw new RateLimitUnavailableError(error);
    }
  }
}
