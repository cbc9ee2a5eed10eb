import { api } from '../api.ts';
import { ArgumentsInWords, actionInWords, outcomeInWords } from '../audit-words.tsx';
import { type AuditFilter, consoleStore, useConsole } from '../store.ts';
import { Failure, Id, Link, localZone, MoreButton, Time, usePages } from '../ui.tsx';

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
        From <span className="muted">({localZone()})</span>
        <input
          type="datetime-local"
          name="from"
          value={filter.from}
          onChange={(e) => set({ from: e.target.value })}
        />
      </label>
      <label>
        Until <span className="muted">({localZone()})</span>
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
        as the change. Rows are never changed or deleted. Times in the list are UTC; the From and Until
        filters take your browser's time ({localZone()}).
      </p>
      <Filters />
      <Failure error={list.error} />
      <table data-testid="audit">
        <thead>
          <tr>
            <th>When (UTC)</th>
            <th>Who</th>
            <th>Did what</th>
            <th>To what</th>
            <th>Note and details</th>
            <th>How it ended</th>
          </tr>
        </thead>
        <tbody>
          {list.rows.map((e) => (
            <tr key={e.id} data-action={e.action} data-outcome={e.outcome}>
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
              <td className="what" title={e.action}>
                {actionInWords(e.action, e.arguments, e.outcome)}
              </td>
              <td>
                {e.target_ids.map((id) => (
                  <span key={id}>
                    <Target id={id} args={e.arguments} />{' '}
                  </span>
                ))}
              </td>
              <td className="details">
                <ArgumentsInWords action={e.action} args={e.arguments} />
              </td>
              <td title={e.outcome}>{outcomeInWords(e.outcome)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.rows.length === 0 && !list.isPending ? <p className="empty">No change matches.</p> : null}
      <MoreButton {...list} />
    </main>
  );
}
