import type { StatsBucket, TurnStats } from '@agent/checkpoint';
import { tokenCost, type TokenPrices } from '@agent/llm';
import type { StatsBucketDto, StatsCostDto, StickinessStatsDto } from './stats.dto';

const DAY_MS = 86_400_000;
const BUCKET_MS: Record<StatsBucket, number> = { hour: 3_600_000, day: DAY_MS };

/** Longest period one request may aggregate. */
export const MAX_STATS_DAYS = 92;
export const DEFAULT_STATS_DAYS = 7;

/** Hourly buckets up to two days, daily beyond. */
export function defaultBucket(from: Date, to: Date): StatsBucket {
  return to.getTime() - from.getTime() <= 2 * DAY_MS ? 'hour' : 'day';
}

/** Every bucket start (UTC) that overlaps [from, to), with the counted ones filled in and the rest zero. */
export function fillSeries(
  from: Date,
  to: Date,
  bucket: StatsBucket,
  counted: TurnStats['series'],
): StatsBucketDto[] {
  const width = BUCKET_MS[bucket];
  const byStart = new Map(counted.map((entry) => [Date.parse(entry.start), entry]));
  const series: StatsBucketDto[] = [];
  for (let start = Math.floor(from.getTime() / width) * width; start < to.getTime(); start += width) {
    const entry = byStart.get(start);
    series.push({
      start: new Date(start).toISOString(),
      turns: entry?.turns ?? 0,
      bypassed_turns: entry?.bypassed_turns ?? 0,
      router_calls: entry?.router_calls ?? 0,
    });
  }
  return series;
}

function ratio(part: number, whole: number): number | null {
  return whole > 0 ? part / whole : null;
}

/** How the period's tokens become money: the prices and which profiles are the classifier's and the router's. */
export interface CostBasis {
  /** null: llm_profiles.yaml has no prices. */
  currency: string | null;
  /** The price of the model a profile calls now, or null. */
  priceOf: (profile: string) => TokenPrices | null;
  classifierProfile: string;
  routerProfiles: readonly string[];
}

/** Money amounts keep a millionth of the currency unit: below that is float noise. */
function money(amount: number): number {
  return Math.round(amount * 1e6) / 1e6;
}

/**
 * What the period cost and what stickiness saved: the router calls it avoided, each priced at the average router
 * call of the same period, less what the classifier's own calls cost. Unknown amounts are null, never guessed.
 */
export function statsCost(stats: TurnStats, basis: CostBasis): StatsCostDto {
  const priced = stats.profiles.map((usage) => {
    const price = basis.currency === null ? null : basis.priceOf(usage.profile);
    const cost = price
      ? tokenCost(price, {
          prompt: usage.prompt_tokens,
          cached: usage.cached_prompt_tokens,
          completion: usage.completion_tokens,
        })
      : null;
    return { usage, cost };
  });
  const unpriced = priced.filter((p) => p.cost === null && p.usage.calls > 0).map((p) => p.usage.profile);
  if (basis.currency === null) {
    return {
      currency: null,
      total: null,
      classifier: null,
      router_call: null,
      saved: null,
      net_saved: null,
      unpriced_profiles: unpriced,
    };
  }
  const total = priced.reduce((sum, p) => sum + (p.cost ?? 0), 0);
  const classifierEntry = priced.find((p) => p.usage.profile === basis.classifierProfile);
  const classifier = classifierEntry === undefined ? 0 : classifierEntry.cost;
  const routers = priced.filter((p) => basis.routerProfiles.includes(p.usage.profile) && p.cost !== null);
  const routerCalls = routers.reduce((sum, p) => sum + p.usage.calls, 0);
  const routerCall =
    routerCalls > 0 ? routers.reduce((sum, p) => sum + (p.cost ?? 0), 0) / routerCalls : null;
  const saved =
    stats.router_calls_avoided === 0
      ? 0
      : routerCall === null
        ? null
        : stats.router_calls_avoided * routerCall;
  return {
    currency: basis.currency,
    total: money(total),
    classifier: classifier === null ? null : money(classifier),
    router_call: routerCall === null ? null : money(routerCall),
    saved: saved === null ? null : money(saved),
    net_saved: saved === null || classifier === null ? null : money(saved - classifier),
    unpriced_profiles: unpriced,
  };
}

export function statsView(
  stats: TurnStats,
  period: { tenant_id: string | null; from: Date; to: Date; bucket: StatsBucket },
  basis: CostBasis,
): StickinessStatsDto {
  return {
    tenant_id: period.tenant_id,
    from: period.from.toISOString(),
    to: period.to.toISOString(),
    bucket: period.bucket,
    turns: stats.turns,
    continuity_evaluated: stats.continuity_evaluated,
    bypassed_turns: stats.bypassed_turns,
    bypass_rate: ratio(stats.bypassed_turns, stats.turns),
    router_calls: stats.router_calls,
    router_calls_avoided: stats.router_calls_avoided,
    decisions: stats.decisions,
    fallback_reasons: stats.fallback_reasons,
    shadow: {
      compared: stats.shadow_compared,
      agreed: stats.shadow_agreed,
      agreement_rate: ratio(stats.shadow_agreed, stats.shadow_compared),
    },
    turn_latency_ms: stats.turn_latency_ms,
    profiles: stats.profiles,
    cost: statsCost(stats, basis),
    series: fillSeries(period.from, period.to, period.bucket, stats.series),
  };
}
