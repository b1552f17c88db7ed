import { useQuery } from '@tanstack/react-query';
import { unwrap, type TimelineTurn } from '../api/client';
import { useOperator } from '../auth';
import { ErrorNotice } from '../components/ErrorNotice';
import { SessionActions } from '../components/SessionActions';
import { StatusBadge } from '../components/StatusBadge';
import { formatAgo, formatDateTime, formatPercent, recoveryText, unavailableText } from '../format';
import { useNow } from '../hooks';
import { routeHref } from '../routes';

const METHODS: Record<string, string> = {
  continuity: 'continuity (router skipped)',
  llm: 'router model',
  keyword: 'keyword',
  state_policy: 'state policy',
  fallback: 'fallback',
  supervisor: 'supervisor plan',
  guardrail: 'stopped by a guardrail',
};

const FALLBACKS: Record<string, string> = {
  below_threshold: 'confidence below the threshold',
  invalid_output: 'invalid classifier output',
  timeout: 'classifier timed out',
  error: 'classifier failed',
  no_active_agent: 'no active agent to continue with',
};

const ACTIONS: Record<string, string> = {
  end: 'An operator ended the session',
  handoff: 'An operator handed the conversation to a person',
  resume: 'An operator gave the conversation back to the agents',
};

/** A conversation turn by turn: what the customer said, what was decided and why, and what it cost. */
export function Timeline({ tenant, session }: { tenant: string; session: string }) {
  const { client } = useOperator();
  const now = useNow();
  const timeline = useQuery({
    queryKey: ['timeline', tenant, session],
    queryFn: () =>
      unwrap(
        client.GET('/v1/admin/sessions/{session_id}/timeline', {
          params: { path: { session_id: session }, query: { tenant_id: tenant } },
        }),
      ),
    // Opened from the desk or the list, the conversation may have moved on since it was cached.
    staleTime: 0,
  });
  const data = timeline.data;

  return (
    <section aria-labelledby="timeline-title">
      <p>
        <a href={routeHref({ view: 'sessions', filters: { tenant } })}>← Sessions of {tenant}</a>
      </p>
      <h1 id="timeline-title">Conversation {session}</h1>
      {timeline.error && <ErrorNotice error={timeline.error} action="load this conversation" />}
      {timeline.isPending && <p role="status">Loading…</p>}
      {data && (
        <>
          <dl className="summary">
            <div>
              <dt>Status</dt>
              <dd>
                <StatusBadge status={data.session.status} />
              </dd>
            </div>
            <div>
              <dt>Tenant · agent</dt>
              <dd>
                {data.session.tenant_id} · {data.session.agent_id}
              </dd>
            </div>
            <div>
              <dt>Active agent</dt>
              <dd>{data.session.active_agent ?? '—'}</dd>
            </div>
            <div>
              <dt>Customer · channel</dt>
              <dd>
                {data.session.user_id ?? 'anonymous'} · {data.session.channel ?? '—'}
              </dd>
            </div>
            <div>
              <dt>Turns</dt>
              <dd>{data.session.turn_count}</dd>
            </div>
            <div>
              <dt>Last activity</dt>
              <dd title={formatDateTime(data.session.updated_at)}>
                {formatAgo(data.session.updated_at, now)}
              </dd>
            </div>
          </dl>
          <SessionActions session={data.session} />
          {data.state_version !== data.session.head_version && (
            <p role="note" className="notice notice-warning">
              The newest checkpoint (version {data.session.head_version}) fails its integrity check:{' '}
              {data.state_version === null
                ? 'no version is usable, so the next turn starts the conversation afresh.'
                : `the next turn resumes from version ${data.state_version}.`}
            </p>
          )}
          {data.messages_from_turn !== null && data.messages_from_turn > 1 && (
            <p className="muted">
              Messages of turns before {data.messages_from_turn} have left the bounded history; their
              decisions remain.
            </p>
          )}
          <ol className="turns">
            {data.turns.map((turn) => (
              <TurnCard key={turn.turn} turn={turn} />
            ))}
          </ol>
        </>
      )}
    </section>
  );
}

