import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { ACCOUNT_KINDS, type AccountGroup, accountKindOf } from '../../../ledger/chart.ts';
import { api } from '../api.ts';
import { Failure, Id, Link, Money, Time } from '../ui.tsx';

/**
 * Money: where all the money is right now, read from the ledger (`admin.ledger.*`). Balances by
 * account and currency, grouped by where the money is; an account opens onto its entries, each
 * naming what caused it and the payout it belongs to.
 */

const GROUPS: { group: AccountGroup; title: string; lead: string }[] = [
  {
    group: 'rail',
    title: 'Came in',
    lead: 'What arrived on our deposit addresses and virtual accounts (shown as minus what came in).',
  },
  {
    group: 'tenant',
    title: "Merchants' money with us",
    lead: 'Held for a payout, not yet attributed, or owed back.',
  },
  {
    group: 'transit',
    title: 'On its way',
    lead: 'With the payout processor, or a refund travelling back to a merchant.',
  },
  {
    group: 'service',
    title: "The service's",
    lead: 'Fees kept, the conversion position, and differences with the rails booked by reconciliation.',
  },
  { group: 'world', title: 'Left the service', lead: 'Paid to beneficiaries, or back with merchants.' },
];

function kindOf(account: string) {
  const name = accountKindOf(account);
  return name ? ACCOUNT_KINDS[name] : null;
}

type Entry = Awaited<ReturnType<typeof api.admin.ledger.entries.query>>['data'][number];

function Entries({ account }: { account: string }) {
  const list = useQuery({
    queryKey: ['admin.ledger.entries', account],
    queryFn: () => api.admin.ledger.entries.query({ account, limit: 100 }),
  });
  const rows: Entry[] = list.data?.data ?? [];
  return (
    <div className="entries" data-entries-of={account}>
      <Failure error={list.error} />
      <table>
        <thead>
          <tr>
            <th>When</th>
            <th>Account</th>
            <th>Amount</th>
            <th>Why</th>
            <th>Payout</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((e) => (
            <tr key={e.id} data-entry={e.id}>
              <td>
                <Time at={e.created_at} />
              </td>
              <td>
                <code>{e.account}</code>
              </td>
              <td>
                <Money amount={e.amount} currency={e.currency} />
              </td>
              <td>
                {e.cause.object} <Id id={e.cause.id} />
                <div className="muted">{e.cause.transition}</div>
              </td>
              <td>
                {e.payout_id ? (
                  <Link to={`/console/payouts/${e.payout_id}`}>
                    payout <Id id={e.payout_id} />
                  </Link>
                ) : (
                  <span className="muted">—</span>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {rows.length === 0 && !list.isPending ? <p className="empty">No entries.</p> : null}
      {list.data?.next ? <p className="muted">Showing the first 100 entries.</p> : null}
    </div>
  );
}

export function MoneyPage() {
  const balances = useQuery({
    queryKey: ['admin.ledger.balances'],
    queryFn: () => api.admin.ledger.balances.query({}),
  });
  const [open, setOpen] = useState<string | null>(null);
  const rows = balances.data?.data ?? [];
  return (
    <main className="page money">
      <h1>Money</h1>
      <p className="lead">
        Where all the money is right now, from the ledger: every unit that came in is somewhere below, and the
        lines of each currency add up to zero. Open a line to see the movements behind it and the payouts they
        belong to.
        {balances.data ? (
          <>
            {' '}
            Counted at <Time at={balances.data.counted_at} />.
          </>
        ) : null}
      </p>
      <Failure error={balances.error} />
      {GROUPS.map(({ group, title, lead }) => {
        const lines = rows.filter((r) => kindOf(r.account)?.group === group);
        return (
          <section key={group} data-group={group}>
            <h2>{title}</h2>
            <p className="muted">{lead}</p>
            <table data-testid={`balances-${group}`}>
              <thead>
                <tr>
                  <th>Account</th>
                  <th>Balance</th>
                  <th>Where, and whose</th>
                  <th>Entries</th>
                </tr>
              </thead>
              <tbody>
                {lines.map((r) => {
                  const kind = kindOf(r.account);
                  const key = `${r.account}:${r.currency}`;
                  return [
                    <tr key={key} data-account={r.account} data-currency={r.currency}>
                      <td>
                        <code>{r.account}</code>
                      </td>
                      <td>
                        <Money amount={r.balance} currency={r.currency} />
                      </td>
                      <td>
                        {kind?.where}
                        <div className="muted">{kind?.whose}</div>
                      </td>
                      <td>
                        {r.entries}{' '}
                        <button
                          type="button"
                          className="link"
                          data-testid="drill"
                          onClick={() => setOpen(open === key ? null : key)}
                        >
                          {open === key ? 'Hide' : 'Show entries'}
                        </button>
                      </td>
                    </tr>,
                    open === key ? (
                      <tr key={`${key}:entries`}>
                        <td colSpan={4}>
                          <Entries account={r.account} />
                        </td>
                      </tr>
                    ) : null,
                  ];
                })}
              </tbody>
            </table>
            {lines.length === 0 && !balances.isPending ? <p className="empty">Nothing here.</p> : null}
          </section>
        );
      })}
    </main>
  );
}
