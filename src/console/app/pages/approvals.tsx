import { api } from '../api.ts';
import { consoleStore, useConsole } from '../store.ts';
import { Failure, Id, Link, MoreButton, NoteAction, Time, useCan, useOperatorId, usePages } from '../ui.tsx';

/**
 * Proposals of money moves (four eyes): pending ones to decide, the operator's own, and decided
 * ones. Approving or rejecting is offered to approvers, never on their own proposals (the server
 * refuses that anyway).
 */

type Approval = Awaited<ReturnType<typeof api.admin.approvals.list.query>>['data'][number];

const ACTIONS: Record<string, string> = {
  'inflow.attribute': 'Attribute money to a payout',
  'inflow.return': 'Record money as returned',
  'payout.fail': 'Fail a held payout (any money received is refunded)',
  'refund.retry': 'Retry a failed refund',
  'refund.raise': 'Raise a held refund',
  'recon.resolve': 'Resolve a reconciliation difference by moving money',
  'payee.accept': "Accept a held payout's payee name (it then gets its instruction)",
};

/** A proposal's targets, payouts linked to their page. */
function Targets({ approval }: { approval: Approval }) {
  const payout = typeof approval.args['payout_id'] === 'string' ? approval.args['payout_id'] : null;
  return (
    <>
      {payout ? (
        <Link to={`/console/payouts/${payout}`}>
          payout <Id id={payout} />
        </Link>
      ) : null}
      {approval.target_ids
        .filter((id) => id !== payout)
        .map((id) => (
          <span key={id}>
            {' '}
            <Id id={id} />
          </span>
        ))}
    </>
  );
}

/** Approve and reject, for an approver on someone else's pending proposal. */
export function Decide({ approval }: { approval: Approval }) {
  const canDecide = useCan('approver');
  const me = useOperatorId();
  if (approval.state !== 'PENDING') return null;
  if (approval.proposer_id === me)
    return <span className="muted">your proposal: another approver decides</span>;
  if (!canDecide) return null;
  return (
    <span className="decide">
      <NoteAction
        actionKey={`approve:${approval.id}`}
        label="Approve"
        done="Approved"
        testId="approve"
        placeholder="Note (optional)"
        optional
        run={(note) =>
          api.admin.approvals.approve.mutate({ approval_id: approval.id, ...(note ? { note } : {}) })
        }
      />{' '}
      <NoteAction
        actionKey={`reject:${approval.id}`}
        label="Reject"
        done="Rejected"
        testId="reject"
        placeholder="Note (required): why not"
        run={(note) => api.admin.approvals.reject.mutate({ approval_id: approval.id, note })}
      />
    </span>
  );
}

export function ApprovalRows({ rows, overdue }: { rows: Approval[]; overdue?: (a: Approval) => boolean }) {
  return (
    <>
      {rows.map((a) => (
        <tr key={a.id} data-approval={a.id} data-state={a.state} className={overdue?.(a) ? 'overdue' : ''}>
          <td>
            <Time at={a.created_at} />
            {overdue?.(a) ? (
              <span className="overdue-mark" data-testid="overdue">
                overdue
              </span>
            ) : null}
          </td>
          <td>{ACTIONS[a.action] ?? a.action}</td>
          <td>
            <Targets approval={a} />
          </td>
          <td>
            <span className="operator">{a.proposer_name ?? a.proposer_id}</span>
            <div className="muted">“{a.note}”</div>
          </td>
          <td>
            <span className={`status a-${a.state}`}>{a.state}</span>
            {a.decided_by_name ? (
              <div>
                by <span className="operator">{a.decided_by_name}</span>
                {a.decision_note ? <span className="muted"> “{a.decision_note}”</span> : null}
              </div>
            ) : null}
            {a.failure_reason ? (
              <div className="error failure-reason" title={a.failure_code ?? undefined}>
                Did not run: {a.failure_reason.replaceAll('_', ' ')}
              </div>
            ) : null}
          </td>
          <td className="actions">
            <Decide approval={a} />
          </td>
        </tr>
      ))}
    </>
  );
}

export const APPROVALS_HEAD = (
  <tr>
    <th>Proposed</th>
    <th>Action</th>
    <th>On</th>
    <th>Proposed by</th>
    <th>State</th>
    <th>Actions</th>
  </tr>
);

const TABS = [
  { tab: 'pending', title: 'Pending' },
  { tab: 'mine', title: 'Mine' },
  { tab: 'decided', title: 'Decided' },
] as const;

export function ApprovalsPage() {
  const tab = useConsole((c) => c.approvalsTab);
  const me = useOperatorId();
  // Each tab is a filter of the server's list: its pages are full and its cursors its own.
  const filter =
    tab === 'pending'
      ? { state: 'PENDING' as const }
      : tab === 'decided'
        ? { decided: true }
        : { proposer_id: me ?? undefined };
  const list = usePages(['admin.approvals.list', tab, me], (cursor) =>
    api.admin.approvals.list.query({ ...filter, limit: 50, cursor }),
  );
  const rows = list.rows;
  return (
    <main className="page approvals">
      <h1>Approvals</h1>
      <p className="lead">
        Every money move is proposed by one operator and carried out only when a different approver approves
        it. The move runs at the approval, with the checks it always has: if the world changed since, it fails
        and says why.
      </p>
      <div className="tabs" role="tablist">
        {TABS.map((t) => (
          <button
            key={t.tab}
            type="button"
            aria-pressed={tab === t.tab}
            onClick={() => consoleStore.trigger.approvalsTabChosen({ tab: t.tab })}
          >
            {t.title}
          </button>
        ))}
      </div>
      <Failure error={list.error} />
      <table data-testid="approvals">
        <thead>{APPROVALS_HEAD}</thead>
        <tbody>
          <ApprovalRows rows={rows} />
        </tbody>
      </table>
      {rows.length === 0 && !list.isPending ? <p className="empty">Nothing here.</p> : null}
      <MoreButton {...list} />
    </main>
  );
}
