import { Injectable } from '@nestjs/common';
import { DatabaseService, runOn, statement } from '@agent/database';

export type StatsBucket = 'hour' | 'day';

export interface TurnStatsFilter {
  /** One tenant; absent for every tenant. */
  tenant_id?: string;
  from: Date;
  to: Date;
  bucket: StatsBucket;
  /**
   * The LLM profile of the router's model stage, whose calls are the ones stickiness can avoid: `global` for the
   * turns of every agent_id without its own routing file, `agents` for each that has one.
   */
  router_profiles: { global: string; agents: Record<string, string> };
}

export interface TurnStats {
  turns: number;
  /** Turns the continuity classifier was asked about. */
  continuity_evaluated: number;
  /** Turns an accepted CONTINUE kept with the active agent. */
  bypassed_turns: number;
  router_calls: number;
  /** Bypassed turns without a router model call (a speculative router run that was discarded still cost). */
  router_calls_avoided: number;
  decisions: { decision: string; accepted: boolean; count: number }[];
  fallback_reasons: { reason: string; count: number }[];
  shadow_compared: number;
  shadow_agreed: number;
  turn_latency_ms: { p50: number | null; p95: number | null };
  /** Per LLM profile; the latency is what a turn spent in the profile's calls (summed within the turn). */
  profiles: {
    profile: string;
    calls: number;
    failures: number;
    prompt_tokens: number;
    /** Of prompt_tokens, those the provider served from its prompt cache. */
    cached_prompt_tokens: number;
    completion_tokens: number;
    latency_p50_ms: number | null;
    latency_p95_ms: number | null;
  }[];
  /** Per bucket (UTC, ISO start), oldest first; buckets without events are absent. */
  series: { start: string; turns: number; bypassed_turns: number; router_calls: number }[];
}

/** The events the figures come from; the others of a turn are not read. */
const EVENT_NAMES = [
  'AGENT_STARTED',
  'NOC.001',
  'AGENT_COMPLETED',
  'router.continuity',
  'router.continuity.shadow',
  'llm.call',
];

const STARTED = `name IN ('AGENT_STARTED', 'NOC.001')`;
const BYPASSED = `name = 'router.continuity' AND payload->>'route_bypassed' = 'true'`;

interface StatsRow {
  totals: Record<string, number | null> | null;
  decisions: { decision: string; accepted: boolean; fallback_reason: string | null; count: number }[] | null;
  profiles:
    | {
        profile: string;
        calls: number;
        failures: number;
        prompt_tokens: number;
        cached_prompt_tokens: number;
        completion_tokens: number;
        latency_p50: number | null;
        latency_p95: number | null;
      }[]
    | null;
  series: { start: string; turns: number; bypassed_turns: number; router_calls: number }[] | null;
}

const LATENCY = `(payload->>'latency_ms')::float8`;
/** A call of the router's model: the agent_id's own routing profile ($5), else the global one ($6). */
const ROUTER_CALL = `name = 'llm.call' AND payload->>'profile' = COALESCE($5::jsonb->>agent_id, $6)`;

/** Percentiles and FILTER aggregates over the JSON events of the turn log, in one scan. */
const PERIOD_STATS = statement<
  [
    from: string,
    to: string,
    eventNames: string[],
    tenantId: string | null,
    agentRouterProfiles: string,
    globalRouterProfile: string,
    bucket: StatsBucket,
  ],
  StatsRow
