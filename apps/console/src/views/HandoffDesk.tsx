import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { unwrap, type WaitingHandoff } from '../api/client';
import { useOperator } from '../auth';
import { ErrorNotice } from '../components/ErrorNotice';
import { SessionActions } from '../components/SessionActions';
import { TenantField } from '../components/TenantField';
import { formatDateTime, formatDuration } from '../format';
import { useNow } from '../hooks';
import { routeHref } from '../routes';

/** Conversations the desk shows (the oldest requests). */
const DESK_LIMIT = 50;
const REFRESH_MS = 15_000;

/** Conversations waiting for a person, oldest request first, from the handoff queue (GET /v1/admin/handoffs). */
export function HandoffDesk({ tenant: requested }: { tenant?: string }) {
  const { client, key } = useOperator();
  const now = useNow(5_000);
  const tenant = requested ?? (key.tenants?.length ? key.tenants[0] : undefined);
  const waiting = useQuery({
    queryKey: ['handoffs', tenant],
    queryFn: () =>
      unwrap(
        client.GET('/v1/admin/handoffs', { params: { query: { tenant_id: tenant, limit: DESK_LIMIT } } }),
      ),
    refetchInterval: REFRESH_MS,
  });
  const items = waiting.data?.items ?? [];

  return (
    <section aria-labelledby="desk-title">
      <h1 id="desk-title">Handoff desk</h1>
      <DeskTenantForm tenant={tenant} />
      {waiting.error && <ErrorNotice error={waiting.error} action="list the sessions waiting for a person" />}
      <p role="status" className="muted">
        {waiting.isPending
          ? 'Loading…'
          : `${items.length === 0 ? 'Nobody' : items.length} waiting for a person${
              items.length === DESK_LIMIT ? ` (the ${DESK_LIMIT} oldest requests are shown)` : ''
            }. Refreshed every ${REFRESH_MS / 1000} s.`}
      </p>
      <ol className="desk">
        {items.map((item) => (
          <li key={item.conversation_key}>
            <WaitingCard item={item} now={now} />
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

function WaitingCard({ item, now }: { item: WaitingHandoff; now: number }) {
  const { key } = useOperator();
  const waited = formatDuration(Math.max(0, now - Date.parse(item.requested_at)));
  const messages = [
    ...item.last_messages.map((message) => ({ customer: message.role === 'user', text: message.content })),
    ...(item.user_text ? [{ customer: true, text: item.user_text }] : []),
  ];
  return (
    <article className="turn" aria-label={`${item.session_id}, waiting ${waited}`}>
      <header>
        <h2>
          <a href={routeHref({ view: 'timeline', tenant: item.tenant_id, session: item.session_id })}>
            {item.session_id}
          </a>
        </h2>
        <span className="badge badge-handoff">waiting {waited}</span>
        <span className="muted">since {formatDateTime(item.requested_at)}</span>
      </header>
      <dl className="decision">
        <div>
          <dt>Customer · channel</dt>
          <dd>
            {item.user_id ?? 'anonymous'} · {item.channel ?? '—'}
          </dd>
        </div>
        <div>
          <dt>Tenant · agent</dt>
          <dd>
            {item.tenant_id} · {item.agent_id}
          </dd>
        </div>
        <div>
          <dt>Was with · about</dt>
          <dd>
            {item.active_agent ?? '—'} · {item.intent ?? '—'}
          </dd>
        </div>
        <div>
          <dt>Asked by</dt>
          <dd>
            {item.source === 'admin' ? 'operator' : 'customer'}
            {item.reason ? `: “${item.reason}”` : ''}
          </dd>
        </div>
        <div>
          <dt>Messages held since</dt>
          <dd>{item.messages_since}</dd>
        </div>
        {item.pending_transaction && (
          <div>
            <dt>Dropped operation</dt>
            <dd>{JSON.stringify(item.pending_transaction)}</dd>
          </div>
        )}
        <div>
          <dt>Taken by</dt>
          <dd>
            {item.claim
              ? `${item.claim.claimed_by}${item.claim.claimed_by === key.operator ? ' (you)' : ''} at ${formatDateTime(item.claim.claimed_at)}`
              : 'nobody yet'}
          </dd>
        </div>
      </dl>
      {messages.length > 0 && (
        <div className="messages">
          <h3>Last messages</h3>
          {messages.map((message, index) => (
            <p key={index}>
              <span className="who">{message.customer ? 'Customer' : 'Answer'}</span>
              {message.text}
            </p>
          ))}
        </div>
      )}
      <div className="session-actions">
        <ClaimButton item={item} />
        <SessionActions session={{ ...item, status: 'handoff' }} />
      </div>
    </article>
  );
}

/** Takes the conversation for this operator (the key's name, else its id, says who); someone else's claim is refused. */
function ClaimButton({ item }: { item: WaitingHandoff }) {
  const { client } = useOperator();
  const queries = useQueryClient();
  const claim = useMutation({
    mutationFn: () =>
      unwrap(
        client.POST('/v1/admin/sessions/{session_id}/claim', {
          params: { path: { session_id: item.session_id }, query: { tenant_id: item.tenant_id } },
          body: {},
        }),
      ),
    onSettled: () => queries.invalidateQueries(),
  });
  return (
    <>
      <button type="button" disabled={item.claim !== null || claim.isPending} onClick={() => claim.mutate()}>
        {item.claim ? 'Claimed' : 'Claim'}
      </button>
      {claim.error && <ErrorNotice error={claim.error} action="claim this session" />}
    </>
  );
}
