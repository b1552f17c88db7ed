import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { unwrap, type AdminClient, type SessionSummary } from '../api/client';
import { useOperator } from '../auth';
import { ConfirmDialog } from './ConfirmDialog';
import { ErrorNotice } from './ErrorNotice';

type Action = 'handoff' | 'resume' | 'end';

const COPY: Record<Action, { button: string; title: string; body: string; done: string; danger?: boolean }> =
  {
    handoff: {
      button: 'Hand to a person',
      title: 'Hand this conversation to a person?',
      body: 'The customer is told a person will continue; the agents stay silent until the session is resumed or ended.',
      done: 'Handed to a person.',
    },
    resume: {
      button: 'Resume to the agents',
      title: 'Give this conversation back to the agents?',
      body: "The customer's next message is answered by the agents again.",
      done: 'Resumed: the agents answer the next message.',
    },
    end: {
      button: 'End session',
      title: 'End this session?',
      body: 'The customer is told the session has ended; later messages are not answered. This cannot be undone.',
      done: 'Session ended.',
      danger: true,
    },
  };

/** What the actions need of a session (a session summary, or a handoff desk entry). */
type ActionTarget = Pick<SessionSummary, 'session_id' | 'tenant_id' | 'status'>;

function perform(client: AdminClient, action: Action, session: ActionTarget, reason: string) {
  const params = { path: { session_id: session.session_id }, query: { tenant_id: session.tenant_id } };
  const body = reason ? { reason } : {};
  switch (action) {
    case 'handoff':
      return unwrap(client.POST('/v1/admin/sessions/{session_id}/handoff', { params, body }));
    case 'resume':
      return unwrap(client.POST('/v1/admin/sessions/{session_id}/resume', { params }));
    case 'end':
      return unwrap(client.POST('/v1/admin/sessions/{session_id}/end', { params, body }));
  }
}

/** The actions that fit the session's status, each behind a confirmation. */
export function SessionActions({ session }: { session: ActionTarget }) {
  const { client } = useOperator();
  const queries = useQueryClient();
  const [asking, setAsking] = useState<Action | null>(null);
  const mutation = useMutation({
    mutationFn: ({ action, reason }: { action: Action; reason: string }) =>
      perform(client, action, session, reason),
    onSettled: () => queries.invalidateQueries(),
  });
  const available: Action[] =
    session.status === 'ended' ? [] : session.status === 'handoff' ? ['resume', 'end'] : ['handoff', 'end'];
  const copy = asking ? COPY[asking] : null;

  return (
    <div className="session-actions">
      {available.length === 0 && <p>This session has ended; nothing more can be done with it.</p>}
      {available.map((action) => (
        <button
          key={action}
          type="button"
          className={COPY[action].danger ? 'danger' : undefined}
          disabled={mutation.isPending}
          onClick={() => setAsking(action)}
        >
          {COPY[action].button}
        </button>
      ))}
      {mutation.isSuccess && (
        <p role="status" className="notice">
          {COPY[mutation.variables.action].done}
          {mutation.data.message ? ` The customer was told: “${mutation.data.message}”` : ''}
        </p>
      )}
      {mutation.error && <ErrorNotice error={mutation.error} action="do that" />}
      {asking && copy && (
        <ConfirmDialog
          title={copy.title}
          confirmLabel={copy.button}
          danger={copy.danger}
          withReason={asking !== 'resume'}
          onCancel={() => setAsking(null)}
          onConfirm={(reason) => {
            setAsking(null);
            mutation.mutate({ action: asking, reason });
          }}
        >
          <p>{copy.body}</p>
        </ConfirmDialog>
      )}
    </div>
  );
}