>(
  'turn_stats_period',
  `WITH events AS MATERIALIZED (
         SELECT t.conversation_key, t.turn, t.agent_id, e.event->>'name' AS name, e.event->'payload' AS payload,
                t.created_at
           FROM turn_log t CROSS JOIN LATERAL jsonb_array_elements(t.events::jsonb) AS e(event)
          WHERE t.created_at >= $1::timestamptz AND t.created_at < $2::timestamptz AND ($4::text IS NULL OR t.tenant_id = $4)
            AND e.event->>'name' = ANY($3::text[])),
       router_turns AS (SELECT DISTINCT conversation_key, turn FROM events WHERE ${ROUTER_CALL})
       SELECT
         (SELECT json_build_object(
            'turns', count(DISTINCT (conversation_key, turn)) FILTER (WHERE ${STARTED}),
            'continuity_evaluated', count(*) FILTER (WHERE name = 'router.continuity'),
            'bypassed_turns', count(*) FILTER (WHERE ${BYPASSED}),
            'router_calls', count(*) FILTER (WHERE ${ROUTER_CALL}),
            'router_calls_avoided', count(*) FILTER (WHERE ${BYPASSED} AND NOT EXISTS (
              SELECT 1 FROM router_turns r WHERE r.conversation_key = e.conversation_key AND r.turn = e.turn)),
            'shadow_compared', count(*) FILTER (WHERE name = 'router.continuity.shadow'),
            'shadow_agreed', count(*) FILTER (WHERE name = 'router.continuity.shadow' AND payload->>'agreed' = 'true'),
            'latency_p50', percentile_cont(0.5) WITHIN GROUP (ORDER BY ${LATENCY}) FILTER (WHERE name = 'AGENT_COMPLETED'),
            'latency_p95', percentile_cont(0.95) WITHIN GROUP (ORDER BY ${LATENCY}) FILTER (WHERE name = 'AGENT_COMPLETED'))
            FROM events e) AS totals,
         (SELECT json_agg(d ORDER BY d.count DESC, d.decision) FROM (
            SELECT payload->>'decision' AS decision, payload->>'accepted' = 'true' AS accepted,
                   payload->>'fallback_reason' AS fallback_reason, count(*) AS count
              FROM events WHERE name = 'router.continuity' GROUP BY 1, 2, 3) d) AS decisions,
         (SELECT json_agg(p ORDER BY p.profile) FROM (
            SELECT profile, sum(calls) AS calls, sum(failures) AS failures, sum(prompt_tokens) AS prompt_tokens,
                   sum(cached_prompt_tokens) AS cached_prompt_tokens, sum(completion_tokens) AS completion_tokens,
                   percentile_cont(0.5) WITHIN GROUP (ORDER BY latency) AS latency_p50,
                   percentile_cont(0.95) WITHIN GROUP (ORDER BY latency) AS latency_p95
              FROM (SELECT payload->>'profile' AS profile, count(*) AS calls,
                           count(*) FILTER (WHERE payload->>'outcome' <> 'ok') AS failures,
                           COALESCE(sum((payload->>'prompt_tokens')::bigint), 0) AS prompt_tokens,
                           COALESCE(sum((payload->>'cached_prompt_tokens')::bigint), 0) AS cached_prompt_tokens,
                           COALESCE(sum((payload->>'completion_tokens')::bigint), 0) AS completion_tokens,
                           sum(${LATENCY}) AS latency
                      FROM events WHERE name = 'llm.call' GROUP BY conversation_key, turn, 1) per_turn
             GROUP BY profile) p) AS profiles,
         (SELECT json_agg(b ORDER BY b.start) FROM (
            SELECT to_char(date_trunc($7::text, created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS start,
                   count(DISTINCT (conversation_key, turn)) FILTER (WHERE ${STARTED}) AS turns,
                   count(*) FILTER (WHERE ${BYPASSED}) AS bypassed_turns,
                   count(*) FILTER (WHERE ${ROUTER_CALL}) AS router_calls
              FROM events GROUP BY 1) b) AS series`,
);

/**
 * Stickiness and cost over a period, aggregated in the database in one statement from the events of the turn log
 * rows committed in [from, to): how many turns, how many the classifier kept with their agent, which router
 * model calls that saved, why it fell back, how the shadow comparison agreed, and tokens and latency per LLM
 * profile. Only the few event names the figures need are read.
 */
@Injectable()
export class TurnStatsQuery {
  constructor(private readonly db: DatabaseService) {}

  async periodStats(filter: TurnStatsFilter): Promise<TurnStats> {
    // Through TypeORM, without the turn path's time limit: a long period is a long scan.
    const [row] = await runOn(this.db.dataSource, PERIOD_STATS, [
      filter.from.toISOString(),
      filter.to.toISOString(),
      EVENT_NAMES,
      filter.tenant_id ?? null,
      JSON.stringify(filter.router_profiles.agents),
      filter.router_profiles.global,
      filter.bucket,
    ]);
    const totals = row?.totals ?? {};
    const total = (field: string) => Number(totals[field] ?? 0);
    const optional = (value: number | null | undefined) =>
      value === null || value === undefined ? null : Number(value);
    const decisions = row?.decisions ?? [];
    const merged = new Map<string, { decision: string; accepted: boolean; count: number }>();
    const fallbacks = new Map<string, number>();
    for (const entry of decisions) {
      const key = `${entry.decision}:${entry.accepted}`;
      const decision = merged.get(key) ?? { decision: entry.decision, accepted: entry.accepted, count: 0 };
      decision.count += Number(entry.count);
      merged.set(key, decision);
      if (entry.fallback_reason) {
        fallbacks.set(
          entry.fallback_reason,
          (fallbacks.get(entry.fallback_reason) ?? 0) + Number(entry.count),
        );
      }
    }
    return {
      turns: total('turns'),
      continuity_evaluated: total('continuity_evaluated'),
      bypassed_turns: total('bypassed_turns'),
      router_calls: total('router_calls'),
      router_calls_avoided: total('router_calls_avoided'),
      decisions: [...merged.values()].sort((a, b) => b.count - a.count),
      fallback_reasons: [...fallbacks.entries()]
        .map(([reason, times]) => ({ reason, count: times }))
        .sort((a, b) => b.count - a.count),
      shadow_compared: total('shadow_compared'),
      shadow_agreed: total('shadow_agreed'),
      turn_latency_ms: { p50: optional(totals.latency_p50), p95: optional(totals.latency_p95) },
      profiles: (row?.profiles ?? []).map((profile) => ({
        profile: profile.profile,
        calls: Number(profile.calls),
        failures: Number(profile.failures),
        prompt_tokens: Number(profile.prompt_tokens),
        cached_prompt_tokens: Number(profile.cached_prompt_tokens),
        completion_tokens: Number(profile.completion_tokens),
        latency_p50_ms: optional(profile.latency_p50),
        latency_p95_ms: optional(profile.latency_p95),
      })),
      series: (row?.series ?? []).map((bucketRow) => ({
        start: bucketRow.start,
        turns: Number(bucketRow.turns),
        bypassed_turns: Number(bucketRow.bypassed_turns),
        router_calls: Number(bucketRow.router_calls),
      })),
    };
  }
}
