/**
 * The console's places, kept in the URL fragment so the server only ever serves index.html and every view
 * (with its filters) can be bookmarked, shared and reached with the browser's back button.
 */
export const SESSION_STATUSES = ['active', 'handoff', 'ended'] as const;
export type SessionStatusFilter = (typeof SESSION_STATUSES)[number];

/** Last-activity windows offered by the sessions filter, in milliseconds. */
export const ACTIVITY_WINDOWS = { '15m': 15 * 60_000, '1h': 3_600_000, '24h': 86_400_000, '7d': 604_800_000 };
export type ActivityWindow = keyof typeof ACTIVITY_WINDOWS;
export const ACTIVITY_WINDOW_NAMES: ActivityWindow[] = ['15m', '1h', '24h', '7d'];

export interface SessionFilters {
  tenant?: string;
  status?: SessionStatusFilter;
  agent?: string;
  activity?: ActivityWindow;
}

/** Preset periods of the statistics view, in milliseconds back from now. */
export const STATS_PERIODS = { '24h': 86_400_000, '7d': 604_800_000, '30d': 2_592_000_000 };
export type StatsPeriod = keyof typeof STATS_PERIODS;
export const STATS_PERIOD_NAMES: StatsPeriod[] = ['24h', '7d', '30d'];

/** A preset period, or a custom one (ISO instants) when both ends are given. */
export interface StatsFilters {
  tenant?: string;
  period?: StatsPeriod;
  from?: string;
  to?: string;
}

export type Route =
  | { view: 'sessions'; filters: SessionFilters }
  | { view: 'timeline'; tenant: string; session: string }
  | { view: 'handoffs'; tenant?: string }
  | { view: 'stats'; filters: StatsFilters };

function oneOf<T extends string>(value: string | null, allowed: readonly T[]): T | undefined {
  return allowed.find((candidate) => candidate === value);
}

function text(value: string | null): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

function instant(value: string | null): string | undefined {
  return value && !Number.isNaN(Date.parse(value)) ? new Date(value).toISOString() : undefined;
}

/** A malformed escape (a hand-edited URL) reads as no segment rather than an exception. */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return '';
  }
}

export function parseRoute(hash: string): Route {
  const [path = '', query = ''] = hash.replace(/^#/, '').split('?', 2);
  const params = new URLSearchParams(query);
  const segments = path.split('/').filter(Boolean).map(decodeSegment);
  if (segments[0] === 'sessions' && segments.length === 3 && segments[1] && segments[2]) {
    return { view: 'timeline', tenant: segments[1], session: segments[2] };
  }
  if (segments[0] === 'handoffs') return { view: 'handoffs', tenant: text(params.get('tenant')) };
  if (segments[0] === 'stats') {
    const from = instant(params.get('from'));
    const to = instant(params.get('to'));
    const custom = from !== undefined && to !== undefined;
    return {
      view: 'stats',
      filters: {
        tenant: text(params.get('tenant')),
        period: custom ? undefined : oneOf(params.get('period'), STATS_PERIOD_NAMES),
        from: custom ? from : undefined,
        to: custom ? to : undefined,
      },
    };
  }
  return {
    view: 'sessions',
    filters: {
      tenant: text(params.get('tenant')),
      status: oneOf(params.get('status'), SESSION_STATUSES),
      agent: text(params.get('agent')),
      activity: oneOf(params.get('activity'), ACTIVITY_WINDOW_NAMES),
    },
  };
}

function withQuery(path: string, query: Record<string, string | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value) params.set(name, value);
  const encoded = params.toString();
  return encoded ? `#${path}?${encoded}` : `#${path}`;
}

export function routeHref(route: Route): string {
  switch (route.view) {
    case 'sessions':
      return withQuery('/sessions', { ...route.filters });
    case 'timeline':
      return `#/sessions/${encodeURIComponent(route.tenant)}/${encodeURIComponent(route.session)}`;
    case 'handoffs':
      return withQuery('/handoffs', { tenant: route.tenant });
    case 'stats':
      return withQuery('/stats', { ...route.filters });
  }
}
