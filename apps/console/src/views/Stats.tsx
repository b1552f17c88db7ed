import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useMemo, useState, type FormEvent } from 'react';
import { unwrap, type StickinessStats } from '../api/client';
import { useOperator } from '../auth';
import { Chart, type ChartOption } from '../components/Chart';
import { ErrorNotice } from '../components/ErrorNotice';
import { TenantField } from '../components/TenantField';
import { formatCount, formatDateTime, formatMoney, formatPercent } from '../format';
import { routeHref, STATS_PERIOD_NAMES, STATS_PERIODS, type StatsFilters, type StatsPeriod } from '../routes';

const PERIOD_LABELS: Record<StatsPeriod, string> = {
  '24h': 'last 24 hours',
  '7d': 'last 7 days',
  '30d': 'last 30 days',
};

const FALLBACKS: Record<string, string> = {
  below_threshold: 'below the threshold',
  invalid_output: 'invalid output',
  timeout: 'timeout',
  error: 'error',
  no_active_agent: 'no active agent',
};

/** The period a route asks for, as instants; a preset is measured back from when the view opened. */
function periodOf(filters: StatsFilters, openedAt: number): { from: string; to: string } {
  if (filters.from && filters.to) return { from: filters.from, to: filters.to };
  const span = STATS_PERIODS[filters.period ?? '7d'];
  return { from: new Date(openedAt - span).toISOString(), to: new Date(openedAt).toISOString() };
}

/** What stickiness saves and what the models cost, over a period. */
export function Stats({ filters }: { filters: StatsFilters }) {
  const { client, key } = useOperator();
  const [openedAt] = useState(() => Date.now());
  const tenant = filters.tenant ?? (key.tenants?.length ? key.tenants[0] : undefined);
  const period = periodOf(filters, openedAt);
  const stats = useQuery({
    queryKey: ['stats', tenant, period],
    queryFn: () =>
      unwrap(client.GET('/v1/admin/stats', { params: { query: { tenant_id: tenant, ...period } } })),
    placeholderData: keepPreviousData,
  });

  return (
    <section aria-labelledby="stats-title">
      <h1 id="stats-title">Stickiness and cost</h1>
      <StatsFilterForm filters={{ ...filters, tenant }} />
      {stats.error && <ErrorNotice error={stats.error} action="load the statistics" />}
      {stats.isPending && <p role="status">Loading…</p>}
      {stats.data && <Figures stats={stats.data} />}
    </section>
  );
}

function StatsFilterForm({ filters }: { filters: StatsFilters }) {
  const custom = filters.from !== undefined;
  const [draft, setDraft] = useState({
    tenant: filters.tenant,
    choice: custom ? 'custom' : (filters.period ?? '7d'),
    from: filters.from?.slice(0, 16) ?? '',
    to: filters.to?.slice(0, 16) ?? '',
  });
  const apply = (event: FormEvent) => {
    event.preventDefault();
    const next: StatsFilters =
      draft.choice === 'custom'
        ? {
            tenant: draft.tenant,
            from: draft.from ? new Date(`${draft.from}Z`).toISOString() : undefined,
            to: draft.to ? new Date(`${draft.to}Z`).toISOString() : undefined,
          }
        : { tenant: draft.tenant, period: STATS_PERIOD_NAMES.find((period) => period === draft.choice) };
    window.location.hash = routeHref({ view: 'stats', filters: next });
  };
  return (
    <form className="filters" role="search" aria-label="Choose the period" onSubmit={apply}>
      <TenantField
        value={draft.tenant}
        onChange={(tenant) => setDraft({ ...draft, tenant })}
        id="stats-tenant"
      />
      <div className="field">
        <label htmlFor="stats-period">Period</label>
        <select
          id="stats-period"
          value={draft.choice}
          onChange={(event) => setDraft({ ...draft, choice: event.target.value })}
        >
          {STATS_PERIOD_NAMES.map((period) => (
            <option key={period} value={period}>
              {PERIOD_LABELS[period]}
            </option>
          ))}
          <option value="custom">from … to … (UTC)</option>
        </select>
      </div>
      {draft.choice === 'custom' && (
        <>
          <div className="field">
            <label htmlFor="stats-from">From (UTC)</label>
            <input
              id="stats-from"
              type="datetime-local"
              value={draft.from}
              onChange={(event) => setDraft({ ...draft, from: event.target.value })}
            />
          </div>
          <div className="field">
            <label htmlFor="stats-to">To (UTC)</label>
            <input
              id="stats-to"
              type="datetime-local"
              value={draft.to}
              onChange={(event) => setDraft({ ...draft, to: event.target.value })}
            />
          </div>
        </>
      )}
      <button type="submit">Show</button>
    </form>
  );
}

