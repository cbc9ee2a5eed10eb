import { api } from '../api.ts';
import { type AuditFilter, consoleStore, useConsole } from '../store.ts';
import { Failure, Id, Link, MoreButton, Time, usePages } from '../ui.tsx';

/** The audit trail: every change an operator made, newest first, filtered by operator, target and time. */

/** A datetime-local value (the operator's local time) as the ISO time the API wants; empty stays unset. */
const isoOf = (local: string): string | undefined => (local ? new Date(local).toISOString() : undefined);

/** The filter as the API takes it: blank fields left out. */
function query(filter: AuditFilter) {
  return {
    operator_id: filter.operator_id.trim() || undefined,
    target_id: filter.target_id.trim() || undefined,
    since: isoOf(filter.from),
    until: isoOf(filter.to),
  };
}

function Filters() {
  const filter = useConsole((c) => c.auditFilter);
  const set = (change: Partial<AuditFilter>) => consoleStore.trigger.auditFiltered({ filter: change });
  return (
    <div className="filters" data-testid="audit-filters">
      <label>
        Operator id
        <input
          name="operator_id"
          value={filter.operator_id}
          onChange={(e) => set({ operator_id: e.target.value })}
        />
      </label>
      <label>
        Target id (payout, inflow, refund, tenant, key…)
        <input
          name="target_id"
          value={filter.target_id}
          onChange={(e) => set({ target_id: e.target.value })}
        />
      </label>
      <label>
        From
        <input
          type="datetime-local"
          name="from"
          value={filter.from}
          onChange={(e) => set({ from: e.target.value })}
        />
      </label>
      <label>
        Until
        <input
          type="datetime-local"
          name="to"
          value={filter.to}
          onChange={(e) => set({ to: e.target.value })}
        />
      </label>
      <button
        type="button"
        className="link"
        onClick={() => set({ operator_id: '', target_id: '', from: '', to: '' })}
      >
        Clear
      </button>
    </div>
  );
}

/** A target id: the payout a call named links to its page. */
function Target({ id, args }: { id: string; args: Record<string, unknown> }) {
  if (args['payout_id'] === id) {
    return (
      <Link to={`/console/payouts/${id}`}>
        <Id id={id} />
      </Link>
    );
  }
  return <Id id={id} />;
}

export function AuditPage() {
  const filter = useConsole((c) => c.auditFilter);
  const q = query(filter);
  const list = usePages(['admin.audit.list', q], (cursor) =>
    api.admin.audit.list.query({ ...q, limit: 50, cursor }),
  );
  return (
    <main className="page audit">
      <h1>Audit trail</h1>
      <p className="lead">
        One row per change made through the admin API (the console, the CLI), written in the same transaction
        as the change. Rows are never changed or deleted.
      </p>
      <Filters />
      <Failure error={list.error} />
      <table data-testid="audit">
        <thead>
          <tr>
            <th>When</th>
            <th>Operator</th>
            <th>Action</th>
            <th>Targets</th>
            <th>Arguments</th>
            <th>Outcome</th>
          </tr>
        </thead>
        <tbody>
          {list.rows.map((e) => (
            <tr key={e.id} data-action={e.action}>
              <td>
                <Time at={e.created_at} />
              </td>
              <td>
                <button
                  type="button"
                  className="link"
                  title="Show only this operator's actions"
                  onClick={() =>
                    consoleStore.trigger.auditFiltered({ filter: { operator_id: e.operator_id } })
                  }
                >
                  {e.operator_name}
                </button>{' '}
                <span className="muted">{e.operator_role}</span>
              </td>
              <td>
                <code>{e.action.replace(/^admin\./, '')}</code>
              </td>
              <td>
                {e.target_ids.map((id) => (
                  <span key={id}>
                    <Target id={id} args={e.arguments} />{' '}
                  </span>
                ))}
              </td>
              <td className="detail">{JSON.stringify(e.arguments)}</td>
              <td>{e.outcome}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.rows.length === 0 && !list.isPending ? <p className="empty">No change matches.</p> : null}
      <MoreButton {...list} />
    </main>
  );
}
