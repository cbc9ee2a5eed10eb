import type { EntityManager } from '@mikro-orm/postgresql';
import { preparedPlans } from './prepared-plans.ts';

/**
 * A long history for the ledger's plan tests: `payouts` payouts' money through the books, six
 * entries each (received on a bank account, through the tenant's suspense to the payout, paid
 * out), none of them a payout row.
 */
export async function writeLedgerHistory(tx: EntityManager, payouts: number): Promise<void> {
  await tx.execute(`
    insert into ledger_entries (id, transaction_id, account, currency, amount, tenant_id, payout_id, movement,
        cause_object, cause_id, transition, created_at)
    select gen_random_uuid(), s.tx, e.account, 'USDT', e.amount, s.t, s.p, e.movement, 'payout', s.p,
           'TEST (A → B)', now() - (s.n || ' seconds')::interval
      from (select n, gen_random_uuid() as t, gen_random_uuid() as p, gen_random_uuid() as tx
              from generate_series(1, ${Math.trunc(payouts)}) n) s
      cross join lateral (values
        ('collection:bank:' || s.n, -100, null),
        ('tenants:' || s.t || ':suspense', 100, null),
        ('tenants:' || s.t || ':suspense', -100, null),
        ('tenants:' || s.t || ':payouts:' || s.p, 100, 'money_received'),
        ('tenants:' || s.t || ':payouts:' || s.p, -100, 'paid_out'),
        ('world:beneficiaries', 100, null)) as e(account, amount, movement)`);
}

/** The nodes reading `ledger_entries` in the plans of `text` with `args`, generic and custom. */
export async function entryReads(text: string, args = ''): Promise<string[][]> {
  return (await preparedPlans(text, args)).map((nodes) =>
    nodes
      .filter(
        (n) =>
          n['Relation Name'] === 'ledger_entries' ||
          (n['Node Type'] === 'Bitmap Index Scan' && n['Index Name']?.startsWith('ledger_entries_')),
      )
      .map((n) => `${n['Node Type']}${n['Index Name'] ? ` using ${n['Index Name']}` : ''}`),
  );
}
