import { LocalRateLimitStorage } from './local-rate-limit.storage';

const MINUTE = 60_000;

function storageAt(start: number): { storage: LocalRateLimitStorage; clock: { now: number } } {
  const clock = { now: start };
  return { storage: new LocalRateLimitStorage(() => clock.now), clock };
}

async function hits(storage: LocalRateLimitStorage, key: string, count: number, limit: number) {
  const records = [];
  for (let i = 0; i < count; i++) {
    records.push(await storage.increment(key, MINUTE, limit, MINUTE, 'default'));
  }
  return records;
}

describe('LocalRateLimitStorage', () => {
  it('allows the limit within a window, then blocks until the block ends', async () => {
    const { storage, clock } = storageAt(1_000_000);
    const records = await hits(storage, 'key:a', 4, 3);
    expect(records.map((r) => r.isBlocked)).toEqual([false, false, false, true]);
    expect(records[3]).toEqual({ totalHits: 4, timeToExpire: 60, isBlocked: true, timeToBlockExpire: 60 });

    clock.now += 30_000;
    const during = await storage.increment('key:a', MINUTE, 3, MINUTE, 'default');
    expect(during).toMatchObject({ isBlocked: true, timeToBlockExpire: 30 });

    clock.now += 30_001;
    const after = await storage.increment('key:a', MINUTE, 3, MINUTE, 'default');
    expect(after).toEqual({ totalHits: 1, timeToExpire: 60, isBlocked: false, timeToBlockExpire: 0 });
  });

  it('starts a new window when the old one ends, without carrying hits over', async () => {
    const { storage, clock } = storageAt(0);
    await hits(storage, 'key:a', 3, 3);
    clock.now = MINUTE;
    const records = await hits(storage, 'key:a', 3, 3);
    expect(records.map((r) => [r.totalHits, r.isBlocked])).toEqual([
      [1, false],
      [2, false],
      [3, false],
    ]);
  });

  it('counts keys and throttlers apart', async () => {
    const { storage } = storageAt(0);
    await hits(storage, 'key:a', 2, 2);
    expect((await storage.increment('key:a', MINUTE, 2, MINUTE, 'default')).isBlocked).toBe(true);
    expect((await storage.increment('key:b', MINUTE, 2, MINUTE, 'default')).isBlocked).toBe(false);
    expect((await storage.increment('key:a', MINUTE, 2, MINUTE, 'burst')).isBlocked).toBe(false);
  });

  it('forgets keys that went quiet, but not one that is still blocked', async () => {
    const { storage, clock } = storageAt(0);
    for (let i = 0; i < 100; i++) await storage.increment(`ip:10.0.0.${i}`, MINUTE, 5, MINUTE, 'default');
    await storage.increment('key:long-block', MINUTE, 0, 10 * MINUTE, 'default');
    expect(storage.size).toBe(101);

    clock.now = 2 * MINUTE;
    await storage.increment('key:new', MINUTE, 5, MINUTE, 'default');
    expect(storage.size).toBe(2);
    expect((await storage.increment('key:long-block', MINUTE, 5, MINUTE, 'default')).isBlocked).toBe(true);
  });

  it('counts every hit of a busy key in one window, in one record', async () => {
    const { storage } = storageAt(0);
    const records = await hits(storage, 'key:gateway', 200_000, 1_000_000);
    expect(records.at(-1)).toMatchObject({ totalHits: 200_000, isBlocked: false });
    expect(storage.size).toBe(1);
  });
});
