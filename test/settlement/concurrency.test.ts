import { expect } from 'chai';
import { scanChain } from '#src/settlement/chain-scan.ts';
import { Inflow } from '#src/settlement/entities.ts';
import { matchInflow } from '#src/settlement/matching.ts';
import { harness } from '../harness.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import { needsPostgresServer } from '../skip.ts';
import {
  confirmationsOf,
  deps,
  inflowByRef,
  mine,
  payoutWithInstruction,
  sendUsdt,
  settle,
} from './fixtures.ts';

/**
 * Two instances side by side: what one holds, the other skips. Needs a second database session
 * while the first holds its locks, which the embedded PostgreSQL (one session) cannot give.
 */
describe('settlement with several instances', () => {
  before(function () {
    needsPostgresServer(this, 'several sessions at once');
  });

  /** Runs `work` while another session holds `lockSql` in an open transaction. */
  async function whileLocked<T>(lockSql: string, params: unknown[], work: () => Promise<T>): Promise<T> {
    const { promise: release, resolve } = Promise.withResolvers<void>();
    const { promise: held, resolve: locked } = Promise.withResolvers<void>();
    const holder = deps()
      .orm.em.fork()
      .transactional(async (tx) => {
        await tx.execute(lockSql, params);
        locked();
        await release;
      });
    await held;
    try {
      return await work();
    } finally {
      resolve();
      await holder;
    }
  }

  it('never scans one network in two places at once: the second instance skips it', async () => {
    await settle();
    // Another instance is scanning TRON: it holds an unexpired lease on the cursor.
    const until = new Date(deps().clock.now().getTime() + 60_000);
    await deps()
      .orm.em.fork()
      .execute(
        "update rail_cursors set lease_token = gen_random_uuid(), lease_until = ? where source = 'TRON'",
        [until],
      );
    expect(await scanChain(deps(), 'TRON')).to.include({ scanned: false, recorded: 0 });
    // and while it saves a page, its row lock is skipped, not waited for
    const skipped = await whileLocked("select * from rail_cursors where source = 'TRON' for update", [], () =>
      scanChain(deps(), 'TRON'),
    );
    expect(skipped).to.include({ scanned: false, recorded: 0 });
    // A lease whose holder died lapses, and the network is scanned again.
    harness().clock.advance(60_001);
    expect((await scanChain(deps(), 'TRON')).scanned).to.equal(true);
  });

  it('leaves an inflow another instance is matching to that instance', async () => {
    const merchant = await payoutReadyMerchant();
    const payout = await payoutWithInstruction(merchant);
    const tx = await sendUsdt('TRON', payout.instruction.account_unique, payout.instruction.expected);
    await mine('TRON', confirmationsOf('TRON'));
    // Record and confirm without matching: scan only.
    await scanChain(deps(), 'TRON');
    const inflow = (await inflowByRef(tx))!;
    expect(inflow.state).to.equal('CONFIRMED');

    const outcome = await whileLocked('select id from inflows where id = ? for update', [inflow.id], () =>
      matchInflow(deps(), { id: inflow.id, tenantId: inflow.tenant.id }),
    );
    expect(outcome).to.equal(null);
    expect((await deps().orm.em.fork().findOneOrFail(Inflow, inflow.id)).state).to.equal('CONFIRMED');
    expect((await matchInflow(deps(), { id: inflow.id, tenantId: inflow.tenant.id }))?.state).to.equal(
      'MATCHED',
    );
  });
});