function TurnCard({ turn }: { turn: TimelineTurn }) {
  const usage = turn.model_usage.reduce(
    (sum, profile) => ({
      prompt: sum.prompt + profile.prompt_tokens,
      completion: sum.completion + profile.completion_tokens,
      calls: sum.calls + profile.calls,
    }),
    { prompt: 0, completion: 0, calls: 0 },
  );
  const slowest = Math.max(1, ...turn.nodes.map((node) => node.duration_ms));
  return (
    <li>
      <article className="turn" aria-labelledby={`turn-${turn.turn}`}>
        <header>
          <h2 id={`turn-${turn.turn}`}>Turn {turn.turn}</h2>
          <span className="muted">{formatDateTime(turn.at)}</span>
          {turn.route_bypassed && <span className="badge badge-active">router skipped</span>}
          {turn.session_control && <span className="badge badge-handoff">{turn.session_control}</span>}
          {turn.blocked && <span className="badge badge-warning">blocked</span>}
          {turn.recoveries.length > 0 && <span className="badge badge-warning">checkpoint recovery</span>}
        </header>
        <div className="messages">
          <p>
            <span className="who">Customer</span>
            {turn.user_message ?? <em className="muted">no longer kept</em>}
          </p>
          <p>
            <span className="who">Answer</span>
            {turn.answer ?? <em className="muted">no longer kept</em>}
          </p>
        </div>
        <dl className="decision">
          <div>
            <dt>Route</dt>
            <dd>
              {turn.route ?? '—'}
              {turn.intent ? ` · ${turn.intent}` : ''}
            </dd>
          </div>
          <div>
            <dt>Router method</dt>
            <dd>
              {turn.method ? (METHODS[turn.method] ?? turn.method) : '—'}
              {turn.confidence !== null ? ` (confidence ${turn.confidence.toFixed(2)})` : ''}
            </dd>
          </div>
          <div>
            <dt>Route bypassed</dt>
            <dd>{turn.route_bypassed ? 'yes' : 'no'}</dd>
          </div>
          <div>
            <dt>Continuity</dt>
            <dd>
              {turn.continuity ? (
                <>
                  {turn.continuity.decision}
                  {turn.continuity.confidence !== null
                    ? ` at ${formatPercent(turn.continuity.confidence)}`
                    : ''}
                  {turn.continuity.accepted ? ', accepted' : ', overruled'}
                  {turn.continuity.fallback_reason
                    ? ` — fallback: ${FALLBACKS[turn.continuity.fallback_reason] ?? turn.continuity.fallback_reason}`
                    : ''}
                  {turn.continuity.reason ? (
                    <span className="muted"> (“{turn.continuity.reason}”)</span>
                  ) : null}
                </>
              ) : (
                'not asked'
              )}
            </dd>
          </div>
          <div>
            <dt>Latency</dt>
            <dd>{turn.latency_ms !== null ? `${turn.latency_ms.toFixed(0)} ms` : '—'}</dd>
          </div>
          <div>
            <dt>First text</dt>
            <dd>{turn.first_text_ms !== null ? `${turn.first_text_ms.toFixed(0)} ms` : '—'}</dd>
          </div>
          <div>
            <dt>Model tokens</dt>
            <dd>
              {usage.prompt} in · {usage.completion} out ({usage.calls} calls)
            </dd>
          </div>
        </dl>
        {turn.unavailable.length > 0 && (
          <p role="note" className="notice notice-warning">
            Could not use {turn.unavailable.map(unavailableText).join('; ')}: an outage, not a verdict on the
            message.
          </p>
        )}
        {turn.recoveries.map((recovery, index) => (
          <p key={index} role="note" className="notice notice-warning">
            {recoveryText(recovery)}
          </p>
        ))}
        {turn.guardrails.length > 0 && (
          <div className="guardrails">
            <h3>Guardrails</h3>
            <ul>
              {turn.guardrails.map((verdict, index) => (
                <li key={index}>
                  <strong>
                    {verdict.stage}
                    {verdict.attempt ? ` (attempt ${verdict.attempt})` : ''}:
                  </strong>{' '}
                  {verdict.blocked ? `blocked by ${verdict.codes.join(', ')}` : 'passed'}
                  {verdict.rails.length > 0 && (
                    <span className="muted">
                      {' '}
                      — {verdict.rails.map((rail) => `${rail.code} ${rail.action}`).join(', ')}
                    </span>
                  )}
                </li>
              ))}
            </ul>
          </div>
        )}
        <details>
          <summary>Node timings and model calls</summary>
          <table className="data compact">
            <caption>Workflow nodes in execution order</caption>
            <thead>
              <tr>
                <th scope="col">Node</th>
                <th scope="col" className="numeric">
                  ms
                </th>
                <th scope="col">Share of the slowest</th>
                <th scope="col">Outcome</th>
              </tr>
            </thead>
            <tbody>
              {turn.nodes.map((node, index) => (
                <tr key={index}>
                  <th scope="row">{node.node}</th>
                  <td className="numeric">{node.duration_ms.toFixed(1)}</td>
                  <td>
                    <span className="bar" style={{ width: `${(node.duration_ms / slowest) * 100}%` }} />
                  </td>
                  <td>{node.outcome}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <table className="data compact">
            <caption>Model calls per LLM profile</caption>
            <thead>
              <tr>
                <th scope="col">Profile</th>
                <th scope="col">Model</th>
                <th scope="col" className="numeric">
                  Calls
                </th>
                <th scope="col" className="numeric">
                  Failed
                </th>
                <th scope="col" className="numeric">
                  Tokens in
                </th>
                <th scope="col" className="numeric">
                  Tokens out
                </th>
                <th scope="col" className="numeric">
                  ms
                </th>
              </tr>
            </thead>
            <tbody>
              {turn.model_usage.map((profile) => (
                <tr key={profile.profile}>
                  <th scope="row">{profile.profile}</th>
                  <td>{profile.model}</td>
                  <td className="numeric">{profile.calls}</td>
                  <td className="numeric">{profile.failed}</td>
                  <td className="numeric">{profile.prompt_tokens}</td>
                  <td className="numeric">{profile.completion_tokens}</td>
                  <td className="numeric">{profile.latency_ms.toFixed(1)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
        <details>
          <summary>Events ({turn.events.length})</summary>
          <ol className="events">
            {turn.events.map((event) => (
              <li key={event.id}>
                <code>{event.name}</code>
                <pre>{JSON.stringify(event.payload, null, 2)}</pre>
              </li>
            ))}
          </ol>
        </details>
        {turn.admin_actions.map((action, index) => (
          <p key={index} role="note" className="notice operator">
            <strong>{ACTIONS[action.action] ?? action.action}</strong>
            {action.reason ? `: “${action.reason}”` : ''}{' '}
            <span className="muted">{formatDateTime(action.at)}</span>
          </p>
        ))}
      </article>
    </li>
  );
}
