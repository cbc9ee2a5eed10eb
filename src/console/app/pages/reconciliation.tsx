import { useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api } from '../api.ts';
import {
  Failure,
  Id,
  Link,
  Money,
  MoreButton,
  NoteAction,
  Outcome,
  Time,
  useAction,
  useCan,
  usePages,
} from '../ui.tsx';
import { Decide } from './approvals.tsx';

/**
 * Reconciliation: each day, the service's books are compared with what each rail says happened
 * (the bank's statement, the chains, the processor's settlement report). This page lists the
 * runs with what matched, the differences still open, and resolves them: explained with a note by
 * one operator, or, when money has to move, proposed and approved by a second operator.
 */

type Break = Awaited<ReturnType<typeof api.admin.recon.breaks.query>>['data'][number];
type Run = Awaited<ReturnType<typeof api.admin.recon.runs.query>>['data'][number];

const RAILS = { BANK_TRANSFER: 'Bank', CRYPTO: 'Chains', PROCESSOR: 'Payout processor' } as const;

const KINDS: Record<Break['kind'], string> = {
  MISSING_IN_LEDGER: 'On the rail, not in our books',
  MISSING_ON_RAIL: 'In our books, not on the rail',
  AMOUNT_DIFFERS: 'Amounts differ',
  STATE_DIFFERS: 'Outcomes differ',
};

const RESOLUTIONS: Record<string, string> = {
  EXPLAINED: 'Explained, nothing moved',
  BOOKED_RAIL: 'Books follow the rail',
  REFUNDED_RETURN: 'Returned money refunded to the merchant',
};

function RunDay() {
  const canRun = useCan('operator');
  const [date, setDate] = useState(new Date().toISOString().slice(0, 10));
  const [rail, setRail] = useState<'' | keyof typeof RAILS>('');
  const action = useAction('recon:run', 'Reconcile', (input: { date: string; rail?: keyof typeof RAILS }) =>
    api.admin.recon.run.mutate(input),
  );
  if (!canRun) return null;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    action.mutate({ date, ...(rail ? { rail } : {}) });
  };
  return (
    <form className="filters" onSubmit={submit} data-testid="recon-run">
      <label>
        Day (UTC)
        <input name="date" type="date" value={date} onChange={(e) => setDate(e.target.value)} required />
      </label>
      <label>
        Rail
        <select name="rail" value={rail} onChange={(e) => setRail(e.target.value as typeof rail)}>
          <option value="">All three</option>
          {Object.entries(RAILS).map(([code, title]) => (
            <option key={code} value={code}>
              {title}
            </option>
          ))}
        </select>
      </label>
      <button type="submit" className="action primary" disabled={action.isPending}>
        Reconcile this day
      </button>
      <Outcome pending={action.pending} done="Reconciled" />
    </form>
  );
}

function RunRows({ runs }: { runs: Run[] }) {
  return (
    <>
      {runs.map((r) => (
        <tr key={r.id} data-run={r.id}>
          <td>{r.day}</td>
          <td>{RAILS[r.rail]}</td>
          <td>
            <span className={`status r-${r.state}`}>{r.state}</span>
            {r.rail_complete ? null : <div className="muted">day not over at the rail yet</div>}
            {r.error ? <div className="error">{r.error}</div> : null}
          </td>
          <td>
            {r.accounts.length === 0 ? <span className="muted">nothing that day</span> : null}
            {r.accounts.map((a) => (
              <div key={`${a.account}:${a.currency}`} className="recon-account">
                <code>{a.account}</code>: {a.matched_count} matched (
                <Money amount={a.matched_amount} currency={a.currency} />
                ); our books {a.ledger_count} (<Money amount={a.ledger_amount} currency={a.currency} />
                ), the rail {a.rail_count} (<Money amount={a.rail_amount} currency={a.currency} />)
                {a.breaks > 0 ? <strong> · {a.breaks} difference(s)</strong> : null}
                {a.rail_balance !== null ? (
                  <div className={a.rail_balance === a.ledger_balance ? 'muted' : 'error'}>
                    ever received, by the rail: <Money amount={a.rail_balance} currency={a.currency} />; by
                    our books: <Money amount={a.ledger_balance} currency={a.currency} />
                  </div>
                ) : null}
              </div>
            ))}
          </td>
          <td>
            <Time at={r.finished_at} />
            <div className="muted">run {r.attempts} time(s)</div>
          </td>
        </tr>
      ))}
    </>
  );
}

/** The proposals made about one break (a resolution that moves money), with approve and reject for an approver. */
function Proposals({ breakId }: { breakId: string }) {
  const list = useQuery({
    queryKey: ['admin.approvals.list', 'target', breakId],
    queryFn: () => api.admin.approvals.list.query({ target_id: breakId, limit: 10 }),
  });
  const rows = list.data?.data ?? [];
  if (rows.length === 0) return null;
  return (
    <ul className="proposals" data-testid="break-proposals">
      {rows.map((a) => (
        <li key={a.id} data-approval={a.id} data-state={a.state}>
          Proposal by <span className="operator">{a.proposer_name ?? a.proposer_id}</span> (
          {RESOLUTIONS[String(a.args['resolution'])] ?? String(a.args['resolution'])}): “{a.note}” —{' '}
          <span className={`status a-${a.state}`}>{a.state}</span>
          {a.decided_by_name ? (
            <>
              {' '}
              by <span className="operator">{a.decided_by_name}</span>
            </>
          ) : null}
          {a.failure_reason ? <div className="error">{a.failure_reason}</div> : null} <Decide approval={a} />
        </li>
      ))}
    </ul>
  );
}

