import { useEffect, useState, type FormEvent } from 'react';
import { ApiError, authenticationRequired, createAdminClient, unwrap, type AdminKey } from '../api/client';

interface Props {
  onSignedIn: (key: string, me: AdminKey) => void;
  /** Why the operator is back here (e.g. the key stopped working). */
  notice: string | null;
}

function refusal(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 401) return 'This key was refused. Check the key against ADMIN_API_KEYS.';
    if (error.status === 403) return 'This key may not use the admin API (is it a channel key?).';
    if (error.status === 429) return 'Too many attempts: wait a minute and try again.';
    return `The server answered ${error.status}: ${error.message}`;
  }
  return `The server could not be reached: ${error instanceof Error ? error.message : String(error)}`;
}

/** Sign-in with an admin key: the key is checked against GET /v1/admin/me before it is kept. */
export function SignIn({ onSignedIn, notice }: Props) {
  const [key, setKey] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const [checking, setChecking] = useState(false);
  const [authenticationOff, setAuthenticationOff] = useState(false);
  useEffect(() => {
    let current = true;
    void authenticationRequired().then((required) => {
      if (current) setAuthenticationOff(required === false);
    });
    return () => {
      current = false;
    };
  }, []);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const candidate = key.trim();
    if (!candidate) {
      setProblem('Enter an admin API key.');
      return;
    }
    setChecking(true);
    setProblem(null);
    try {
      const me = await unwrap(createAdminClient(candidate, () => undefined).GET('/v1/admin/me'));
      onSignedIn(candidate, me);
    } catch (error) {
      setProblem(refusal(error));
      setChecking(false);
    }
  };

  return (
    <main className="sign-in">
      <h1>Agent Runtime console</h1>
      <p>Sign in with an admin API key. It is kept in this browser tab only and sent to this server alone.</p>
      {authenticationOff && (
        <p role="status" className="notice notice-warning">
          Authentication is off on this server: no ADMIN_API_KEYS or CHANNEL_API_KEYS are set, so any key
          signs in and whoever reaches the server may act for every tenant. Set ADMIN_API_KEYS before exposing
          it.
        </p>
      )}
      {notice && (
        <p role="status" className="notice">
          {notice}
        </p>
      )}
      <form onSubmit={(event) => void submit(event)} noValidate>
        <label htmlFor="admin-key">Admin API key</label>
        <input
          id="admin-key"
          name="admin-key"
          type="password"
          autoComplete="off"
          spellCheck={false}
          value={key}
          onChange={(event) => setKey(event.target.value)}
          aria-describedby={problem ? 'sign-in-problem' : undefined}
          aria-invalid={problem ? true : undefined}
        />
        <button type="submit" disabled={checking}>
          {checking ? 'Checking…' : 'Sign in'}
        </button>
        {problem && (
          <p id="sign-in-problem" role="alert" className="notice notice-error">
            {problem}
          </p>
        )}
      </form>
    </main>
  );
}
