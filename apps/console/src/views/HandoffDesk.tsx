import { useMutation, useQueries, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { callDocumented, documentedOperations, unwrap, type SessionSummary } from '../api/client';
import { useOperator } from '../auth';
import { ErrorNotice } from '../components/ErrorNotice';
import { SessionActions } from '../components/SessionActions';
import { TenantField } from '../components/TenantField';
import { formatDateTime, formatDuration } from '../format';
import { byLongestWait, pickUpOf, type PickUp } from '../handoff';
import { useNow } from '../hooks';
import { routeHref } from '../routes';

/** The documented claim operation of the handoff queue; used only when the server documents it. */
const CLAIM_OPERATION = 'POST /v1/admin/sessions/{session_id}/claim';
/** Sessions the desk looks at (their timelines give the waiting time and the pick-up summary). */
const DESK_LIMIT = 50;
const REFRESH_MS = 15_000;

/**
 * Sessions waiting for a person, longest wait first, with what is needed to pick them up. Built on the
 * sessions list filtered by status (oldest activity first) and each session's timeline.
 */
export function HandoffDesk({ tenant: requested }: { tenant?: string }) {
  const { client, key } = useOperator();
  const now = useNow(5_000);
  const tenant = requested ?? (key.tenants?.length ? key.tenants[0] : undefined);
  const waiting = useQuery({
    queryKey: ['handoffs', tenant],
    queryFn: () =>
      unwrap(
        client.GET('/v1/admin/sessions', {
          params: { query: { tenant_id: tenant, status: 'handoff', limit: DESK_LIMIT } },
        }),
      ),
    refetchInterval: REFRESH_MS,
  });
  const sessions = waiting.data?.items ?? [];
  const timelines = useQueries({
    queries: sessions.map((session) => ({
      queryKey: ['timeline', session.tenant_id, session.session_id],
      queryFn: () =>
        unwrap(
          client.GET('/v1/admin/sessions/{session_id}/timeline', {
            params: { path: { session_id: session.session_id }, query: { tenant_id: session.tenant_id } },
          }),
        ),
      refetchInterval: REFRESH_MS,
    })),
  });
  const entries = sessions
    .map((session, index) => {
      const timeline = timelines[index]?.data;
      return { session, pickUp: timeline ? pickUpOf(timeline) : null };
    })
    .sort(byLongestWait);

  return (
    <section aria-labelledby="desk-title">
      <h1 id="desk-title">Handoff desk</h1>
      <DeskTenantForm tenant={tenant} />
      {waiting.error && <ErrorNotice error={waiting.error} action="list the sessions waiting for a person" />}
      <p role="status" className="muted">
        {waiting.isPending
          ? 'Loading…'
          : `${sessions.length === 0 ? 'Nobody' : sessions.length} waiting for a person${
              waiting.data?.next_cursor ? ` (the ${DESK_LIMIT} with the oldest activity are shown)` : ''
            }. Refreshed every ${REFRESH_MS / 1000} s.`}
      </p>
      <ol className="desk">
        {entries.map(({ session, pickUp }) => (
          <li key={session.conversation_key}>
            <WaitingCard session={session} pickUp={pickUp} now={now} />
          </li>
        ))}
      </ol>
    </section>
  );
}

function DeskTenantForm({ tenant }: { tenant: string | undefined }) {
  const [draft, setDraft] = useState(tenant);
  const apply = (event: FormEvent) => {
    event.preventDefault();
    window.location.hash = routeHref({ view: 'handoffs', tenant: draft });
  };
  return (
    <form className="filters" role="search" aria-label="Filter the desk" onSubmit={apply}>
      <TenantField value={draft} onChange={setDraft} id="desk-tenant" />
      <button type="submit">Show</button>
    </form>
  );
}

function WaitingCard({
  session,
  pickUp,
  now,
}: {
  session: SessionSummary;
  pickUp: PickUp | null;
  now: number;
}) {
  const waitedMs = pickUp?.requestedAt ? now - Date.parse(pickUp.requestedAt) : null;
  const title = `${session.session_id}${waitedMs !== null ? `, waiting ${formatDuration(waitedMs)}` : ''}`;
  return (
    <article className="turn" aria-label={title}>
      <header>
        <h2>
          <a href={routeHref({ view: 'timeline', tenant: session.tenant_id, session: session.session_id })}>
            {session.session_id}
          </a>
        </h2>
        <span className="badge badge-handoff">
          {waitedMs !== null ? `waiting ${formatDuration(waitedMs)}` : 'waiting'}
        </span>
        {pickUp?.requestedAt && <span className="muted">since {formatDateTime(pickUp.requestedAt)}</span>}
      </header>
      <dl className="decision">
        <div>
          <dt>Customer · channel</dt>
          <dd>
            {session.user_id ?? 'anonymous'} · {session.channel ?? '—'}
          </dd>
        </div>
        <div>
          <dt>Tenant · agent</dt>
          <dd>
            {session.tenant_id} · {session.agent_id}
          </dd>
        </div>
        <div>
          <dt>Was with · about</dt>
          <dd>
            {pickUp?.agent ?? '—'} · {pickUp?.intent ?? '—'}
          </dd>
        </div>
        <div>
          <dt>Asked by</dt>
          <dd>
            {pickUp?.requestedBy ?? '—'}
            {pickUp?.reason ? `: “${pickUp.reason}”` : ''}
          </dd>
        </div>
        <div>
          <dt>Messages held since</dt>
          <dd>{pickUp ? pickUp.heldMessages : '—'}</dd>
        </div>
      </dl>
      {pickUp && pickUp.lastMessages.length > 0 && (
        <div className="messages">
          <h3>Last messages</h3>
          {pickUp.lastMessages.map((message, index) => (
            <p key={index}>
              <span className="who">{message.role === 'customer' ? 'Customer' : 'Answer'}</span>
              {message.text}
            </p>
          ))}
        </div>
      )}
      <div className="session-actions">
        <ClaimButton session={session} />
        <SessionActions session={session} />
      </div>
    </article>
  );
}

/**
 * Claiming (who took the conversation, so two people do not) belongs to the handoff queue endpoints. The
 * button calls the documented endpoint when this server documents it and says plainly when it does not.
 */
function ClaimButton({ session }: { session: SessionSummary }) {
  const { secret } = useOperator();
  const queries = useQueryClient();
  const operations = useQuery({
    queryKey: ['operations'],
    queryFn: documentedOperations,
    staleTime: Infinity,
  });
  const available = operations.data?.has(CLAIM_OPERATION) === true;
  const claim = useMutation({
    mutationFn: () =>
      callDocumented(
        secret,
        'POST',
        `/v1/admin/sessions/${encodeURIComponent(session.session_id)}/claim?tenant_id=${encodeURIComponent(session.tenant_id)}`,
      ),
    onSettled: () => queries.invalidateQueries(),
  });
  const noteId = `claim-note-${session.conversation_key}`;
  return (
    <>
      <button
        type="button"
        disabled={!available || claim.isPending || claim.isSuccess}
        aria-describedby={available ? undefined : noteId}
        onClick={() => claim.mutate()}
      >
        {claim.isSuccess ? 'Claimed' : 'Claim'}
      </button>
      {!available && operations.isFetched && (
        <span id={noteId} className="muted">
          Claiming is not available on this server yet; resume or end the session directly.
        </span>
      )}
      {claim.error && <ErrorNotice error={claim.error} action="claim this session" />}
    </>
  );
}
