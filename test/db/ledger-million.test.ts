import { expect } from 'chai';
import { balancesUnder } from '#src/ledger/read.ts';
import { harness } from '../harness.ts';
import { needsPostgresServer } from '../skip.ts';
import { isEntries } from './ledger-history.ts';
import { preparedPlans } from './prepared-plans.ts';

/**
 * The Money page's balances (`admin.ledger.balances`) at 1,000,000 ledger entries: read from the
 * balances table and its pending deltas, never from the entries. The entries are written with
 * generate_series in one transaction that is rolled back (its balanced-transaction check is
 * deferred to a commit that never comes, and the entries' secondary indexes are dropped inside it
 * and come back with the rollback), so filling and planning take seconds, not minutes.
 */

const ENTRIES = 1_000_000;

describe('the Money page’s balances at 1,000,000 ledger entries', function () {
  // Filling, analysing and planning must stay under a minute (asserted below, with the time taken).
  this.timeout(120_000);

  before(function () {
    needsPostgresServer(this, 'a million rows in the embedded database take minutes to write');
  });

  it('reads balances without a scan of ledger_entries', async () => {
    const started = performance.now();
    const rolledBack = new Error('rolled back');
    let seen: string[][] = [];
    let counted = 0;
    await harness()
      .service.deps.orm.em.fork()
      .transactional(async (tx) => {
        // The entries' own indexes are set aside for the fill (in this transaction only): the
        // balances read must not touch the entries through any path, indexed or not.
        await tx.execute(`do $$ declare r record; begin
            for r in select indexrelid::regclass as ix from pg_index
                      where indrelid = 'ledger_entries'::regclass and not indisprimary loop
              execute 'drop index ' || r.ix;
            end loop; end $$`);
        // Half a million balanced transactions of two entries: money received by one of 50,000
        // payouts out of its tenant's suspense (1,000 tenants). Ids in ascending order, so that the
        // primary key is appended to rather than written all over.
        await tx.execute(`
          insert into ledger_entries (id, transaction_id, account, currency, amount, tenant_id, payout_id,
              movement, cause_object, cause_id, transition, created_at)
          select (s.id || lpad(to_hex(2 * s.n + e.k), 12, '0'))::uuid, (s.id || lpad(to_hex(s.n), 12, '0'))::uuid,
                 e.account, 'USDT', e.amount, s.t, s.p, e.movement, 'inflow', s.p, 'MATCH (CONFIRMED → MATCHED)',
                 now() - s.n * interval '1 second'
            from (select n, '00000000-0000-4000-8000-' as id, md5('t' || (n % 1000))::uuid as t,
                         md5('p' || (n % 50000))::uuid as p
                    from generate_series(1, ${ENTRIES / 2}) n) s
           cross join lateral (values
             (0, 'tenants:' || s.t || ':payouts:' || s.p, 100, 'money_received'),
             (1, 'tenants:' || s.t || ':suspense', -100, null)) as e(k, account, amount, movement)`);
        const [row] = (await tx.execute('select count(*)::int as n from ledger_entries')) as { n: number }[];
        counted = row!.n;
        for (const table of ['ledger_entries', 'ledger_balances', 'ledger_balance_deltas'])
          await tx.execute(`analyze ${table}`);
        seen = [];
        for (const prefix of ['', 'tenants:', 'world:']) {
          for (const plan of await preparedPlans(balancesUnder.text, `('${prefix}')`, tx)) {
            seen.push(
              plan
                .filter(
                  (n) => isEntries(n['Relation Name']) || n['Index Name']?.startsWith('ledger_entries_'),
                )
                .map((n) => `${prefix}: ${n['Node Type']}`),
            );
          }
        }
        throw rolledBack;
      })
      .catch((err: unknown) => {
        if (err !== rolledBack) throw err;
      });
    expect(counted).to.be.at.least(ENTRIES);
    for (const plan of seen) expect(plan, 'nodes reading ledger_entries').to.deep.equal([]);
    expect(performance.now() - started, 'ms to fill, analyse and plan').to.be.below(60_000);
  });
});
