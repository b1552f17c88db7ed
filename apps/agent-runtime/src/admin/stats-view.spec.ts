import type { TurnStats } from '@agent/checkpoint';
import { CostBasis, defaultBucket, fillSeries, statsCost } from './stats-view';

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

describe('stats cost', () => {
  const usage = (profile: string, calls: number, prompt: number, completion: number, cached = 0) => ({
    profile,
    calls,
    failures: 0,
    prompt_tokens: prompt,
    cached_prompt_tokens: cached,
    completion_tokens: completion,
    latency_p50_ms: null,
    latency_p95_ms: null,
  });
  const stats = (avoided: number, profiles: TurnStats['profiles']) =>
    ({ router_calls_avoided: avoided, profiles }) as Pick<TurnStats, 'router_calls_avoided' | 'profiles'>;
  // $1 per million input tokens ($0.25 from the prompt cache) and $2 per million output tokens for every model
  // but the agent's.
  const basis: CostBasis = {
    currency: 'USD',
    priceOf: (profile) => (profile === 'agent' ? null : { input: 1, cached_input: 0.25, output: 2 }),
    classifierProfile: 'route_continuity',
    routerProfiles: ['router', 'retail_router'],
  };
  const period = (avoided: number, profiles: TurnStats['profiles']) =>
    statsCost({ ...stats(avoided, profiles) } as TurnStats, basis);

  it('prices avoided router calls at the average router call, less the classifier, and names what has no price', () => {
    const cost = period(10, [
      usage('router', 2, 400_000, 50_000), // $0.5 for 2 calls
      usage('retail_router', 2, 100_000, 0), // $0.1 for 2 calls
      usage('route_continuity', 12, 300_000, 10_000), // $0.32
      usage('agent', 12, 900_000, 90_000), // no price
    ]);
    expect(cost).toEqual({
      currency: 'USD',
      total: 0.92,
      classifier: 0.32,
      router_call: 0.15,
      saved: 1.5,
      net_saved: 1.18,
      unpriced_profiles: ['agent'],
    });
  });

  it('prices the prompt tokens the provider served from its cache at the cached price', () => {
    // 400k prompt tokens, 300k of them cached: $0.1 + $0.075, and $0.1 of output.
    expect(period(0, [usage('route_continuity', 4, 400_000, 50_000, 300_000)]).total).toBe(0.275);
  });

  it('says nothing it cannot know: no prices, or no router call to price an avoided one by', () => {
    expect(period(3, [usage('route_continuity', 3, 1000, 10)]).saved).toBeNull();
    expect(period(3, [usage('route_continuity', 3, 1000, 10)]).net_saved).toBeNull();
    // Nothing avoided saves nothing, whatever the router cost.
    expect(period(0, [usage('route_continuity', 3, 1_000_000, 0)])).toMatchObject({
      saved: 0,
      net_saved: -1,
    });
    const unpriced = statsCost(stats(3, [usage('router', 1, 10, 1)]) as TurnStats, {
      ...basis,
      currency: null,
    });
    expect(unpriced).toEqual({
      currency: null,
      total: null,
      classifier: null,
      router_call: null,
      saved: null,
      net_saved: null,
      unpriced_profiles: ['router'],
    });
  });
});
