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
  'overpayment.return': 'Return a set-aside overpayment',
  'recon.resolve': 'Resolve a reconciliation difference by moving money',
  'payee.accept': "Accept a held payout's payee name (it then gets its instruction)",
  'approval_rule.set': 'Make or change an approval rule',
  'operator.role': "Raise an operator's role",
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A proposal's targets, payouts linked to their page, each id short and whole on hover (never
 * broken mid-id). A rule change says which rule; a role raise, to which role.
 */
function Targets({ approval }: { approval: Approval }) {
  const args = approval.args;
  if (approval.action === 'approval_rule.set') {
    const above =
      typeof args['above'] === 'string' ? ` above ${args['above']} ${String(args['currency'])}` : '';
    return (
      <span data-testid="rule-target">
        rule: {String(args['action'])}
        {above} needs {String(args['approvers'])}
      </span>
    );
  }
  const payout = typeof args['payout_id'] === 'string' ? args['payout_id'] : null;
  return (
    <>
      {payout ? (
        <Link to={`/console/payouts/${payout}`} className="nowrap">
          payout <Id id={payout} />
        </Link>
      ) : null}
      {approval.target_ids
        .filter((id) => id !== payout)
        .map((id) => (
          <span key={id} className="nowrap">
            {' '}
            {UUID.test(id) ? <Id id={id} /> : <code>{id}</code>}
          </span>
        ))}
      {approval.action === 'operator.role' ? <span> to {String(args['role'])}</span> : null}
    </>
  );
}

/** "1 of 2 approvals" for a proposal that needs more than one approver. */
export function Progress({ approval }: { approval: Approval }) {
  if (approval.required_approvers < 2) return null;
  return (
    <div className="progress" data-testid="approvals-progress">
      {approval.approved_by_ids.length} of {approval.required_approvers} approvals
      <span className="muted"> ({approval.approver_roles.join(' or ')})</span>
    </div>
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
  if (me && approval.approved_by_ids.includes(me))
    return <span className="muted">you approved it: another approver decides next</span>;
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

/**
 * The proposals of one kind still waiting, on the page that makes them (role raises on Operators,
 * rule changes on Approval rules).
 */
export function PendingProposals(props: {
  queue: string;
  title: string;
  pending: { rows: Approval[]; error: unknown; isPending: boolean };
}) {
  const { pending } = props;
  return (
    <section className="queue" data-queue={props.queue}>
      <h2>{props.title}</h2>
      <Failure error={pending.error} />
      {pending.rows.length === 0 && !pending.isPending ? (
        <p className="empty">None.</p>
      ) : (
        <table>
          <thead>{APPROVALS_HEAD}</thead>
          <tbody>
            <ApprovalRows rows={pending.rows} />
          </tbody>
        </table>
      )}
    </section>
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
            {a.state === 'PENDING' ? <Progress approval={a} /> : null}
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
