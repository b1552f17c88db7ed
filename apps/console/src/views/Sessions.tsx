import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { unwrap } from '../api/client';
import { useOperator } from '../auth';
import { ErrorNotice } from '../components/ErrorNotice';
import { StatusBadge } from '../components/StatusBadge';
import { TenantField } from '../components/TenantField';
import { formatAgo, formatCount, formatDateTime } from '../format';
import { useNow } from '../hooks';
import {
  ACTIVITY_WINDOW_NAMES,
  ACTIVITY_WINDOWS,
  routeHref,
  SESSION_STATUSES,
  type ActivityWindow,
  type SessionFilters,
} from '../routes';

/**
 * The columns of the sessions table, in order. On a narrow screen (a phone) only the `narrow` ones are shown, and
 * the session's cell lists the others' facts under its id (styles.css: .wide-only, .narrow-only).
 */
const SESSION_COLUMNS = [
  { label: 'Session', narrow: true },
  { label: 'Tenant' },
  { label: 'Agent' },
  { label: 'Status', narrow: true },
  { label: 'Active agent' },
  { label: 'Last route · intent' },
  { label: 'Turns', numeric: true },
  { label: 'Last activity', narrow: true },
];

function columnClass(numeric?: boolean, narrow?: boolean): string | undefined {
  const classes = [numeric ? 'numeric' : '', narrow ? '' : 'wide-only'].filter(Boolean).join(' ');
  return classes || undefined;
}

const PAGE_SIZE = 25;

const ACTIVITY_LABELS: Record<ActivityWindow, string> = {
  '15m': 'last 15 minutes',
  '1h': 'last hour',
  '24h': 'last 24 hours',
  '7d': 'last 7 days',
};

/** The sessions list: filters live in the URL; pages follow the API's cursor (a stack, for going back). */
export function Sessions({ filters }: { filters: SessionFilters }) {
  const { client, key } = useOperator();
  const now = useNow();
  const tenant = filters.tenant ?? (key.tenants?.length ? key.tenants[0] : undefined);
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const sessions = useQuery({
    queryKey: ['sessions', { ...filters, tenant }, cursor],
    queryFn: () =>
      unwrap(
        client.GET('/v1/admin/sessions', {
          params: {
            query: {
              tenant_id: tenant,
              status: filters.status,
              agent_id: filters.agent,
              updated_after: filters.activity
                ? new Date(Date.now() - ACTIVITY_WINDOWS[filters.activity]).toISOString()
                : undefined,
              limit: PAGE_SIZE,
              cursor,
            },
          },
        }),
      ),
    placeholderData: keepPreviousData,
  });
  const page = cursors.length + 1;

  return (
    <section aria-labelledby="sessions-title">
      <h1 id="sessions-title">Sessions</h1>
      <SessionFilterForm filters={{ ...filters, tenant }} />
      {sessions.error && <ErrorNotice error={sessions.error} action="list the sessions" />}
      <table className="data">
        <caption>
          Sessions, most recent activity first — page {page}
          {sessions.isFetching ? ' (loading…)' : ''}
        </caption>
        <thead>
          <tr>
            {SESSION_COLUMNS.map(({ label, numeric, narrow }) => (
              <th key={label} scope="col" className={columnClass(numeric, narrow)}>
                {label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {sessions.data?.items.map((session) => (
            <tr key={session.conversation_key}>
              <th scope="row">
                <a
                  href={routeHref({
                    view: 'timeline',
                    tenant: session.tenant_id,
                    session: session.session_id,
                  })}
                >
                  {session.session_id}
                </a>
                {session.busy && <span className="badge badge-busy">turn running</span>}
                <span className="narrow-only session-facts">
                  {session.tenant_id} · {session.agent_id} · {session.active_agent ?? '—'} ·{' '}
                  {formatCount(session.turn_count)} {session.turn_count === 1 ? 'turn' : 'turns'}
                </span>
              </th>
              <td className="wide-only">{session.tenant_id}</td>
              <td className="wide-only">{session.agent_id}</td>
              <td>
                <StatusBadge status={session.status} />
              </td>
              <td className="wide-only">{session.active_agent ?? '—'}</td>
              <td className="wide-only">
                {session.last_route ?? '—'} · {session.last_intent ?? '—'}
              </td>
              <td className="numeric wide-only">{session.turn_count}</td>
              <td title={formatDateTime(session.updated_at)}>{formatAgo(session.updated_at, now)}</td>
            </tr>
          ))}
          {sessions.data?.items.length === 0 && (
            <tr>
              <td colSpan={SESSION_COLUMNS.length}>No session matches these filters.</td>
            </tr>
          )}
        </tbody>
      </table>
      <nav className="pager" aria-label="Pages of sessions">
        <button
          type="button"
          disabled={cursors.length === 0}
          onClick={() => setCursors(cursors.slice(0, -1))}
        >
          Previous page
        </button>
        {/* While a page loads, the page before it is still on show with its cursor: a second click (a double
            click) would ask for the same page again and count it as one more. */}
        <button
          type="button"
          disabled={sessions.isPlaceholderData || !sessions.data?.next_cursor}
          onClick={() => sessions.data?.next_cursor && setCursors([...cursors, sessions.data.next_cursor])}
        >
          Next page
        </button>
        <button type="button" onClick={() => void sessions.refetch()}>
          Refresh
        </button>
      </nav>
    </section>
  );
}

function SessionFilterForm({ filters }: { filters: SessionFilters }) {
  const [draft, setDraft] = useState(filters);
  const apply = (event: FormEvent) => {
    event.preventDefault();
    window.location.hash = routeHref({ view: 'sessions', filters: draft });
  };
  return (
    <form className="filters" role="search" aria-label="Filter sessions" onSubmit={apply}>
      <TenantField value={draft.tenant} onChange={(tenant) => setDraft({ ...draft, tenant })} />
      <div className="field">
        <label htmlFor="filter-status">Status</label>
        <select
          id="filter-status"
          value={draft.status ?? ''}
          onChange={(event) =>
            setDraft({
              ...draft,
              status: SESSION_STATUSES.find((status) => status === event.target.value),
            })
          }
        >
          <option value="">any</option>
          <option value="active">active</option>
          <option value="handoff">waiting for a person</option>
          <option value="ended">ended</option>
        </select>
      </div>
      <div className="field">
        <label htmlFor="filter-agent">Agent id</label>
        <input
          id="filter-agent"
          value={draft.agent ?? ''}
          placeholder="any"
          onChange={(event) => setDraft({ ...draft, agent: event.target.value || undefined })}
        />
      </div>
      <div className="field">
        <label htmlFor="filter-activity">Last activity</label>
        <select
          id="filter-activity"
          value={draft.activity ?? ''}
          onChange={(event) =>
            setDraft({
              ...draft,
              activity: ACTIVITY_WINDOW_NAMES.find((window) => window === event.target.value),
            })
          }
        >
          <option value="">any time</option>
          {ACTIVITY_WINDOW_NAMES.map((window) => (
            <option key={window} value={window}>
              {ACTIVITY_LABELS[window]}
            </option>
          ))}
        </select>
      </div>
      <button type="submit">Apply filters</button>
    </form>
  );
}
