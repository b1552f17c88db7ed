import { useQueryClient } from '@tanstack/react-query';
import { lazy, Suspense, useCallback, useEffect, useMemo, useState, type MouseEvent } from 'react';
import { ApiError, createAdminClient, unwrap, type AdminKey } from './api/client';
import { keyStorage, OperatorProvider, useOperator, type Operator } from './auth';
import { useRoute } from './hooks';
import { routeHref, type Route } from './routes';
import { Sessions } from './views/Sessions';
import { HandoffDesk } from './views/HandoffDesk';
import { SignIn } from './views/SignIn';
import { Timeline } from './views/Timeline';

type SignedIn = { key: string; me: AdminKey };

// The charts (ECharts) load with the statistics view only.
const Stats = lazy(() => import('./views/Stats').then((module) => ({ default: module.Stats })));

const KEY_REFUSED = 'The server no longer accepts this key: sign in again.';

/** Sign-in gate, header and the current view. */
export function App() {
  const queries = useQueryClient();
  const [signedIn, setSignedIn] = useState<SignedIn | null>(null);
  const [checkingStoredKey, setCheckingStoredKey] = useState(() => keyStorage.read() !== null);
  const [notice, setNotice] = useState<string | null>(null);

  const signOut = useCallback(
    (reason: string | null = null) => {
      keyStorage.clear();
      queries.clear();
      setSignedIn(null);
      setNotice(reason);
    },
    [queries],
  );

  // A key kept from earlier in this tab is checked again before any view uses it.
  useEffect(() => {
    const stored = keyStorage.read();
    if (stored === null) return;
    unwrap(createAdminClient(stored, () => undefined).GET('/v1/admin/me')).then(
      (me) => {
        setSignedIn({ key: stored, me });
        setCheckingStoredKey(false);
      },
      (error: unknown) => {
        setCheckingStoredKey(false);
        if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
          signOut(KEY_REFUSED);
        } else {
          keyStorage.clear();
          setNotice(
            `Could not check the saved key: ${error instanceof Error ? error.message : String(error)}`,
          );
        }
      },
    );
  }, [signOut]);

  const operator = useMemo<Operator | null>(
    () =>
      signedIn && {
        client: createAdminClient(signedIn.key, () => signOut(KEY_REFUSED)),
        key: signedIn.me,
        signOut: () => signOut(),
      },
    [signedIn, signOut],
  );

  if (checkingStoredKey) return <p role="status">Checking your key…</p>;
  if (!operator) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={(key, me) => {
          keyStorage.write(key);
          setNotice(null);
          setSignedIn({ key, me });
        }}
      />
    );
  }
  return (
    <OperatorProvider value={operator}>
      <Shell />
    </OperatorProvider>
  );
}

function Shell() {
  const route = useRoute();
  return (
    <>
      <Header route={route} />
      <main id="main">
        <View route={route} />
      </main>
    </>
  );
}

function View({ route }: { route: Route }) {
  switch (route.view) {
    case 'sessions':
      return <Sessions key={JSON.stringify(route.filters)} filters={route.filters} />;
    case 'timeline':
      return <Timeline tenant={route.tenant} session={route.session} />;
    case 'handoffs':
      return <HandoffDesk key={route.tenant ?? ''} tenant={route.tenant} />;
    case 'stats':
      return (
        <Suspense fallback={<p role="status">Loading the charts…</p>}>
          <Stats key={JSON.stringify(route.filters)} filters={route.filters} />
        </Suspense>
      );
  }
}

function Header({ route }: { route: Route }) {
  return (
    <header className="top">
      <a className="skip" href="#main" onClick={skipToMain}>
        Skip to content
      </a>
      <span className="brand">Agent Runtime console</span>
      <nav aria-label="Console views">
        <a
          href={routeHref({ view: 'sessions', filters: {} })}
          aria-current={route.view === 'sessions' || route.view === 'timeline' ? 'page' : undefined}
        >
          Sessions
        </a>
        <a
          href={routeHref({ view: 'handoffs' })}
          aria-current={route.view === 'handoffs' ? 'page' : undefined}
        >
          Handoff desk
        </a>
        <a
          href={routeHref({ view: 'stats', filters: {} })}
          aria-current={route.view === 'stats' ? 'page' : undefined}
        >
          Stickiness and cost
        </a>
      </nav>
      <Identity />
    </header>
  );
}

/** The skip link must not change the fragment: the fragment is the console's route. */
function skipToMain(event: MouseEvent) {
  event.preventDefault();
  const main = document.getElementById('main');
  main?.setAttribute('tabindex', '-1');
  main?.focus();
}

function Identity() {
  const { key, signOut } = useOperator();
  const scope = key.tenants === null ? 'all tenants' : `tenant ${key.tenants.join(', ')}`;
  return (
    <div className="identity">
      {!key.authentication && (
        <span role="status" className="badge badge-warning">
          authentication is off on this server
        </span>
      )}
      <span>
        Signed in: {scope}
        {key.authentication ? ` (as ${key.operator})` : ''}
      </span>
      <button type="button" onClick={signOut}>
        Sign out
      </button>
    </div>
  );
}
