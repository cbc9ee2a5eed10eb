import type { EntityManager } from '@mikro-orm/postgresql';
import { harness } from '../harness.ts';
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

/** `ledger_entries` or one of its monthly partitions (`ledger_entries_p2026_11`, `ledger_entries_default`). */
export const isEntries = (relation: string | undefined): boolean =>
  relation !== undefined && /^ledger_entries(_p\d{4}_\d{2}|_default)?$/.test(relation);

/** The most pages a partition of entries has to count as small (64 kB: some hundreds of entries). */
const SMALL_PAGES = 8;

/**
 * The entries' partitions and their indexes: each index by the name of the partitioned table's
 * index it belongs to (a partition's copy of `ledger_entries_payout_idx` reads as that), and the
 * partitions of a few pages at most (empty, or the rows other tests wrote in a coming month: the
 * reconciliation tests' late returns fall days ahead). Such a partition reads about the same whole
 * or through an index: the planner may well pick a sequential scan there, and that is no read of
 * the entries whole, whose history the plan tests put in partitions of hundreds of pages.
 */
export async function entryPartitions(
  within?: EntityManager,
): Promise<{ rootIndex: Map<string, string>; small: Set<string> }> {
  const em = within ?? harness().service.deps.orm.em.fork();
  const indexes = await em.execute<{ name: string; root: string; part: string }[]>(
    `select ic.relname as name, coalesce(pg_partition_root(ic.oid)::regclass::text, ic.relname) as root,
            i.indrelid::regclass::text as part
       from pg_index i join pg_class ic on ic.oid = i.indexrelid
      where i.indrelid in (select inhrelid from pg_inherits where inhparent = 'ledger_entries'::regclass)
         or i.indrelid = 'ledger_entries'::regclass`,
  );
  const small = new Set<string>();
  for (const part of new Set(indexes.map((i) => i.part))) {
    const [row] = await em.execute<{ small: boolean }[]>(
      `select pg_relation_size(?::regclass) <= ${SMALL_PAGES} * current_setting('block_size')::int as small`,
      [part],
    );
    if (row?.small) small.add(part);
  }
  for (const i of indexes) if (small.has(i.part)) small.add(i.name);
  return { rootIndex: new Map(indexes.map((i) => [i.name, i.root])), small };
}

/**
 * The nodes reading `ledger_entries` (any of its partitions larger than a page) in the plans of
 * `text` with `args`, generic and custom; indexes by the partitioned table's names.
 */
export async function entryReads(text: string, args = ''): Promise<string[][]> {
  const { rootIndex, small } = await entryPartitions();
  const index = (name: string | undefined) => (name ? (rootIndex.get(name) ?? name) : undefined);
  return (await preparedPlans(text, args)).map((nodes) =>
    nodes
      .filter(
        (n) =>
          (isEntries(n['Relation Name']) && !small.has(n['Relation Name']!)) ||
          (n['Node Type'] === 'Bitmap Index Scan' &&
            index(n['Index Name'])?.startsWith('ledger_entries_') &&
            !small.has(n['Index Name']!)),
      )
      .map((n) => `${n['Node Type']}${n['Index Name'] ? ` using ${index(n['Index Name'])}` : ''}`),
  );
}
