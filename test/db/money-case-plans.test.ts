import { expect } from 'chai';
import { casesStatementText } from '#src/compliance/counts.ts';
import { committedModel } from '#src/docs/generate.ts';
import { harness } from '../harness.ts';
import { preparedPlans } from './prepared-plans.ts';

/**
 * The Machines page counts failed payouts apart by where the ledger says their money is. It reads
 * the entries of those payouts only, through the payout index, never the entries whole: its cost is
 * the failed payouts' entries, not the ledger's size. Planned, as prepared statements are, over a
 * long history of other payouts' entries and a few failed payouts.
 */

describe('the money cases of the Machines page, planned over a long history', function () {
  this.timeout(120_000);

  before(async () => {
    const em = harness().service.deps.orm.em.fork();
    await em.transactional(async (tx) => {
      // 2,000 payouts' money through the books (6 entries each), none of them a payout row.
      await tx.execute(`
        insert into ledger_entries (id, transaction_id, account, currency, amount, tenant_id, payout_id, movement,
            cause_object, cause_id, transition, created_at)
        select gen_random_uuid(), s.tx, e.account, 'USDT', e.amount, s.t, s.p, e.movement, 'payout', s.p,
               'TEST (A → B)', now() - (s.n || ' seconds')::interval
          from (select n, gen_random_uuid() as t, gen_random_uuid() as p, gen_random_uuid() as tx
                  from generate_series(1, 2000) n) s
          cross join lateral (values
            ('collection:bank:' || s.n, -100, null),
            ('tenants:' || s.t || ':suspense', 100, null),
            ('tenants:' || s.t || ':suspense', -100, null),
            ('tenants:' || s.t || ':payouts:' || s.p, 100, 'money_received'),
            ('tenants:' || s.t || ':payouts:' || s.p, -100, 'paid_out'),
            ('world:beneficiaries', 100, null)) as e(account, amount, movement)`);
    });
    await em.execute('analyze ledger_entries');
    await em.execute('analyze payouts');
  });

  it('reads the entries of the failed payouts through the payout index, never the entries whole', async () => {
    const text = casesStatementText(committedModel());
    expect(text, 'the payout machine has money cases').to.not.equal(null);
    const plans = await preparedPlans(text!);
    for (const nodes of plans) {
      const reads = nodes
        .filter(
          (n) =>
            n['Relation Name'] === 'ledger_entries' ||
            (n['Node Type'] === 'Bitmap Index Scan' && n['Index Name']?.startsWith('ledger_entries_')),
        )
        .map((n) => `${n['Node Type']}${n['Index Name'] ? ` using ${n['Index Name']}` : ''}`);
      expect(reads.length, 'it reads the entries').to.be.above(0);
      for (const read of reads) {
        expect(read).to.match(
          /^(Index Scan|Bitmap Heap Scan|Bitmap Index Scan)( using ledger_entries_payout_idx)?$/,
        );
      }
    }
  });
});
