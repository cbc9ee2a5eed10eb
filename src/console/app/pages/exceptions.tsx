import { useQuery } from '@tanstack/react-query';
import { createContext, type ReactNode, useContext } from 'react';
import { api } from '../api.ts';
import {
  age,
  ClickAction,
  Failure,
  Id,
  Link,
  Money,
  MoreButton,
  NoteAction,
  Time,
  useCan,
  usePages,
} from '../ui.tsx';
import { APPROVALS_HEAD, ApprovalRows } from './approvals.tsx';

/**
 * Where money waits for a person: one section per queue, oldest first, each row linked to its
 * detail and offering what the operator's role allows.
 */

type Summary = Awaited<ReturnType<typeof api.admin.exceptions.query>>;
type QueueCode = Summary['queues'][number]['code'];

/** `admin.exceptions`: every queue's count and the age of its oldest, read from the queues' own indexes. */
const SummaryContext = createContext<Summary | undefined>(undefined);

/** "3 d 4 h" from whole seconds. */
function ageOf(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return '—';
  return age(new Date(Date.now() - seconds * 1000).toISOString());
}

function Queue(props: {
  id: string;
  code: QueueCode;
  list: ReturnType<typeof usePages<unknown>>;
  head: ReactNode;
  children: ReactNode;
}) {
  const { list } = props;
  const summary = useContext(SummaryContext)?.queues.find((q) => q.code === props.code);
  return (
    <section className="queue" data-queue={props.id} aria-labelledby={`q-${props.id}`}>
      <h2 id={`q-${props.id}`}>
        {summary?.title ?? props.code}{' '}
        <span className="count" data-testid={`count-${props.id}`}>
          {summary ? summary.count.toLocaleString('en-US') : '…'}
        </span>
        {summary && summary.count > 0 ? (
          <span className="age">oldest waiting {ageOf(summary.oldest_age_seconds)}</span>
        ) : null}
      </h2>
      <p className="what">{summary?.description}</p>
      <Failure error={list.error} />
      {list.rows.length === 0 && !list.isPending ? (
        <p className="empty">Nothing waits here.</p>
      ) : (
        <table>
          <thead>{props.head}</thead>
          <tbody>{props.children}</tbody>
        </table>
      )}
      <MoreButton {...list} />
    </section>
  );
}

function HeldPayouts() {
  const canPropose = useCan('operator');
  // One row per payout, however many short payments it received (the server's queue).
  const list = usePages(['admin.payouts.heldUnderpaid'], (cursor) =>
    api.admin.payouts.heldUnderpaid.query({ limit: 20, cursor }),
  );
  return (
    <Queue
      id="held"
      code="PAYOUTS_HELD_UNDERPAID"
      list={list}
      head={
        <tr>
          <th>Payout</th>
          <th>Received</th>
          <th>Asked</th>
          <th>Held since</th>
          <th>Waiting</th>
          <th>Actions</th>
        </tr>
      }
    >
      {list.rows.map((held) => (
        <tr key={held.payout_id} data-payout={held.payout_id}>
          <td>
            <Link to={`/console/payouts/${held.payout_id}`}>
              <Id id={held.payout_id} />
            </Link>
          </td>
          <td>
            <Money amount={held.received_amount} currency={held.settlement_currency} />
          </td>
          <td>
            <Money amount={held.settlement_amount} currency={held.settlement_currency} />{' '}
            {held.settlement_network ?? ''}
          </td>
          <td>
            <Time at={held.held_since} />
          </td>
          <td>{age(held.held_since)}</td>
          <td className="actions">
            {canPropose ? (
              <NoteAction
                actionKey={`fail:${held.payout_id}`}
                label="Propose to fail"
                done="Proposed"
                testId="propose-fail"
                run={(note) => api.admin.settlement.failPayout.mutate({ payout_id: held.payout_id, note })}
              />
            ) : null}
          </td>
        </tr>
      ))}
    </Queue>
  );
}

function ReturnInflow({ id }: { id: string }) {
  return (
    <NoteAction
      actionKey={`return:${id}`}
      label="Propose return"
      done="Proposed"
      placeholder="Note (required): how it was sent back"
      run={(note) => api.admin.settlement.returnInflow.mutate({ inflow_id: id, note })}
    />
  );
}