function Figures({ stats }: { stats: StickinessStats }) {
  const charts = useMemo(() => chartsOf(stats), [stats]);
  return (
    <>
      <p className="muted">
        {stats.tenant_id ? `Tenant ${stats.tenant_id}` : 'All tenants'}, {formatDateTime(stats.from)} to{' '}
        {formatDateTime(stats.to)}.
      </p>
      <dl className="figures">
        <div>
          <dt>Turns</dt>
          <dd>{formatCount(stats.turns)}</dd>
        </div>
        <div>
          <dt>Bypass rate</dt>
          <dd>{formatPercent(stats.bypass_rate)}</dd>
          <dd className="muted">{formatCount(stats.bypassed_turns)} turns kept with their agent</dd>
        </div>
        <div>
          <dt>Router calls avoided</dt>
          <dd>{formatCount(stats.router_calls_avoided)}</dd>
          <dd className="muted">{formatCount(stats.router_calls)} router model calls made</dd>
        </div>
        <div>
          <dt>Shadow agreement</dt>
          <dd>{formatPercent(stats.shadow.agreement_rate)}</dd>
          <dd className="muted">
            {formatCount(stats.shadow.agreed)} of {formatCount(stats.shadow.compared)} compared
          </dd>
        </div>
        <MoneySaved stats={stats} />
        <div>
          <dt>Turn latency p50 · p95</dt>
          <dd>
            {milliseconds(stats.turn_latency_ms.p50)} · {milliseconds(stats.turn_latency_ms.p95)}
          </dd>
        </div>
      </dl>
      <div className="charts">
        <Chart
          title="Turns over time"
          summary={`${stats.turns} turns, ${stats.bypassed_turns} kept with their agent, ${stats.router_calls} router model calls, per ${stats.bucket}.`}
          option={charts.series}
          table={
            <DataTable
              head={['Start (UTC)', 'Turns', 'Kept with their agent', 'Router calls']}
              rows={stats.series
                .filter((bucket) => bucket.turns > 0)
                .map((bucket) => [
                  bucket.start.slice(0, 16).replace('T', ' '),
                  bucket.turns,
                  bucket.bypassed_turns,
                  bucket.router_calls,
                ])}
            />
          }
        />
        <Chart
          title="Continuity decisions"
          height={categoryChartHeight(new Set(stats.decisions.map((d) => d.decision)).size)}
          summary={stats.decisions
            .map((d) => `${d.decision} ${d.accepted ? 'accepted' : 'overruled'}: ${d.count}`)
            .join('; ')}
          option={charts.decisions}
          table={
            <DataTable
              head={['Decision', 'Accepted', 'Turns']}
              rows={stats.decisions.map((d) => [d.decision, d.accepted ? 'yes' : 'no', d.count])}
            />
          }
        />
        <Chart
          title="Fallback reasons"
          height={categoryChartHeight(stats.fallback_reasons.length)}
          summary={
            stats.fallback_reasons.length === 0
              ? 'The classifier never fell back to the router.'
              : stats.fallback_reasons.map((f) => `${FALLBACKS[f.reason] ?? f.reason}: ${f.count}`).join('; ')
          }
          option={charts.fallbacks}
          table={
            <DataTable
              head={['Reason', 'Turns']}
              rows={stats.fallback_reasons.map((f) => [FALLBACKS[f.reason] ?? f.reason, f.count])}
            />
          }
        />
        <Chart
          title="Tokens by LLM profile"
          height={categoryChartHeight(stats.profiles.length)}
          summary={stats.profiles
            .map((p) => `${p.profile}: ${p.prompt_tokens} prompt, ${p.completion_tokens} completion tokens`)
            .join('; ')}
          option={charts.tokens}
          table={
            <DataTable
              head={['Profile', 'Calls', 'Failures', 'Prompt tokens', 'Of them cached', 'Completion tokens']}
              rows={stats.profiles.map((p) => [
                p.profile,
                p.calls,
                p.failures,
                p.prompt_tokens,
                p.cached_prompt_tokens,
                p.completion_tokens,
              ])}
            />
          }
        />
        <Chart
          title="Model time per turn by LLM profile (ms)"
          height={categoryChartHeight(stats.profiles.length)}
          summary={stats.profiles
            .map(
              (p) =>
                `${p.profile}: p50 ${milliseconds(p.latency_p50_ms)}, p95 ${milliseconds(p.latency_p95_ms)}`,
            )
            .join('; ')}
          option={charts.latency}
          table={
            <DataTable
              head={['Profile', 'p50 ms', 'p95 ms']}
              rows={stats.profiles.map((p) => [p.profile, round(p.latency_p50_ms), round(p.latency_p95_ms)])}
            />
          }
        />
      </div>
    </>
  );
}

/** What stickiness saved in money, net of its classifier, and what every priced model call cost. */
function MoneySaved({ stats }: { stats: StickinessStats }) {
  const { cost } = stats;
  const money = (amount: number | null) => formatMoney(amount, cost.currency);
  const saving =
    cost.currency === null
      ? 'No model prices in llm_profiles.yaml'
      : cost.saved === null
        ? 'No router model call in this period to price the avoided ones by'
        : `${money(cost.saved)} on ${formatCount(stats.router_calls_avoided)} router calls avoided, less ${money(cost.classifier)} for the classifier`;
  return (
    <div>
      <dt>Money saved</dt>
      <dd>{money(cost.net_saved)}</dd>
      <dd className="muted">{saving}</dd>
      {cost.currency !== null && (
        <dd className="muted">
          {money(cost.total)} on priced model calls
          {cost.unpriced_profiles.length > 0 && `; no price for ${cost.unpriced_profiles.join(', ')}`}
        </dd>
      )}
    </div>
  );
}

