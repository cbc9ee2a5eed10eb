import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { casesStatementText } from '#src/compliance/counts.ts';
import { committedModel } from '#src/docs/generate.ts';
import { harness } from '../harness.ts';
import { entryReads, writeLedgerHistory } from './ledger-history.ts';

/**
 * The Machines page counts failed payouts apart by where the ledger says their money is, and the
 * payout page tells one payout's case with the same statement restricted to it. It reads
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
      await writeLedgerHistory(tx, 2000);
    });
    await em.execute('analyze ledger_entries');
    await em.execute('analyze payouts');
  });

  it('reads the entries of the failed payouts through the payout index, never the entries whole', async () => {
    const text = casesStatementText(committedModel());
    expect(text, 'the payout machine has money cases').to.not.equal(null);
    for (const reads of await entryReads(text!)) {
      expect(reads.length, 'it reads the entries').to.be.above(0);
      for (const read of reads) {
        expect(read).to.match(
          /^(Index Scan|Bitmap Heap Scan|Bitmap Index Scan)( using ledger_entries_payout_idx)?$/,
        );
      }
    }
  });

  it("tells one payout's case from that payout's entries alone, through the payout index", async () => {
    const text = casesStatementText(committedModel(), { onePayout: true });
    for (const reads of await entryReads(text!, `('${randomUUID()}')`)) {
      expect(reads.length, 'it reads the entries').to.be.above(0);
      for (const read of reads) {
        expect(read).to.match(
          /^(Index Scan|Bitmap Heap Scan|Bitmap Index Scan)( using ledger_entries_payout_idx)?$/,
        );
      }
    }
  });
});