function UnmatchedInflows() {
  const canPropose = useCan('operator');
  // UNMATCHED money, and HELD money that no payout could take (below every open instruction).
  const list = usePages(['admin.settlement.inflows', 'unattributed'], (cursor) =>
    api.admin.settlement.inflows.query({ limit: 20, cursor, unattributed: true }),
  );
  return (
    <Queue
      id="unmatched"
      code="INFLOWS_UNMATCHED"
      list={list}
      head={
        <tr>
          <th>Inflow</th>
          <th>Amount</th>
          <th>State</th>
          <th>Account's payout</th>
          <th>Arrived</th>
          <th>Waiting</th>
          <th>Actions</th>
        </tr>
      }
    >
      {list.rows.map((inflow) => (
        <tr key={inflow.id}>
          <td>
            <Id id={inflow.id} />
          </td>
          <td>
            <Money amount={inflow.amount} currency={inflow.currency} />
          </td>
          <td>{inflow.state === 'HELD' ? 'below every instruction' : 'unmatched'}</td>
          <td>
            {inflow.account_payout_id ? (
              <Link to={`/console/payouts/${inflow.account_payout_id}`}>
                <Id id={inflow.account_payout_id} />
              </Link>
            ) : (
              <span className="muted">—</span>
            )}
          </td>
          <td>
            <Time at={inflow.arrived_at} />
          </td>
          <td>{age(inflow.arrived_at)}</td>
          <td className="actions">{canPropose ? <ReturnInflow id={inflow.id} /> : null}</td>
        </tr>
      ))}
    </Queue>
  );
}

function FailedRefunds() {
  const canPropose = useCan('operator');
  const list = usePages(['admin.refunds.failed'], (cursor) =>
    api.admin.refunds.failed.query({ limit: 20, cursor }),
  );
  return (
    <Queue
      id="failed-refunds"
      code="REFUNDS_FAILED"
      list={list}
      head={
        <tr>
          <th>Payout</th>
          <th>Refund</th>
          <th>Amount</th>
          <th>Failure</th>
          <th>Waiting</th>
          <th>Actions</th>
        </tr>
      }
    >
      {list.rows.map((refund) => (
        <tr key={refund.id}>
          <td>
            <Link to={`/console/payouts/${refund.payout_id}`}>
              <Id id={refund.payout_id} />
            </Link>
          </td>
          <td>
            <Id id={refund.id} />
          </td>
          <td>
            <Money amount={refund.refund_amount} currency={refund.refund_currency} />
          </td>
          <td>{refund.failure_reason ?? '—'}</td>
          <td>{age(refund.created_at)}</td>
          <td className="actions">
            {canPropose ? (
              <NoteAction
                actionKey={`retry:${refund.id}`}
                label="Propose retry"
                done="Proposed"
                placeholder="Note (required): what the merchant corrected"
                run={(note) => api.admin.refunds.retry.mutate({ refund_id: refund.id, note })}
              />
            ) : null}
          </td>
        </tr>
      ))}
    </Queue>
  );
}

function HeldMoney() {
  const canPropose = useCan('operator');
  const list = usePages(['admin.refunds.held'], (cursor) =>
    api.admin.refunds.held.query({ limit: 20, cursor }),
  );
  return (
    <Queue
      id="no-destination"
      code="MONEY_HELD_NO_REFUND_DESTINATION"
      list={list}
      head={
        <tr>
          <th>Payout</th>
          <th>Held</th>
          <th>Failure</th>
          <th>Destination now</th>
          <th>Waiting</th>
          <th>Actions</th>
        </tr>
      }
    >
      {list.rows.map((held) => (
        <tr key={held.payout_id}>
          <td>
            <Link to={`/console/payouts/${held.payout_id}`}>
              <Id id={held.payout_id} />
            </Link>
          </td>
          <td>
            <Money amount={held.received_amount} currency={held.settlement_currency} />
          </td>
          <td>{held.failure_code ?? '—'}</td>
          <td>{held.refund_destination_active ? 'registered' : 'none yet'}</td>
          <td>{age(held.failed_at)}</td>
          <td className="actions">
            {canPropose && held.refund_destination_active ? (
              <NoteAction
                actionKey={`raise:${held.payout_id}`}
                label="Propose refund"
                done="Proposed"
                placeholder="Note (required): why the money goes back now"
                run={(note) => api.admin.refunds.raise.mutate({ payout_id: held.payout_id, note })}
              />
            ) : null}
          </td>
        </tr>
      ))}
    </Queue>
  );
}

