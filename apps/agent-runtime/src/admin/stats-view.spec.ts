import { defaultBucket, fillSeries } from './stats-view';

describe('stats series', () => {
  const at = (iso: string) => new Date(iso);

  it('uses hours up to two days and days beyond', () => {
    expect(defaultBucket(at('2025-01-01T00:00:00Z'), at('2025-01-03T00:00:00Z'))).toBe('hour');
    expect(defaultBucket(at('2025-01-01T00:00:00Z'), at('2025-01-03T00:00:01Z'))).toBe('day');
  });

  it('lists every bucket overlapping the period, zero where nothing was counted', () => {
    const series = fillSeries(at('2025-01-01T10:30:00Z'), at('2025-01-01T13:00:00Z'), 'hour', [
      { start: '2025-01-01T11:00:00Z', turns: 4, bypassed_turns: 2, router_calls: 1 },
    ]);
    expect(series).toEqual([
      { start: '2025-01-01T10:00:00.000Z', turns: 0, bypassed_turns: 0, router_calls: 0 },
      { start: '2025-01-01T11:00:00.000Z', turns: 4, bypassed_turns: 2, router_calls: 1 },
      { start: '2025-01-01T12:00:00.000Z', turns: 0, bypassed_turns: 0, router_calls: 0 },
    ]);
    expect(fillSeries(at('2025-01-01T00:00:00Z'), at('2025-01-08T00:00:00Z'), 'day', [])).toHaveLength(7);
  });
});
