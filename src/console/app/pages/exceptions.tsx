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
 * Where money waits for a person: one section per queue, each row linked to its detail and
 * offering what the operator's role allows. Queues holding overdue items come first; within a
 * queue, overdue rows come first, marked (the queue's overdue age is `OVERDUE_<QUEUE>_HOURS`).
 */

type Summary = Awaited<ReturnType<typeof api.admin.exceptions.query>>;
type QueueCode = Summary['queues'][number]['code'];

/** `admin.exceptions`: every queue's count and the age of its oldest, read from the queues' own indexes. */
const SummaryContext = createContext<Summary | undefined>(undefined);

/** Whether an item of `code` that has waited since `since` is overdue (older than the queue's overdue age). */
function useOverdue(code: QueueCode): (since: string | null | undefined) => boolean {
  const summary = useContext(SummaryContext)?.queues.find((q) => q.code === code);
  return (since) => !!summary && !!since && Date.parse(since) <= Date.parse(summary.overdue_since);
}

/** `rows` with the overdue ones first, each group in its own order. */
function overdueFirst<T>(rows: readonly T[], overdue: (row: T) => boolean): T[] {
  return [...rows.filter(overdue), ...rows.filter((r) => !overdue(r))];
}

/** The Waiting cell of a row: its age at the service's last count, and the mark of an overdue item. */
function Waiting({ since, overdue }: { since: string | null | undefined; overdue: boolean }) {
  const countedAt = useContext(SummaryContext)?.counted_at;
  return (
    <td className="waiting">
      {age(since, countedAt ? Date.parse(countedAt) : undefined)}
      {overdue ? (
        <span className="overdue-mark" data-testid="overdue">
          overdue
        </span>
      ) : null}
    </td>
  );
}

/** The queue's overdue count and age, in its heading. */
function OverdueCount({ id, code }: { id: string; code: QueueCode }) {
  const summary = useContext(SummaryContext)?.queues.find((q) => q.code === code);
  if (!summary) return null;
  return (
    <span
      className={summary.overdue > 0 ? 'overdue-count' : 'overdue-count none'}
      data-testid={`overdue-${id}`}
      title={`Overdue after ${summary.overdue_after_hours} h (${summary.overdue_setting}). ${summary.afterwards}`}
    >
      {summary.overdue.toLocaleString('en-US')} overdue (over {summary.overdue_after_hours} h)
    </span>
  );
}

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
        <OverdueCount id={props.id} code={props.code} />
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
  const isOverdue = useOverdue('PAYOUTS_HELD_UNDERPAID');
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
      {overdueFirst(list.rows, (h) => isOverdue(h.held_since)).map((held) => (
        <tr
          key={held.payout_id}
          data-payout={held.payout_id}
          className={isOverdue(held.held_since) ? 'overdue' : ''}
        >
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
          <Waiting since={held.held_since} overdue={isOverdue(held.held_since)} />
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

/** Payouts the payee name check holds: the two names side by side, and the two decisions. */
function HeldPayees() {
  const canPropose = useCan('operator');
  const list = usePages(['admin.payees.held'], (cursor) =>
    api.admin.payees.held.query({ limit: 20, cursor }),
  );
  const isOverdue = useOverdue('PAYOUTS_HELD_PAYEE_NAME');
  return (
    <Queue
      id="payee"
      code="PAYOUTS_HELD_PAYEE_NAME"
      list={list}
      head={
        <tr>
          <th>Payout</th>
          <th>Tenant</th>
          <th>Amount</th>
          <th>Name given</th>
          <th>Name at the institution</th>
          <th>Waiting</th>
          <th>Actions</th>
        </tr>
      }
    >
      {overdueFirst(list.rows, (h) => isOverdue(h.held_since)).map((held) => (
        <tr
          key={held.payout_id}
          data-payout={held.payout_id}
          className={isOverdue(held.held_since) ? 'overdue' : ''}
        >
          <td>
            <Link to={`/console/payouts/${held.payout_id}`}>
              <Id id={held.payout_id} />
            </Link>
          </td>
          <td>{held.tenant_name}</td>
          <td>
            <Money amount={held.destination_amount} currency={held.destination_currency} />
            <div className="muted">{held.destination_provider_name}</div>
          </td>
          <td>{held.given_name ?? '—'}</td>
          <td>
            {held.institution_name ?? (
              <span className="muted">
                {held.check === 'UNAVAILABLE' ? 'the institution could not say' : 'no such account'}
              </span>
            )}
          </td>
          <Waiting since={held.held_since} overdue={isOverdue(held.held_since)} />
          <td className="actions">
            {canPropose ? (
              <>
                <NoteAction
                  actionKey={`payee-accept:${held.payout_id}`}
                  label="Propose to accept the name"
                  done="Proposed"
                  testId="propose-accept-payee"
                  placeholder="Note (required): how the merchant confirmed the beneficiary"
                  run={(note) => api.admin.payees.accept.mutate({ payout_id: held.payout_id, note })}
                />{' '}
                <NoteAction
                  actionKey={`fail:${held.payout_id}`}
                  label="Propose to fail"
                  done="Proposed"
                  run={(note) => api.admin.settlement.failPayout.mutate({ payout_id: held.payout_id, note })}
                />
              </>
            ) : null}
          </td>
        </tr>
      ))}
    </Queue>
  );
}

function AttributeInflow({ id }: { id: string }) {
  return (
    <NoteAction
      actionKey={`attribute:${id}`}
      label="Propose to attribute"
      done="Proposed"
      testId="propose-attribute"
      field={{ label: 'Payout to attribute it to', placeholder: 'Payout id', testId: 'attribute-payout' }}
      placeholder="Note (required): how you know whose it is"
      runWith={(note, payoutId) =>
        api.admin.settlement.attribute.mutate({ inflow_id: id, payout_id: payoutId, note })
      }
    />
  );
}

function ReturnInflow({ id }: { id: string }) {
  return (
    <NoteAction
      actionKey={`return:${id}`}
      label="Propose return"
      done="Proposed"
      testId="propose-return"
      field={{
        label: "The return's bank reference or transaction hash",
        placeholder: 'Bank reference or transaction hash (evidence)',
        testId: 'return-reference',
      }}
      placeholder="Note (required): how it was sent back"
      runWith={(note, reference) =>
        api.admin.settlement.returnInflow.mutate({ inflow_id: id, reference, note })
      }
    />
  );
}

function UnmatchedInflows() {
  const canPropose = useCan('operator');
  // UNMATCHED money, and HELD money that no payout could take (below every open instruction).
  const list = usePages(['admin.settlement.inflows', 'unattributed'], (cursor) =>
    api.admin.settlement.inflows.query({ limit: 20, cursor, unattributed: true }),
  );
  const isOverdue = useOverdue('INFLOWS_UNMATCHED');
  return (
    <Queue
      id="unmatched"
      code="INFLOWS_UNMATCHED"
      list={list}
      head={
        <tr>
          <th>Inflow</th>
          <th>Tenant</th>
          <th>Amount</th>
          <th>State</th>
          <th>Paid by</th>
          <th>Transaction</th>
          <th>Account's payout</th>
          <th>Arrived</th>
          <th>Waiting</th>
          <th>Actions</th>
        </tr>
      }
    >
      {overdueFirst(list.rows, (i) => isOverdue(i.arrived_at)).map((inflow) => (
        <tr key={inflow.id} data-inflow={inflow.id} className={isOverdue(inflow.arrived_at) ? 'overdue' : ''}>
          <td>
            <Id id={inflow.id} />
          </td>
          <td>
            <Id id={inflow.tenant_id} />
          </td>
          <td>
            <Money amount={inflow.amount} currency={inflow.currency} />
            {inflow.network ? <div className="muted">on {inflow.network}</div> : null}
          </td>
          <td>{inflow.state === 'HELD' ? 'below every instruction' : 'unmatched'}</td>
          <td className="url">
            {inflow.payer_account ?? inflow.payer_name ?? <span className="muted">not known</span>}
            {inflow.payer_account && inflow.payer_name ? (
              <div className="muted">{inflow.payer_name}</div>
            ) : null}
          </td>
          <td className="url">
            <code title={inflow.rail === 'CRYPTO' ? 'transaction hash' : 'bank session id'}>
              {inflow.external_ref}
            </code>
          </td>
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
          <Waiting since={inflow.arrived_at} overdue={isOverdue(inflow.arrived_at)} />
          <td className="actions">
            {canPropose ? (
              <>
                <AttributeInflow id={inflow.id} /> <ReturnInflow id={inflow.id} />
              </>
            ) : null}
          </td>
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
  const isOverdue = useOverdue('REFUNDS_FAILED');
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
      {overdueFirst(list.rows, (r) => isOverdue(r.updated_at)).map((refund) => (
        <tr key={refund.id} className={isOverdue(refund.updated_at) ? 'overdue' : ''}>
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
          <Waiting since={refund.updated_at} overdue={isOverdue(refund.updated_at)} />
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
  const isOverdue = useOverdue('MONEY_HELD_NO_REFUND_DESTINATION');
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
      {overdueFirst(list.rows, (h) => isOverdue(h.failed_at)).map((held) => (
        <tr key={held.payout_id} className={isOverdue(held.failed_at) ? 'overdue' : ''}>
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
          <Waiting since={held.failed_at} overdue={isOverdue(held.failed_at)} />
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

/** Successful payouts whose overpayment is owed back: returned from the payout's page (four eyes). */
function OverpaymentsToReturn() {
  const list = usePages(['admin.refunds.overpayments'], (cursor) =>
    api.admin.refunds.overpayments.query({ limit: 20, cursor }),
  );
  const isOverdue = useOverdue('PAYOUTS_OVERPAYMENT_TO_RETURN');
  return (
    <Queue
      id="overpayments"
      code="PAYOUTS_OVERPAYMENT_TO_RETURN"
      list={list}
      head={
        <tr>
          <th>Payout</th>
          <th>Owed back</th>
          <th>Paid</th>
          <th>Destination now</th>
          <th>Waiting</th>
          <th>Actions</th>
        </tr>
      }
    >
      {overdueFirst(list.rows, (o) => isOverdue(o.succeeded_at)).map((owed) => (
        <tr
          key={owed.payout_id}
          data-payout={owed.payout_id}
          className={isOverdue(owed.succeeded_at) ? 'overdue' : ''}
        >
          <td>
            <Link to={`/console/payouts/${owed.payout_id}`}>
              <Id id={owed.payout_id} />
            </Link>
          </td>
          <td>
            <Money amount={owed.overpayment_amount} currency={owed.settlement_currency} />
          </td>
          <td>
            <Money amount={owed.received_amount} currency={owed.settlement_currency} /> of{' '}
            <Money amount={owed.settlement_amount} currency={owed.settlement_currency} />
          </td>
          <td>{owed.refund_destination_active ? 'registered' : 'none yet'}</td>
          <Waiting since={owed.succeeded_at} overdue={isOverdue(owed.succeeded_at)} />
          <td className="actions">
            <Link to={`/console/payouts/${owed.payout_id}`}>Return it from the payout page</Link>
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
  const isOverdue = useOverdue('WEBHOOK_DELIVERIES_DEAD');
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
      {overdueFirst(list.rows, (d) => isOverdue(d.dead_at)).map((d) => (
        <tr key={d.delivery_id} className={isOverdue(d.dead_at) ? 'overdue' : ''}>
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
          <Waiting since={d.dead_at} overdue={isOverdue(d.dead_at)} />
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
  const isOverdue = useOverdue('APPROVALS_PENDING');
  return (
    <section className="queue" data-queue="proposals" aria-labelledby="q-proposals">
      <h2 id="q-proposals">
        Proposals waiting for approval{' '}
        <span className="count" data-testid="count-proposals">
          {list.isPending ? '…' : `${list.rows.length}${list.hasNextPage ? '+' : ''}`}
        </span>
        <OverdueCount id="proposals" code="APPROVALS_PENDING" />
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
            <ApprovalRows
              rows={overdueFirst(list.rows, (a) => isOverdue(a.created_at))}
              overdue={(a) => isOverdue(a.created_at)}
            />
          </tbody>
        </table>
      )}
      <MoreButton {...list} />
    </section>
  );
}

/**
 * What the ledger checks found out of balance and is still open (`ledger violations`), and the
 * check run on demand (`ledger check`, operator): nothing to decide per row, something to
 * investigate; a violation closes by itself once a check finds it balanced again.
 */
function OutOfBalance() {
  const canCheck = useCan('operator');
  const summary = useContext(SummaryContext)?.queues.find((q) => q.code === 'OUT_OF_BALANCE');
  const list = useQuery({
    queryKey: ['admin.ledger.violations'],
    queryFn: () => api.admin.ledger.violations.query({}),
  });
  const isOverdue = useOverdue('OUT_OF_BALANCE');
  const rows = list.data?.data ?? [];
  return (
    <section className="queue" data-queue="out-of-balance" aria-labelledby="q-out-of-balance">
      <h2 id="q-out-of-balance">
        {summary?.title ?? 'Out of balance'}{' '}
        <span className="count" data-testid="count-out-of-balance">
          {summary ? summary.count.toLocaleString('en-US') : '…'}
        </span>
        <OverdueCount id="out-of-balance" code="OUT_OF_BALANCE" />
      </h2>
      <p className="what">{summary?.description}</p>
      {canCheck ? (
        <p>
          <ClickAction
            actionKey="ledger-check"
            label="Check the ledger now (payouts changed in the last hour)"
            done="Checked: the list below is what is still open"
            run={() => api.admin.ledger.check.mutate({ all: false })}
          />
        </p>
      ) : null}
      <Failure error={list.error} />
      {rows.length === 0 && !list.isPending ? (
        <p className="empty">Nothing is out of balance.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Check</th>
              <th>Subject</th>
              <th>Tenant</th>
              <th>What it found</th>
              <th>First seen (UTC)</th>
              <th>Waiting</th>
            </tr>
          </thead>
          <tbody>
            {overdueFirst(rows, (v) => isOverdue(v.first_seen_at)).map((v) => (
              <tr key={v.id} className={isOverdue(v.first_seen_at) ? 'overdue' : ''}>
                <td>
                  <code>{v.check}</code>
                </td>
                <td className="url">
                  <code>{v.subject}</code>
                </td>
                <td>
                  <Id id={v.tenant_id} />
                </td>
                <td className="details">
                  {Object.entries(v.detail)
                    .map(
                      ([k, value]) =>
                        `${k.replaceAll('_', ' ')}: ${typeof value === 'string' ? value : JSON.stringify(value)}`,
                    )
                    .join('; ')}
                </td>
                <td>
                  <Time at={v.first_seen_at} />
                </td>
                <Waiting since={v.first_seen_at} overdue={isOverdue(v.first_seen_at)} />
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** The sections of the page, in their order when nothing is overdue. */
const SECTIONS: [QueueCode, () => ReactNode][] = [
  ['APPROVALS_PENDING', Proposals],
  ['PAYOUTS_HELD_UNDERPAID', HeldPayouts],
  ['PAYOUTS_HELD_PAYEE_NAME', HeldPayees],
  ['INFLOWS_UNMATCHED', UnmatchedInflows],
  ['REFUNDS_FAILED', FailedRefunds],
  ['MONEY_HELD_NO_REFUND_DESTINATION', HeldMoney],
  ['PAYOUTS_OVERPAYMENT_TO_RETURN', OverpaymentsToReturn],
  ['WEBHOOK_DELIVERIES_DEAD', DeadDeliveries],
  ['OUT_OF_BALANCE', OutOfBalance],
];

export function ExceptionsPage() {
  const summary = useQuery({
    queryKey: ['admin.exceptions'],
    queryFn: () => api.admin.exceptions.query(),
    refetchInterval: 30_000,
  });
  const overdueOf = new Map((summary.data?.queues ?? []).map((q) => [q.code, q.overdue]));
  return (
    <SummaryContext.Provider value={summary.data}>
      <main className="page exceptions">
        <h1>Exceptions</h1>
        <p className="lead">
          The queues where money or a notification waits for a person: how many wait and for how long (counted{' '}
          {summary.data ? <Time at={summary.data.counted_at} /> : '…'}, every 30 s). Queues with overdue items
          come first, and in each queue its overdue items, marked.
        </p>
        <Failure error={summary.error} />
        {overdueFirst(SECTIONS, ([code]) => (overdueOf.get(code) ?? 0) > 0).map(([code, Section]) => (
          <Section key={code} />
        ))}
      </main>
    </SummaryContext.Provider>
  );
}
