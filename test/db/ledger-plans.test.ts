import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { balancesUnder, entriesOfAccount, entriesOfPayout } from '#src/ledger/read.ts';
import { movementsPage, ofPayout } from '#src/money-movements/router.ts';
import { harness } from '../harness.ts';
import { entryReads, writeLedgerHistory } from './ledger-history.ts';

/**
 * The ledger's reads never read the entries whole: balances come from `ledger_balances` and its
 * pending deltas and do not touch `ledger_entries` at all, whatever its size; an account's entries,
 * a payout's and a tenant's movements come through their indexes. Planned, as prepared statements
 * are (generic and custom plans), over a history of many payouts' entries.
 */

const INDEXED =
  /^(Index Scan|Index Only Scan|Bitmap Heap Scan|Bitmap Index Scan)( using ledger_entries_\w+)?$/;

describe('the ledger’s reads, planned over a long history', function () {
  this.timeout(120_000);
  const tenant = randomUUID();
  const payout = randomUUID();

  before(async () => {
    // 2,000 payouts of 6 entries each, then one of our own, then fresh statistics.
    const em = harness().service.deps.orm.em.fork();
    await em.transactional(async (tx) => {
      await writeLedgerHistory(tx, 2000);
      const tx1 = randomUUID();
      await tx.execute(
        `insert into ledger_entries (id, transaction_id, account, currency, amount, tenant_id, payout_id, movement,
            cause_object, cause_id, transition, created_at)
         select gen_random_uuid(), ?, e.account, 'USDT', e.amount, ?, ?, e.movement, 'payout', ?, 'TEST (A → B)', now()
           from (values (?, 5, 'money_received'), (?, -5, null)) as e(account, amount, movement)`,
        [tx1, tenant, payout, payout, `tenants:${tenant}:payouts:${payout}`, `tenants:${tenant}:suspense`],
      );
    });
    await em.execute('analyze ledger_entries');
    await em.execute('analyze ledger_balance_deltas');
    await em.execute('analyze ledger_balances');
  });

  it('reads balances without touching the entries', async () => {
    for (const plan of await entryReads(balancesUnder.text, "('tenants:')")) expect(plan).to.deep.equal([]);
    for (const plan of await entryReads(balancesUnder.text, "('')")) expect(plan).to.deep.equal([]);
  });

  it("reads an account's entries, a payout's and a tenant's movements through indexes", async () => {
    const epoch = "'1970-01-01T00:00:00Z'";
    const cases: [string, string][] = [
      [
        entriesOfAccount.text,
        `('world:beneficiaries', ${epoch}, '9999-01-01T00:00:00Z', ${epoch}, '00000000-0000-0000-0000-000000000000', 100)`,
      ],
      [entriesOfPayout.text, `('${payout}')`],
      [ofPayout.text, `('${payout}', '${tenant}')`],
      [movementsPage.text, `('${tenant}', null, null, null, null, null, null, 21)`],
      [movementsPage.text, `('${tenant}', '${payout}', null, null, null, null, null, 21)`],
    ];
    for (const [text, args] of cases) {
      for (const plan of await entryReads(text, args)) {
        expect(plan, text).to.not.be.empty;
        for (const node of plan) expect(node, text).to.match(INDEXED);
      }
    }
  });
});
