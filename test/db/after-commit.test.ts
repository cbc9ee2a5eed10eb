import { expect } from 'chai';
import { afterCommit } from '#src/db/after-commit.ts';
import { emSql } from '#src/db/sql.ts';
import { applyPayoutEvent } from '#src/payouts/lifecycle.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import { deps, payoutWithInstruction } from '../settlement/fixtures.ts';

/** How many payout status changes the service has counted (`payout_transitions_total`). */
async function transitionsCounted(): Promise<number> {
  const { values } = await deps().metrics.payoutTransitions.get();
  return values.reduce((sum, v) => sum + v.value, 0);
}

class RolledBack extends Error {}

/** Runs `work` and swallows the RolledBack it throws to end its transaction. */
async function rolledBack(work: () => Promise<unknown>): Promise<void> {
  try {
    await work();
    expect.fail('the transaction was to roll back');
  } catch (err) {
    if (!(err instanceof RolledBack)) throw err;
  }
}

describe('observers are told after the commit', () => {
  it('counts a payout status change once its transaction commits, and never one rolled back', async () => {
    const merchant = await payoutReadyMerchant();
    const { id } = await payoutWithInstruction(merchant);
    const before = await transitionsCounted();
    const expire = { type: 'INSTRUCTION_EXPIRED', triggeredBy: 'SYSTEM', now: deps().clock.now() } as const;

    await rolledBack(() =>
      deps()
        .orm.em.fork()
        .transactional(async (tx) => {
          const t = await applyPayoutEvent(tx, id, expire);
          expect(t.to).to.equal('EXPIRED');
          await tx.flush();
          throw new RolledBack();
        }),
    );
    expect(await transitionsCounted(), 'a rolled-back change').to.equal(before);

    let inside = -1;
    await deps()
      .orm.em.fork()
      .transactional(async (tx) => {
        await applyPayoutEvent(tx, id, expire);
        await tx.flush();
        inside = await transitionsCounted();
      });
    expect(inside, 'not yet told while the transaction is open').to.equal(before);
    expect(await transitionsCounted(), 'told after the commit').to.equal(before + 1);
  });

  for (const path of ['the service Sql', 'an EntityManager'] as const) {
    it(`runs what ${path} buffered after its commit, and nothing of a rollback`, async () => {
      const told: string[] = [];
      const sql = path === 'the service Sql' ? deps().sql : emSql(deps().orm.em.fork());
      await sql.transaction(async (tx) => {
        tx.afterCommit(() => told.push('committed'));
        await tx.transaction(async (inner) => inner.afterCommit(() => told.push('nested')));
        expect(told, 'nothing while open').to.deep.equal([]);
      });
      expect(told).to.deep.equal(['committed', 'nested']);
      await rolledBack(() =>
        sql.transaction(async (tx) => {
          tx.afterCommit(() => told.push('rolled back'));
          throw new RolledBack();
        }),
      );
      sql.afterCommit(() => told.push('outside a transaction'));
      expect(told).to.deep.equal(['committed', 'nested', 'outside a transaction']);
    });
  }

  it('keeps what a released savepoint buffered for the outer commit, and drops a savepoint rolled back to', async () => {
    const told: string[] = [];
    await deps()
      .orm.em.fork()
      .transactional(async (tx) => {
        afterCommit(tx, () => told.push('outer'));
        await tx.transactional(async (sp) => {
          afterCommit(sp, () => told.push('released savepoint'));
          await sp.transactional(async (deeper) => afterCommit(deeper, () => told.push('savepoint in it')));
        });
        await rolledBack(() =>
          tx.transactional(async (sp) => {
            afterCommit(sp, () => told.push('savepoint rolled back to'));
            throw new RolledBack();
          }),
        );
        expect(told, 'nothing before the outer commit').to.deep.equal([]);
      });
    expect(told).to.deep.equal(['outer', 'released savepoint', 'savepoint in it']);

    told.length = 0;
    await rolledBack(() =>
      deps()
        .orm.em.fork()
        .transactional(async (tx) => {
          await tx.transactional(async (sp) =>
            afterCommit(sp, () => told.push('released, then all rolled back')),
          );
          throw new RolledBack();
        }),
    );
    expect(told).to.deep.equal([]);
  });

  it('does not turn a committed transaction into an error when a callback throws', async () => {
    const warned: Error[] = [];
    const onWarning = (w: Error) => warned.push(w);
    process.on('warning', onWarning);
    try {
      const result = await deps().sql.transaction(async (tx) => {
        tx.afterCommit(() => {
          throw new Error('observer broke');
        });
        return 'committed';
      });
      expect(result).to.equal('committed');
      await new Promise((resolve) => setImmediate(resolve));
      expect(warned.map((w) => w.message)).to.include('observer broke');
    } finally {
      process.off('warning', onWarning);
    }
  });
});
