import {
  formatAgo,
  formatDuration,
  formatMoney,
  formatPercent,
  recoveryText,
  unavailableText,
} from '../../apps/console/src/format';
import { parseRoute, routeHref } from '../../apps/console/src/routes';

describe('console display helpers', () => {
  it('says money in cents above one unit and in three significant digits below, "—" when unknown', () => {
    const usd = (amount: number | null, currency: string | null = 'USD') => formatMoney(amount, currency);
    expect(usd(1.5)).toBe(
      (1.5).toLocaleString(undefined, { style: 'currency', currency: 'USD', minimumFractionDigits: 2 }),
    );
    expect(usd(0.00087841)).toBe(
      (0.000878).toLocaleString(undefined, {
        style: 'currency',
        currency: 'USD',
        maximumSignificantDigits: 3,
      }),
    );
    expect(usd(0)).toBe(
      (0).toLocaleString(undefined, { style: 'currency', currency: 'USD', minimumFractionDigits: 2 }),
    );
    expect(usd(null)).toBe('—');
    expect(usd(2, null)).toBe('—');
  });

  it('says durations coarsely', () => {
    expect(formatDuration(-5)).toBe('0 s');
    expect(formatDuration(42_400)).toBe('42 s');
    expect(formatDuration(5 * 60_000 + 10_000)).toBe('5 min');
    expect(formatDuration(3 * 3_600_000)).toBe('3 h');
    expect(formatDuration(3 * 3_600_000 + 20 * 60_000)).toBe('3 h 20 min');
    expect(formatDuration(52 * 3_600_000)).toBe('2 d 4 h');
    expect(formatAgo('2025-01-01T00:00:00Z', Date.parse('2025-01-01T00:01:30Z'))).toBe('1 min ago');
    expect(formatAgo('not a date', 0)).toBe('—');
  });

  it('shows ratios as percentages and nothing to divide as a dash', () => {
    expect(formatPercent(0.8345)).toBe('83.5 %');
    expect(formatPercent(null)).toBe('—');
    expect(formatPercent(Number.NaN)).toBe('—');
  });

  it('names a dependency a turn could not use, with its cause and HTTP status', () => {
    expect(
      unavailableText({
        code: 'GUARDRAIL_MODEL_UNAVAILABLE',
        name: 'guardrail',
        cause: 'http_error',
        status: 401,
      }),
    ).toBe('the guardrail model of profile guardrail (http_error 401)');
    expect(
      unavailableText({ code: 'MODEL_UNAVAILABLE', name: 'agent', cause: 'refused', status: null }),
    ).toBe('the model of profile agent (refused)');
    expect(
      unavailableText({ code: 'MCP_UNAVAILABLE', name: 'telecom', cause: 'timeout', status: null }),
    ).toBe('the MCP server telecom (timeout)');
  });
});

describe('console checkpoint recoveries', () => {
  const recovery = { version: null, reason: null, skipped: null, found_version: null };

  it('says what each recovery did, a version gap like the corrupt-checkpoint ones', () => {
    expect(recoveryText({ ...recovery, kind: 'skip_corrupt', version: 2, reason: 'checksum mismatch' })).toBe(
      'Checkpoint version 2 failed its integrity check and was skipped (checksum mismatch).',
    );
    expect(recoveryText({ ...recovery, kind: 'clean_start', skipped: 3 })).toBe(
      'No checkpoint was usable (3 corrupt): the conversation started afresh.',
    );
    expect(recoveryText({ ...recovery, kind: 'version_gap', version: 4, skipped: 2, found_version: 2 })).toBe(
      'Checkpoint versions 3–4 are missing (deleted or lost in a restore): the turn went on from version 2.',
    );
    expect(recoveryText({ ...recovery, kind: 'version_gap', version: 5, skipped: 1, found_version: 4 })).toBe(
      'Checkpoint version 5 is missing (deleted or lost in a restore): the turn went on from version 4.',
    );
    expect(recoveryText({ ...recovery, kind: 'version_gap', version: 5, skipped: 5 })).toBe(
      'Checkpoint versions 1–5 are missing and nothing older is stored: the conversation started afresh.',
    );
  });
});

describe('console routes', () => {
  it('round-trips the session filters through the URL fragment, dropping unknown values', () => {
    const route = parseRoute('#/sessions?tenant=acme&status=handoff&agent=telecom_contas&activity=1h');
    expect(route).toEqual({
      view: 'sessions',
      filters: { tenant: 'acme', status: 'handoff', agent: 'telecom_contas', activity: '1h' },
    });
    expect(parseRoute(routeHref(route))).toEqual(route);
    expect(parseRoute('#/sessions?status=lost&activity=3y&tenant=%20')).toEqual({
      view: 'sessions',
      filters: { tenant: undefined, status: undefined, agent: undefined, activity: undefined },
    });
    expect(parseRoute('')).toEqual(parseRoute('#/sessions'));
  });
});

describe('console timeline route', () => {
  it('addresses a conversation by tenant and session, escaping both', () => {
    const route = { view: 'timeline' as const, tenant: 'acme', session: 'web:7f/3a' };
    expect(routeHref(route)).toBe('#/sessions/acme/web%3A7f%2F3a');
    expect(parseRoute(routeHref(route))).toEqual(route);
    expect(parseRoute('#/sessions/acme/%E0%A4%A')).toMatchObject({ view: 'sessions' });
  });
});

describe('console stats route', () => {
  it('keeps a preset period, or a custom one only when both ends are valid instants', () => {
    const preset = parseRoute('#/stats?tenant=acme&period=30d');
    expect(preset).toEqual({
      view: 'stats',
      filters: { tenant: 'acme', period: '30d', from: undefined, to: undefined },
    });
    expect(parseRoute(routeHref(preset))).toEqual(preset);
    expect(parseRoute('#/stats?from=2025-01-01T00:00:00Z&to=2025-01-02T00:00:00Z&period=7d')).toMatchObject({
      filters: { period: undefined, from: '2025-01-01T00:00:00.000Z', to: '2025-01-02T00:00:00.000Z' },
    });
    expect(parseRoute('#/stats?from=2025-01-01T00:00:00Z&to=soon')).toMatchObject({
      filters: { from: undefined, to: undefined },
    });
  });
});
