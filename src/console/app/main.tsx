import { QueryClientProvider, useQuery } from '@tanstack/react-query';
import { type FormEvent, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { api, clientWithToken, failureOf, queryClient } from './api.ts';
import { ApprovalsPage } from './pages/approvals.tsx';
import { AuditPage } from './pages/audit.tsx';
import { ExceptionsPage } from './pages/exceptions.tsx';
import { MachinesPage } from './pages/machines.tsx';
import { MoneyPage } from './pages/money.tsx';
import { OperatorsPage } from './pages/operators.tsx';
import { PayoutPage } from './pages/payout.tsx';
import { ReconciliationPage } from './pages/reconciliation.tsx';
import { RulesPage } from './pages/rules.tsx';
import { TenantsPage } from './pages/tenants.tsx';
import { consoleStore, navigate, useConsole } from './store.ts';
import { Failure, Link } from './ui.tsx';

/** The console's pages: path under /console, title in the navigation. */
const PAGES = [
  { path: '/console/exceptions', title: 'Exceptions' },
  { path: '/console/approvals', title: 'Approvals' },
  { path: '/console/money', title: 'Money' },
  { path: '/console/reconciliation', title: 'Reconciliation' },
  { path: '/console/audit', title: 'Audit' },
  { path: '/console/tenants', title: 'Tenants and keys' },
  { path: '/console/operators', title: 'Operators' },
  { path: '/console/rules', title: 'Approval rules' },
  { path: '/console/machines', title: 'Machines' },
] as const;

function SignIn() {
  const because = useConsole((c) => c.signedOutBecause);
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const operator = await clientWithToken(token.trim()).admin.me.query();
      queryClient.clear();
      consoleStore.trigger.signedIn({ token: token.trim(), operator });
      setToken('');
    } catch (err) {
      const f = failureOf(err);
      setError(f.status === 401 ? 'This token is not valid (unknown or revoked).' : f.message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="sign-in">
      <h1>Operations console</h1>
      <p>
        Sign in with your operator token (or the bootstrap admin token that <code>npm start</code> printed).
      </p>
      {because ? <p className="notice">{because}</p> : null}
      <form onSubmit={submit}>
        <label>
          Operator token
          <input
            name="token"
            type="password"
            autoComplete="off"
            value={token}
            onChange={(e) => setToken(e.target.value)}
            required
          />
        </label>
        <button type="submit" className="primary" disabled={busy}>
          Sign in
        </button>
      </form>
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
    </main>
  );
}

/** After a reload the token is back from sessionStorage: find out again who it is. */
function Identify() {
  const me = useQuery({ queryKey: ['admin.me'], queryFn: () => api.admin.me.query() });
  useEffect(() => {
    if (me.data) consoleStore.trigger.identified({ operator: me.data });
  }, [me.data]);
  return <main className="loading">{me.error ? <Failure error={me.error} /> : 'Signing in…'}</main>;
}

function Page({ path }: { path: string }) {
  const payout = /^\/console\/payouts\/([\w-]+)$/.exec(path)?.[1];
  if (payout) return <PayoutPage payoutId={payout} />;
  if (path === '/console/tenants') return <TenantsPage />;
  if (path === '/console/operators') return <OperatorsPage />;
  if (path === '/console/rules') return <RulesPage />;
  if (path === '/console/audit') return <AuditPage />;
  if (path === '/console/approvals') return <ApprovalsPage />;
  if (path === '/console/reconciliation') return <ReconciliationPage />;
  if (path === '/console/money') return <MoneyPage />;
  if (path === '/console/machines') return <MachinesPage />;
  return <ExceptionsPage />;
}

function Shell() {
  const operator = useConsole((c) => c.operator);
  const path = useConsole((c) => c.path);
  if (!operator) return <Identify />;
  return (
    <>
      <header className="bar">
        <strong>Payout operations</strong>
        <nav>
          {PAGES.map((p) => (
            <Link key={p.path} to={p.path} className={path.startsWith(p.path) ? 'current' : undefined}>
              {p.title}
            </Link>
          ))}
        </nav>
        <span className="who" data-testid="operator">
          {operator.name} <span className="role">{operator.role}</span>
        </span>
        <button
          type="button"
          className="link"
          onClick={() => {
            consoleStore.trigger.signedOut({ because: null });
            queryClient.clear();
          }}
        >
          Sign out
        </button>
      </header>
      <Page path={path} />
    </>
  );
}

function App() {
  const token = useConsole((c) => c.token);
  useEffect(() => {
    const onPop = () => consoleStore.trigger.navigated({ path: globalThis.location.pathname });
    globalThis.addEventListener('popstate', onPop);
    return () => globalThis.removeEventListener('popstate', onPop);
  }, []);
  useEffect(() => {
    if (
      token &&
      (globalThis.location.pathname === '/console' || globalThis.location.pathname === '/console/')
    )
      navigate('/console/exceptions');
  }, [token]);
  return <QueryClientProvider client={queryClient}>{token ? <Shell /> : <SignIn />}</QueryClientProvider>;
}

createRoot(document.getElementById('console')!).render(<App />);