function BreakRows({ rows, open }: { rows: Break[]; open: boolean }) {
  const canAct = useCan('operator');
  return (
    <>
      {rows.map((b) => (
        <tr
          key={b.id}
          data-break={b.id}
          data-kind={b.kind}
          data-status={b.status}
          data-reference={b.reference}
        >
          <td>
            {b.day}
            <div className="muted">{RAILS[b.rail]}</div>
          </td>
          <td>
            <strong>{KINDS[b.kind]}</strong>
            <div>{b.summary}</div>
            <div className="muted">
              our books: <Money amount={b.ledger_amount} currency={b.ledger_amount ? b.currency : null} />{' '}
              {b.ledger_state ?? ''} · the rail:{' '}
              <Money amount={b.rail_amount} currency={b.rail_amount ? b.currency : null} />{' '}
              {b.rail_state ?? ''}
            </div>
          </td>
          <td>
            {b.payout_id ? (
              <Link to={`/console/payouts/${b.payout_id}`}>
                payout <Id id={b.payout_id} />
              </Link>
            ) : (
              <span className="muted">no payout</span>
            )}
            <div className="muted">
              reference{' '}
              <code title={b.reference}>
                {b.reference.length > 14 ? `…${b.reference.slice(-12)}` : b.reference}
              </code>
            </div>
          </td>
          <td>
            {open ? (
              <Proposals breakId={b.id} />
            ) : (
              <>
                {RESOLUTIONS[b.resolution ?? ''] ?? b.resolution} by{' '}
                <span className="operator">{b.resolved_by_name ?? b.resolved_by}</span>
                <div className="muted">“{b.resolution_note}”</div>
                <Proposals breakId={b.id} />
              </>
            )}
          </td>
          <td className="actions">
            {open && canAct ? (
              <>
                <NoteAction
                  actionKey={`recon-explain:${b.id}`}
                  label="Explained: resolve"
                  done="Resolved"
                  testId="resolve-break"
                  placeholder="Note (required): why nothing has to move"
                  run={(note) => api.admin.recon.resolve.mutate({ break_id: b.id, note })}
                />{' '}
                {b.rail_state === 'RETURNED' && b.payout_id ? (
                  <NoteAction
                    actionKey={`recon-refund:${b.id}`}
                    label="Propose refund to the merchant"
                    done="Proposed"
                    testId="propose-refund"
                    run={(note) =>
                      api.admin.recon.propose.mutate({ break_id: b.id, resolution: 'REFUNDED_RETURN', note })
                    }
                  />
                ) : (
                  <NoteAction
                    actionKey={`recon-book:${b.id}`}
                    label="Propose: books follow the rail"
                    done="Proposed"
                    testId="propose-book"
                    run={(note) =>
                      api.admin.recon.propose.mutate({ break_id: b.id, resolution: 'BOOKED_RAIL', note })
                    }
                  />
                )}
              </>
            ) : null}
          </td>
        </tr>
      ))}
    </>
  );
}

const BREAKS_HEAD = (
  <tr>
    <th>Day</th>
    <th>Difference</th>
    <th>Concerns</th>
    <th>Resolution</th>
    <th>Actions</th>
  </tr>
);

export function ReconciliationPage() {
  const runs = usePages(['admin.recon.runs'], (cursor) => api.admin.recon.runs.query({ limit: 20, cursor }));
  const open = usePages(['admin.recon.breaks', 'open'], (cursor) =>
    api.admin.recon.breaks.query({ open: true, limit: 50, cursor }),
  );
  const resolved = usePages(['admin.recon.breaks', 'resolved'], (cursor) =>
    api.admin.recon.breaks.query({ open: false, limit: 20, cursor }),
  );
  return (
    <main className="page reconciliation">
      <h1>Reconciliation</h1>
      <p className="lead">
        Every day the service compares its books with what each rail says happened: the bank's statement, the
        chains, and the payout processor's settlement report. A difference waits here until someone explains
        it. When money has to move to fix it (a payout the processor returned after paying it goes back to the
        merchant), one operator proposes and a second one approves.
      </p>
      <RunDay />
      <section data-queue="open-breaks">
        <h2>Differences to resolve</h2>
        <Failure error={open.error} />
        <table data-testid="open-breaks">
          <thead>{BREAKS_HEAD}</thead>
          <tbody>
            <BreakRows rows={open.rows} open />
          </tbody>
        </table>
        {open.rows.length === 0 && !open.isPending ? <p className="empty">No open difference.</p> : null}
        <MoreButton {...open} />
      </section>
      <section data-queue="runs">
        <h2>Runs</h2>
        <Failure error={runs.error} />
        <table data-testid="recon-runs">
          <thead>
            <tr>
              <th>Day</th>
              <th>Rail</th>
              <th>State</th>
              <th>What matched, by rail account</th>
              <th>Finished</th>
            </tr>
          </thead>
          <tbody>
            <RunRows runs={runs.rows} />
          </tbody>
        </table>
        {runs.rows.length === 0 && !runs.isPending ? <p className="empty">No run yet.</p> : null}
        <MoreButton {...runs} />
      </section>
      <section data-queue="resolved-breaks">
        <h2>Resolved</h2>
        <Failure error={resolved.error} />
        <table data-testid="resolved-breaks">
          <thead>{BREAKS_HEAD}</thead>
          <tbody>
            <BreakRows rows={resolved.rows} open={false} />
          </tbody>
        </table>
        <MoreButton {...resolved} />
      </section>
    </main>
  );
}