function milliseconds(value: number | null): string {
  return value === null ? '—' : `${Math.round(value)} ms`;
}

function round(value: number | null): string {
  return value === null ? '—' : value.toFixed(1);
}

function DataTable({ head, rows }: { head: string[]; rows: (string | number)[][] }) {
  return (
    <table className="data compact">
      <thead>
        <tr>
          {head.map((label) => (
            <th key={label} scope="col">
              {label}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row, index) => (
          <tr key={index}>
            {row.map((cell, column) => (
              <td key={column} className={typeof cell === 'number' ? 'numeric' : undefined}>
                {typeof cell === 'number' ? formatCount(cell) : cell}
              </td>
            ))}
          </tr>
        ))}
        {rows.length === 0 && (
          <tr>
            <td colSpan={head.length}>Nothing in this period.</td>
          </tr>
        )}
      </tbody>
    </table>
  );
}

const GRID = { left: 16, right: 24, top: 36, bottom: 16 };

/**
 * A category axis that shows every label: ECharts hides labels it finds crowded (ROUTE and END_SESSION went
 * missing), so categories run down the vertical axis, one line each, first at the top.
 */
function categoryAxis(data: string[]) {
  return { type: 'category' as const, data, inverse: true, axisLabel: { interval: 0 } };
}

/** The counts beside them: on a narrow chart, numbers that would overlap are left out (the data table has all). */
function valueAxis(minInterval?: number) {
  return { type: 'value' as const, minInterval, axisLabel: { hideOverlap: true } };
}

/** Room for every category's bars, so a long catalogue of profiles stays readable. */
function categoryChartHeight(categories: number): number {
  return Math.max(200, 80 + categories * 36);
}

function chartsOf(
  stats: StickinessStats,
): Record<'series' | 'decisions' | 'fallbacks' | 'tokens' | 'latency', ChartOption> {
  const profiles = stats.profiles.map((p) => p.profile);
  const decisionNames = [...new Set(stats.decisions.map((d) => d.decision))];
  const decisionCount = (decision: string, accepted: boolean) =>
    stats.decisions.find((d) => d.decision === decision && d.accepted === accepted)?.count ?? 0;
  return {
    series: {
      grid: GRID,
      tooltip: { trigger: 'axis' },
      legend: { top: 0 },
      xAxis: { type: 'time' },
      yAxis: { type: 'value', minInterval: 1 },
      series: [
        { name: 'Turns', type: 'bar', data: stats.series.map((b) => [b.start, b.turns]) },
        {
          name: 'Kept with their agent',
          type: 'line',
          data: stats.series.map((b) => [b.start, b.bypassed_turns]),
        },
        { name: 'Router calls', type: 'line', data: stats.series.map((b) => [b.start, b.router_calls]) },
      ],
    },
    decisions: {
      grid: GRID,
      tooltip: { trigger: 'axis' },
      legend: { top: 0 },
      xAxis: valueAxis(1),
      yAxis: categoryAxis(decisionNames),
      series: [
        {
          name: 'accepted',
          type: 'bar',
          stack: 'decision',
          data: decisionNames.map((d) => decisionCount(d, true)),
        },
        {
          name: 'overruled',
          type: 'bar',
          stack: 'decision',
          data: decisionNames.map((d) => decisionCount(d, false)),
        },
      ],
    },
    fallbacks: {
      grid: GRID,
      tooltip: { trigger: 'axis' },
      xAxis: valueAxis(1),
      yAxis: categoryAxis(stats.fallback_reasons.map((f) => FALLBACKS[f.reason] ?? f.reason)),
      series: [{ name: 'Turns', type: 'bar', data: stats.fallback_reasons.map((f) => f.count) }],
    },
    tokens: {
      grid: GRID,
      tooltip: { trigger: 'axis' },
      legend: { top: 0 },
      xAxis: valueAxis(),
      yAxis: categoryAxis(profiles),
      series: [
        {
          name: 'Prompt tokens',
          type: 'bar',
          stack: 'tokens',
          data: stats.profiles.map((p) => p.prompt_tokens),
        },
        {
          name: 'Completion tokens',
          type: 'bar',
          stack: 'tokens',
          data: stats.profiles.map((p) => p.completion_tokens),
        },
      ],
    },
    latency: {
      grid: GRID,
      tooltip: { trigger: 'axis' },
      legend: { top: 0 },
      xAxis: valueAxis(),
      yAxis: categoryAxis(profiles),
      series: [
        { name: 'p50', type: 'bar', data: stats.profiles.map((p) => p.latency_p50_ms ?? 0) },
        { name: 'p95', type: 'bar', data: stats.profiles.map((p) => p.latency_p95_ms ?? 0) },
      ],
    },
  };
}