function DeadDeliveries() {
  const canRedeliver = useCan('operator');
  const list = usePages(['admin.webhooks.dead'], (cursor) =>
    api.admin.webhooks.dead.query({ limit: 20, cursor }),
  );
  return (
    <Queue
      id="dead-webhooks"
      code="WEBHOOK_DELIVERIES_DEAD"
      list={list}
      head={
        <tr>
          <th>Payout</th>
          <th>Event</th>
          <th>Endpoint</th>
          <th>Last failure</th>
          <th>Dead since</th>
          <th>Actions</th>
        </tr>
      }
    >
      {list.rows.map((d) => (
        <tr key={d.delivery_id}>
          <td>
            {d.payout_id ? (
              <Link to={`/console/payouts/${d.payout_id}`}>
                <Id id={d.payout_id} />
              </Link>
            ) : (
              '—'
            )}
          </td>
          <td>{d.event_type}</td>
          <td className="url">{d.target_url}</td>
          <td>{d.last_failure_reason ?? d.last_response_status ?? '—'}</td>
          <td>{age(d.dead_at)}</td>
          <td className="actions">
            {canRedeliver ? (
              <ClickAction
                actionKey={`redeliver:${d.delivery_id}`}
                label="Redeliver"
                done="Sent again"
                run={() => api.admin.webhooks.redeliver.mutate({ delivery_id: d.delivery_id })}
              />
            ) : null}
          </td>
        </tr>
      ))}
    </Queue>
  );
}

function Proposals() {
  const list = usePages(['admin.approvals.list', 'PENDING'], (cursor) =>
    api.admin.approvals.list.query({ state: 'PENDING', limit: 20, cursor }),
  );
  return (
    <section className="queue" data-queue="proposals" aria-labelledby="q-proposals">
      <h2 id="q-proposals">
        Proposals waiting for approval{' '}
        <span className="count" data-testid="count-proposals">
          {list.isPending ? '…' : `${list.rows.length}${list.hasNextPage ? '+' : ''}`}
        </span>
        {list.rows.length > 0 ? (
          <span className="age">oldest waiting {age(list.rows.at(-1)?.created_at)}</span>
        ) : null}
      </h2>
      <p className="what">
        Money moves proposed by one operator, carried out when a different approver approves them. Newest
        first; see <Link to="/console/approvals">Approvals</Link> for your own and decided ones.
      </p>
      <Failure error={list.error} />
      {list.rows.length === 0 && !list.isPending ? (
        <p className="empty">Nothing waits here.</p>
      ) : (
        <table>
          <thead>{APPROVALS_HEAD}</thead>
          <tbody>
            <ApprovalRows rows={list.rows} />
          </tbody>
        </table>
      )}
      <MoreButton {...list} />
    </section>
  );
}

export function ExceptionsPage() {
  const summary = useQuery({
    queryKey: ['admin.exceptions'],
    queryFn: () => api.admin.exceptions.query(),
    refetchInterval: 30_000,
  });
  return (
    <SummaryContext.Provider value={summary.data}>
      <main className="page exceptions">
        <h1>Exceptions</h1>
        <p className="lead">
          The queues where money or a notification waits for a person: how many wait and for how long (counted{' '}
          {summary.data ? <Time at={summary.data.counted_at} /> : '…'}, every 30 s), each listed oldest first.
        </p>
        <Failure error={summary.error} />
        <Proposals />
        <HeldPayouts />
        <UnmatchedInflows />
        <FailedRefunds />
        <HeldMoney />
        <DeadDeliveries />
      </main>
    </SummaryContext.Provider>
  );
}
