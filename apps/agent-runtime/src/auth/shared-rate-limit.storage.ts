import { Logger } from '@nestjs/common';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import type { ThrottlerStorage } from '@nestjs/throttler';
import { RateLimitUnavailableError } from '../app.errors';

type StorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

export interface SharedRateLimitTimeouts {
  REDIS_CONNECT_TIMEOUT_MS: number;
  REDIS_COMMAND_TIMEOUT_MS: number;
}

/**
 * Rate-limit counters in Redis, shared by every replica: the maintained storage of @nestjs/throttler for Redis
 * (an atomic Lua increment per hit), with keys under a prefix and a request that fails fast when Redis is away:
 * refused at once, or unanswered after REDIS_COMMAND_TIMEOUT_MS.
 */
export class SharedRateLimitStorage extends ThrottlerStorageRedisService {
  private readonly logger = new Logger('RateLimit');
  private disconnected = false;

  constructor(url: string, keyPrefix: string, timeouts: SharedRateLimitTimeouts) {
    super(url, {
      keyPrefix,
      connectTimeout: timeouts.REDIS_CONNECT_TIMEOUT_MS,
      // Also bounds a command queued while the connection is not ready (a server that accepted and went silent).
      commandTimeout: timeouts.REDIS_COMMAND_TIMEOUT_MS,
      // One reconnection attempt per command: a request waits ~100 ms for Redis, not the default 20 retries.
      maxRetriesPerRequest: 1,
      keepAlive: 10000,
    });
    // The client reconnects by itself; its connection errors are logged once per outage, never left unhandled.
    this.redis.on('error', (error: Error) => {
      if (this.disconnected) return;
      this.disconnected = true;
      this.logger.warn(`rate limit store unreachable: ${error.message}`);
    });
    this.redis.on('ready', () => {
      if (!this.disconnected) return;
      this.disconnected = false;
      this.logger.log('rate limit store reachable again');
    });
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
      // Logged per request by the error filter.
      throw new RateLimitUnavailableError(error);
    }
  }

  /** One round trip, bounded like every command: what readiness asks of the store. */
  async ping(): Promise<void> {
    await this.redis.ping();
  }
}
