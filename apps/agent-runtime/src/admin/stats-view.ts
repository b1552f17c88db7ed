import type { StatsBucket, TurnStats } from '@agent/checkpoint';
import type { StatsBucketDto, StickinessStatsDto } from './stats.dto';

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

export function statsView(
  stats: TurnStats,
  period: { tenant_id: string | null; from: Date; to: Date; bucket: StatsBucket },
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
    series: fillSeries(period.from, period.to, period.bucket, stats.series),
  };
}
