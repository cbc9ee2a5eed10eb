import { useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import {
  ACCOUNT_KINDS,
  accountKindOf,
  MOVEMENT_LABELS,
  MOVEMENT_TEXTS,
  MOVEMENT_TYPES,
  type MovementType,
} from '../../../ledger/chart.ts';
import { type Decimal, toDecimal } from '../../../lib/money.ts';
import { api } from '../api.ts';
import { ArgumentsInWords, actionInWords, outcomeInWords } from '../audit-words.tsx';
import { OverpaymentReturn } from '../overpayment.tsx';
import { Failure, Id, Money, MoreButton, Prose, Time, usePages } from '../ui.tsx';
import { Svg } from './svg.tsx';

/**
 * One payout whole: what the merchant sees, its money statement from the ledger (where a failed
 * payout's money is, told by the ledger as the Machines page counts it), the timeline with the
 * operators who acted, the money in and out, the refund, the notifications, and its machine's
 * diagram with the path it took.
 */

type Detail = Awaited<ReturnType<typeof api.admin.payouts.get.query>>;

const show = (value: unknown): string =>
  value === null || value === undefined
    ? '—'
    : typeof value === 'object'
      ? JSON.stringify(value)
      : String(value);

/** The merchant's fields as operators read them; a field not named here shows its API name. */
const LABELS: Record<string, string> = {
  id: 'Payout id',
  tenant_id: 'Tenant id',
  status: 'Status',
  merchant_reference: 'Merchant reference',
  notification_url: 'Notification URL',
  destination_type: 'Paid to',
  destination_country: 'Country',
  destination_currency: 'Currency paid out',
  destination_amount: 'Amount paid out',
  destination_account_unique: 'Account',
  destination_provider_name: 'Institution',
  destination_provider_code: 'Institution code',
  destination_account_name: 'Beneficiary name given',
  payee_name_check: 'Payee name check',
  metadata: 'Merchant metadata',
  settlement_currency: 'Merchant pays in',
  settlement_amount: 'Merchant pays',
  exchange_rate: 'Exchange rate',
  platform_fee_amount: 'Platform fee',
  platform_fee_currency: 'Platform fee currency',
  network_fee_amount: 'Network fee',
  network_fee_currency: 'Network fee currency',
  total_fee_amount: 'Total fees',
  total_fee_currency: 'Total fees currency',
  is_refunded: 'Refund raised',
  refund_reference: 'Refund id',
  created_at: 'Created',
  updated_at: 'Last changed',
  rail: 'Rail',
  account_unique: 'Pay to',
  provider_name: 'At',
  network: 'Network',
  expected_amount: 'Amount to pay',
  expected_currency: 'Currency to pay',
  payment_status: 'Payment',
  expires_at: 'Pay before',
  paid_at: 'Paid',
};

/** The payee name check in words. */
export function payeeInWords(check: Detail['payout']['payee_name_check']): string {
  if (!check) return 'not checked (no holder name for this destination)';
  const words = {
    MATCH: 'the name matches the institution’s',
    CLOSE_MATCH: `close: the institution holds “${check.institution_name ?? '?'}”`,
    NO_MATCH: 'does not match the institution’s name',
    PENDING: 'waiting for the institution’s answer',
    UNAVAILABLE: 'the institution could not answer',
  } as const;
  return `${check.result.replace('_', ' ')}: ${words[check.result]}`;
}

const fieldText = (k: string, v: unknown): string =>
  k === 'payee_name_check'
    ? payeeInWords(v as Detail['payout']['payee_name_check'])
    : typeof v === 'boolean'
      ? v
        ? 'yes'
        : 'no'
      : show(v);

/** Every field of the merchant's resource, in the order the API gives them, under its label. */
function Fields({ payout }: { payout: Detail['payout'] }) {
  const entries = Object.entries(payout).filter(
    ([k]) => k !== 'status_timeline' && k !== 'payment_instruction',
  );
  const instruction = payout.payment_instruction ? Object.entries(payout.payment_instruction) : [];
  return (
    <div className="fields">
      <dl data-testid="merchant-fields">
        {entries.map(([k, v]) => (
          <div key={k} data-field={k}>
            <dt title={k}>{LABELS[k] ?? k}</dt>
            <dd className={k.endsWith('_id') || k === 'id' || k === 'refund_reference' ? 'id' : undefined}>
              {fieldText(k, v)}
            </dd>
          </div>
        ))}
      </dl>
      <div>
        <h3>Payment instruction</h3>
        {instruction.length === 0 ? (
          <p className="muted">None yet.</p>
        ) : (
          <dl>
            {instruction.map(([k, v]) => (
              <div key={k}>
                <dt title={k}>{LABELS[k] ?? k}</dt>
                <dd>{fieldText(k, v)}</dd>
              </div>
            ))}
          </dl>
        )}
      </div>
    </div>
  );
}

/** Why a timeline row was written, in words; a code not listed (a processor's failure code) shows as it is. */
const REASONS: Record<string, string> = {
  PAYOUT_CREATED: 'The merchant asked for the payout',
  INSTRUCTION_GENERATED: 'Priced; the merchant was told what to pay',
  INSTRUCTION_GENERATION_FAILED: 'No payment instruction could be issued',
  PAYEE_NAME_HELD: 'Held: the payee’s name does not match the institution’s',
  PAYEE_NAME_ACCEPTED: 'The payee’s name was accepted by operators',
  PAYEE_NAME_REJECTED: 'Failed by operators: the payee’s name does not match',
  PAYEE_NAME_MISMATCH: 'Refused: the payee’s name does not match',
  PAYMENT_RECEIVED: 'The merchant’s money arrived in full',
  SETTLEMENT_UNDERPAID: 'Less money arrived than asked for',
  INSTRUCTION_EXPIRED: 'Nothing was paid before the deadline',
  DISPATCHED: 'The processor accepted the payout',
  DISPATCH_RETRIED: 'An attempt failed; another one was sent',
  PAYOUT_SUCCEEDED: 'The beneficiary was paid',
};

function Timeline({ rows }: { rows: Detail['timeline'] }) {
  return (
    <table className="timeline" data-testid="timeline">
      <thead>
        <tr>
          <th>#</th>
          <th>When</th>
          <th>From → to</th>
          <th>Reason</th>
          <th>By</th>
          <th>Who decided</th>
          <th>Details</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((row, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: the timeline is append-only: a row's place never changes
          <tr key={i} data-reason={row.reason_code}>
            <td title={row.transition ? `arrow ${row.transition} of the diagram` : undefined}>{i + 1}</td>
            <td>
              <Time at={row.created_at} />
            </td>
            <td>
              {row.from_status ?? '∅'} → {row.to_status}
            </td>
            <td>
              {REASONS[row.reason_code] ?? 'Failed: '}
              {REASONS[row.reason_code] ? null : <code>{row.reason_code}</code>}
            </td>
            <td>{row.triggered_by}</td>
            <td className="who-decided">
              {row.proposer ? (
                <>
                  proposed by <span className="operator">{row.proposer.name}</span>
                  <br />
                </>
              ) : null}
              {row.operator ? (
                <>
                  {row.proposer ? 'approved by ' : ''}
                  <span className="operator">{row.operator.name}</span>
                </>
              ) : null}
              {row.approval_id ? (
                <span className="approval">
                  {' '}
                  approval <Id id={row.approval_id} />
                </span>
              ) : null}
            </td>
            <td className="detail">{row.reason_detail ? show(row.reason_detail) : ''}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Where inside its status the payout is: held, and why (the machine's inner state). */
function Substate({ path }: { path: Detail['path'] }) {
  const inner = path.states.at(-1)?.split('.')[1];
  const words: Record<string, string> = {
    payeeHeld: 'held: payee name',
    held: 'held: underpaid',
    redispatching: 'sending again',
  };
  if (!inner || !words[inner]) return null;
  return (
    <span className="status substate" data-testid="substate">
      {words[inner]}
    </span>
  );
}

/** The payout machine's diagram (the one /docs/machines shows), with this payout's path drawn over it. */
function Diagram({ path }: { path: Detail['path'] }) {
  const marks = useMemo(
    () => [
      ...path.edges.map((id, i) => ({ id, cls: 'taken', step: i + 1 })),
      ...path.states.map((id, i) => ({ id, cls: 'visited', step: i + 1 })),
      ...path.states.slice(-1).map((id) => ({ id, cls: 'current' })),
    ],
    [path],
  );
  return (
    <div className="diagram-wrap">
      <Svg src={`/docs/machines/${path.machine}.svg`} marks={marks} testId="diagram" />
      <p className="legend-line">
        <span className="swatch taken" /> transitions this payout took · <span className="swatch current" />{' '}
        where it is now · the numbers in the timeline's first column are the arrows' numbers
      </p>
    </div>
  );
}

type Statement = Awaited<ReturnType<typeof api.admin.ledger.payout.query>>;

const capital = (words: string) => words.charAt(0).toUpperCase() + words.slice(1);

const isZero = (amount: string) => toDecimal(amount).isZero();

/** A signed amount as the statement shows it: `+2.5 USDT` arrived, `-2.5 USDT` left. */
function Signed({ amount, currency }: { amount: string; currency: string }) {
  const sign = toDecimal(amount).isPositive() && !isZero(amount) ? '+' : '';
  return (
    <span className="money signed">
      {sign}
      {amount} {currency}
    </span>
  );
}

/** The fees a payout's money can be kept as, one movement type each. */
const FEE_TYPES = MOVEMENT_TYPES.filter((t) => t.endsWith('_fee'));

/** Each fee kind and what was kept of it, per currency (a refund fee given back nets to zero). */
function feesKept(entries: Statement['entries']) {
  return FEE_TYPES.map((type) => {
    const kept = new Map<string, Decimal>();
    for (const e of entries.filter((x) => x.movement === type)) {
      // A fee kept is money leaving the payout (negative); given back, it returns (positive).
      kept.set(e.currency, (kept.get(e.currency) ?? toDecimal(0)).minus(e.amount));
    }
    return { type, amounts: [...kept].map(([currency, amount]) => ({ currency, amount: amount.toFixed() })) };
  });
}

/** Where an account's money is and whose, from the ledger's chart (the Money page's words). */
function AccountWords({ account }: { account: string }) {
  const kind = accountKindOf(account);
  if (!kind) return <span className="muted">not in the chart of accounts</span>;
  return (
    <>
      {ACCOUNT_KINDS[kind].where}
      <div className="muted">{ACCOUNT_KINDS[kind].whose}</div>
    </>
  );
}

/**
 * The payout's money statement, from the ledger (`admin.ledger.payout`, what the CLI's `ledger
 * payout` prints): its movements as the merchant's statement shows them, their sum per currency,
 * the fees kept by kind, and the accounts its money is in now and came from.
 */
function MoneyStatement({ payoutId, moneyCase }: { payoutId: string; moneyCase: Detail['money_case'] }) {
  const statement = useQuery({
    queryKey: ['admin.ledger.payout', payoutId],
    queryFn: () => api.admin.ledger.payout.query({ payout_id: payoutId }),
  });
  const s = statement.data;
  const movements = s?.entries.filter((e) => e.movement !== null) ?? [];
  const holds = s?.holds.filter((h) => !isZero(h.amount)) ?? [];
  const inTransit = s?.in_transit.filter((h) => !isZero(h.amount)) ?? [];
  const now = s?.accounts.filter((a) => toDecimal(a.amount).isPositive()) ?? [];
  const from = s?.accounts.filter((a) => toDecimal(a.amount).isNegative()) ?? [];
  return (
    <section data-testid="statement">
      <h2>Money statement</h2>
      <p className="muted">
        Every movement of this payout's money, from the ledger, as the merchant reads them (
        <code>GET /v1/payouts/{'{payout_id}'}/money-movements</code>): positive when money arrived for the
        payout, negative when it left (paid out, kept as a fee, refunded, set aside).
      </p>
      {moneyCase ? (
        <p className="money-case" data-testid="money-case" data-case={moneyCase.code}>
          <strong>Where the money is: {moneyCase.label}.</strong> <Prose text={moneyCase.description} />{' '}
          <span className="muted">
            How the ledger tells it: <Prose text={moneyCase.ledger} />.
          </span>
        </p>
      ) : null}
      <Failure error={statement.error} />
      {s && movements.length === 0 ? (
        <p className="empty">No money has moved for this payout.</p>
      ) : (
        <table data-testid="movements">
          <thead>
            <tr>
              <th>When</th>
              <th>Movement</th>
              <th>Amount</th>
              <th>Caused by</th>
            </tr>
          </thead>
          <tbody>
            {movements.map((e) => (
              <tr key={e.id} data-movement={e.movement}>
                <td>
                  <Time at={e.created_at} />
                </td>
                <td title={MOVEMENT_TEXTS[e.movement as MovementType]}>
                  {capital(MOVEMENT_LABELS[e.movement as MovementType] ?? e.movement ?? '')}
                </td>
                <td>
                  <Signed amount={e.amount} currency={e.currency} />
                </td>
                <td>
                  {e.cause.object} <Id id={e.cause.id} />
                  <div className="muted">{e.cause.transition}</div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {s ? (
        <dl className="statement-sums">
          <div data-testid="statement-sum">
            <dt>Sum of its movements</dt>
            <dd>
              {s.holds.length === 0 ? 'zero: no money has moved' : null}
              {s.holds.map((h, i) => (
                <span key={h.currency}>
                  {i > 0 ? ' · ' : ''}
                  <Signed amount={h.amount} currency={h.currency} />
                </span>
              ))}
              {s.holds.length === 0 ? null : holds.length === 0 ? (
                <span className="muted">
                  {' '}
                  — zero in every currency: nothing of its money is left with it.
                </span>
              ) : (
                <span className="muted">
                  {' '}
                  — what the payout holds now
                  {inTransit.length > 0
                    ? `, of which ${inTransit.map((t) => `${t.amount} ${t.currency}`).join(' and ')} is on its way (with the processor, or a refund travelling back)`
                    : ''}
                  .
                </span>
              )}
            </dd>
          </div>
          <div data-testid="fees-kept">
            <dt>Fees kept</dt>
            <dd>
              {feesKept(s.entries).map(({ type, amounts }, i) => (
                <span key={type} data-fee={type}>
                  {i > 0 ? ' · ' : ''}
                  {MOVEMENT_LABELS[type]}:{' '}
                  {amounts.length === 0
                    ? 'none'
                    : amounts.map((a) => `${a.amount} ${a.currency}`).join(' and ')}
                </span>
              ))}
            </dd>
          </div>
        </dl>
      ) : null}
      {now.length > 0 ? (
        <>
          <h3>Where its money is now</h3>
          <table data-testid="money-now">
            <thead>
              <tr>
                <th>Account</th>
                <th>Amount</th>
                <th>Where, and whose</th>
              </tr>
            </thead>
            <tbody>
              {now.map((a) => (
                <tr key={`${a.account}:${a.currency}`} data-account={a.account} data-currency={a.currency}>
                  <td>
                    <code>{a.account}</code>
                  </td>
                  <td>
                    <Money amount={a.amount} currency={a.currency} />
                  </td>
                  <td>
                    <AccountWords account={a.account} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <p className="muted">
            Where it came from:{' '}
            {from.map((a, i) => (
              <span key={`${a.account}:${a.currency}`}>
                {i > 0 ? ' · ' : ''}
                <code>{a.account}</code> <Money amount={a.amount} currency={a.currency} />
              </span>
            ))}
            .
          </p>
        </>
      ) : null}
    </section>
  );
}

/** What operators did to this payout, from the audit trail (proposals, approvals, refunds...). */
function AuditOf({ payoutId }: { payoutId: string }) {
  const list = usePages(['admin.audit.list', { target_id: payoutId }], (cursor) =>
    api.admin.audit.list.query({ target_id: payoutId, limit: 20, cursor }),
  );
  return (
    <section data-testid="payout-audit">
      <h2>What operators did</h2>
      <Failure error={list.error} />
      {list.rows.length === 0 && !list.isPending ? (
        <p className="empty">No operator acted on this payout.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>When (UTC)</th>
              <th>Operator</th>
              <th>Did what</th>
              <th>How it ended</th>
              <th>Note and details</th>
            </tr>
          </thead>
          <tbody>
            {list.rows.map((e) => (
              <tr key={e.id}>
                <td>
                  <Time at={e.created_at} />
                </td>
                <td>
                  <span className="operator">{e.operator_name}</span>{' '}
                  <span className="muted">{e.operator_role}</span>
                </td>
                <td title={e.action}>{actionInWords(e.action, e.arguments, e.outcome)}</td>
                <td title={e.outcome}>{outcomeInWords(e.outcome)}</td>
                <td className="details">
                  <ArgumentsInWords action={e.action} args={e.arguments} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <MoreButton {...list} />
    </section>
  );
}

export function PayoutPage({ payoutId }: { payoutId: string }) {
  const detail = useQuery({
    queryKey: ['admin.payouts.get', payoutId],
    queryFn: () => api.admin.payouts.get.query({ payout_id: payoutId }),
  });
  if (detail.error) return <Failure error={detail.error} />;
  const d = detail.data;
  if (!d) return <main className="page loading">Loading…</main>;
  return (
    <main className="page payout" data-status={d.payout.status}>
      <h1>
        Payout <code>{d.payout.id}</code>{' '}
        <span className={`status s-${d.payout.status}`}>{d.payout.status}</span> <Substate path={d.path} />
        {d.money_case ? (
          <span className="status substate" data-testid="case-badge">
            {d.money_case.label}
          </span>
        ) : null}
      </h1>
      <p className="lead">
        Tenant <strong>{d.tenant.name}</strong> <Id id={d.tenant.id} /> · merchant reference{' '}
        {d.payout.merchant_reference ?? '—'} · created <Time at={d.payout.created_at} />
      </p>
      <section>
        <h2>What the merchant sees</h2>
        <Fields payout={d.payout} />
      </section>
      <MoneyStatement payoutId={d.payout.id} moneyCase={d.money_case} />
      <section>
        <h2>The path it took</h2>
        <Diagram path={d.path} />
      </section>
      <section>
        <h2>Timeline</h2>
        <Timeline rows={d.timeline} />
      </section>
      <AuditOf payoutId={d.payout.id} />
      <section>
        <h2>Inflows</h2>
        {d.inflows.length === 0 ? (
          <p className="empty">No money received.</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th>Inflow</th>
                <th>State</th>
                <th>Amount</th>
                <th>Rail</th>
                <th>Matched</th>
                <th>Underpaid</th>
                <th>Overpayment</th>
                <th>Recorded</th>
              </tr>
            </thead>
            <tbody>
              {d.inflows.map((i) => (
                <tr key={i.id} data-inflow={i.id} data-state={i.state}>
                  <td>
                    <Id id={i.id} />
                  </td>
                  <td>
                    <span className={`status i-${i.state}`}>{i.state}</span>
                    {i.sub_state ? <span className="muted"> ({i.sub_state})</span> : null}
                  </td>
                  <td>
                    <Money amount={i.amount} currency={i.currency} />
                  </td>
                  <td>
                    {i.rail === 'CRYPTO'
                      ? `USDT on ${i.provider_name.replace(/^USDT on /, '')}`
                      : i.provider_name}
                  </td>
                  <td>{i.is_matched ? 'yes' : 'no'}</td>
                  <td>{i.is_underpaid ? 'yes' : 'no'}</td>
                  <td>
                    <Money amount={i.overpayment_amount} currency={i.overpayment_currency} />
                  </td>
                  <td>
                    <Time at={i.created_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section>
        <h2>Outflows</h2>
        {d.outflows.length === 0 ? (
          <p className="empty">No attempt to pay the beneficiary.</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th>#</th>
                <th>Status</th>
                <th>Amount</th>
                <th>Processor</th>
                <th>Failure</th>
                <th>Dispatched</th>
                <th>Settled</th>
              </tr>
            </thead>
            <tbody>
              {d.outflows.map((o) => (
                <tr key={o.id}>
                  <td>{o.attempt_number}</td>
                  <td>{o.status}</td>
                  <td>
                    <Money amount={o.destination_amount} currency={o.destination_currency} />
                  </td>
                  <td>
                    {o.processor} {o.processor_reference ?? ''}
                  </td>
                  <td>{o.failure_code ?? o.failure_reason ?? '—'}</td>
                  <td>
                    <Time at={o.dispatched_at} />
                  </td>
                  <td>
                    <Time at={o.settled_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section data-testid="refund">
        <h2>Refund</h2>
        {d.refund ? (
          <dl className="refund">
            <div>
              <dt>Refund</dt>
              <dd>
                <Id id={d.refund.id} />{' '}
                <span className={`status r-${d.refund.status}`}>{d.refund.status}</span>
              </dd>
            </div>
            <div>
              <dt>Amount</dt>
              <dd>
                <Money amount={d.refund.refund_amount} currency={d.refund.refund_currency} /> (received{' '}
                <Money amount={d.refund.received_amount} currency={d.refund.received_currency} />, fee{' '}
                <Money amount={d.refund.network_fee_amount} currency={d.refund.network_fee_currency} />)
              </dd>
            </div>
            <div>
              <dt>To</dt>
              <dd>
                {d.refund.destination_type} {d.refund.destination_provider_name} {d.refund.destination_masked}
              </dd>
            </div>
            <div>
              <dt>Attempt</dt>
              <dd>
                {d.refund.attempt_number} · {d.refund.failure_reason ?? 'no failure'}
              </dd>
            </div>
          </dl>
        ) : (
          <p className="empty">No refund.</p>
        )}
        {d.payout.status === 'SUCCESSFUL' ? <OverpaymentReturn payoutId={payoutId} /> : null}
      </section>
      <section>
        <h2>Webhook deliveries</h2>
        {d.deliveries.length === 0 ? (
          <p className="empty">No delivery recorded.</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th>Event</th>
                <th>Attempt</th>
                <th>Status</th>
                <th>Response</th>
                <th>Endpoint</th>
                <th>At</th>
              </tr>
            </thead>
            <tbody>
              {d.deliveries.map((w) => (
                <tr key={w.id}>
                  <td>{w.event_type}</td>
                  <td>{w.attempt_number}</td>
                  <td>{w.status}</td>
                  <td>{w.failure_reason ?? w.response_status}</td>
                  <td className="url">{w.target_url}</td>
                  <td>
                    <Time at={w.created_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </main>
  );
}
