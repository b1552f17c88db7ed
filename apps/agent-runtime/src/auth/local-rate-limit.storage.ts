import type { ThrottlerStorage } from '@nestjs/throttler';

type StorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

interface Bucket {
  hits: number;
  /** End of the current window (epoch ms). */
  windowEndsAt: number;
  /** End of the block that exceeding the limit started (epoch ms); 0 when not blocked. */
  blockedUntil: number;
}

/**
 * Rate-limit counters of one replica (no REDIS_URL): a fixed window per key, with the same rules as the Redis
 * storage (a count per window; going over the limit blocks for `blockDuration`), so a deployment behaves the
 * same with and without Redis. O(1) per request and one small record per key: the in-memory storage of
 * @nestjs/throttler keeps a timestamp per hit and filters all of them on every request, which at a gateway's
 * volume on one key (tens of thousands of hits a minute) costs a millisecond of CPU per request.
 */
export class LocalRateLimitStorage implements ThrottlerStorage {
  private readonly buckets = new Map<string, Bucket>();
  private nextSweepAt = 0;

  constructor(private readonly now: () => number = Date.now) {}

  increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<StorageRecord> {
    const now = this.now();
    this.sweep(now, ttl);
    const id = `${throttlerName}:${key}`;
    let bucket = this.buckets.get(id);
    if (!bucket) {
      bucket = { hits: 0, windowEndsAt: now + ttl, blockedUntil: 0 };
      this.buckets.set(id, bucket);
    } else if (bucket.windowEndsAt <= now) {
      bucket.hits = 0;
      bucket.windowEndsAt = now + ttl;
    }
    bucket.hits++;
    if (bucket.blockedUntil <= now) {
      bucket.blockedUntil = bucket.hits > limit ? now + blockDuration : 0;
    }
    const blocked = bucket.blockedUntil > now;
    return Promise.resolve({
      totalHits: bucket.hits,
      timeToExpire: Math.ceil((bucket.windowEndsAt - now) / 1000),
      isBlocked: blocked,
      timeToBlockExpire: blocked ? Math.ceil((bucket.blockedUntil - now) / 1000) : 0,
    });
  }

  /** Keys seen once and never again (client addresses) would stay forever: drop idle ones once per window. */
  private sweep(now: number, ttl: number): void {
    if (now < this.nextSweepAt) return;
    this.nextSweepAt = now + ttl;
    for (const [id, bucket] of this.buckets) {
      if (bucket.windowEndsAt <= now && bucket.blockedUntil <= now) this.buckets.delete(id);
    }
  }

  /** Keys currently counted: how the tests see the sweep. */
  get size(): number {
    return this.buckets.size;
  }
}
