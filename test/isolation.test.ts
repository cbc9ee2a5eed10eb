import { expect } from 'chai';
import { harness } from './harness.ts';
import { endFile, isOwnTenant, patchConfig } from './isolation.ts';
import { payoutReadyMerchant } from './payouts/fixtures.ts';
import {
  confirmationsOf,
  deps,
  inflowByRef,
  mine,
  payoutWithInstruction,
  sendUsdt,
  settle,
} from './settlement/fixtures.ts';

/**
 * The run shares one service, database and clock: what a test leaves behind must not fail the
 * tests after it (test/isolation.ts). The tests of this file run in order: each checks what the
 * one before it left.
 */
describe('what a test leaves to the next', () => {
  const config = () => harness().service.deps.config;
  let started: { fourEyes: boolean; private: boolean; ttl: number };

  it('a test patches settings, with patchConfig and in place, and ends without undoing them', () => {
    started = {
      fourEyes: config().FOUR_EYES,
      private: config().WEBHOOK_ALLOW_PRIVATE_URLS,
      ttl: config().APPROVAL_TTL_HOURS,
    };
    patchConfig({ FOUR_EYES: !started.fourEyes, APPROVAL_TTL_HOURS: 1 });
    config().WEBHOOK_ALLOW_PRIVATE_URLS = !started.private;
    expect(config().FOUR_EYES).to.equal(!started.fourEyes);
    expect(config().APPROVAL_TTL_HOURS).to.equal(1);
  });

  it('the next test finds the settings as the run started them', () => {
    expect(config().FOUR_EYES).to.equal(started.fourEyes);
    expect(config().WEBHOOK_ALLOW_PRIVATE_URLS).to.equal(started.private);
    expect(config().APPROVAL_TTL_HOURS).to.equal(started.ttl);
  });

  it('a file that set the clock back leaves it at the latest time the run showed', () => {
    const clock = harness().clock;
    clock.advance(60_000);
    const latest = clock.now().getTime();
    clock.set(new Date(latest - 3_600_000));
    endFile();
    expect(clock.now().getTime()).to.equal(latest);
    // A clock already at its latest stays where it is.
    endFile();
    expect(clock.now().getTime()).to.equal(latest);
  });

  it('settle() fails on an inflow of this file that fails to match, not on one of another file', async () => {
    const merchant = await payoutReadyMerchant();
    expect(isOwnTenant(merchant.tenantId)).to.equal(true);
    const broken = await payoutWithInstruction(merchant, { destination_amount: 150000 });
    // Its instruction's snapshot disagrees with its status: the machine refuses to step it.
    const breakInstruction = (value: string) =>
      deps()
        .orm.em.fork()
        .execute(
          `update payment_instructions set snapshot = jsonb_set(snapshot, '{value}', ?) where id = ?`,
          [JSON.stringify(value), broken.instruction.id],
        );
    await breakInstruction('EXPIRED');
    try {
      const ref = await sendUsdt('TRON', broken.instruction.account_unique, broken.instruction.expected);
      await mine('TRON', confirmationsOf('TRON'));
      let refused: Error | undefined;
      await settle().catch((err: Error) => {
        refused = err;
      });
      const inflow = await inflowByRef(ref);
      expect(inflow?.state).to.equal('CONFIRMED');
      expect(refused?.message)
        .to.include("this file's inflows whose matching failed")
        .and.include(inflow?.id);

      // The next file did not make that tenant: the same failure is not its to answer for.
      endFile();
      expect(isOwnTenant(merchant.tenantId)).to.equal(false);
      const run = await settle();
      expect(run.matching.failedInflows).to.include(inflow?.id);
    } finally {
      await breakInstruction('UNPAID');
    }
    await settle();
  });
});
