import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { Migration20261129090000_task_tenant as TaskTenant } from '../../migrations/Migration20261129090000_task_tenant.ts';
import { deps, failedPayoutWithRefund, merchantWith } from '../dispatch/fixtures.ts';
import { migrationSteps } from './migration-steps.ts';

/**
 * The migration that gives tasks their subject's tenant, run down and up again on the test
 * database once a payout has failed and has a refund, with open tasks of both kinds of subject, in
 * a transaction rolled back at the end.
 */
describe("tasks naming their subject's tenant (Migration20261129090000)", () => {
  it('fills the tenant of open tasks from their payout or refund, and leaves done tasks and lost subjects without', async () => {
    const merchant = await merchantWith();
    const { payoutId, refund } = await failedPayoutWithRefund(merchant, 'USDT');

    const { orm } = deps();
    const statements = migrationSteps(new TaskTenant(orm.em.getDriver(), orm.config));
    const rolledBack = new Error('rolled back');
    await orm.em
      .fork()
      .transactional(async (em) => {
        const lost = randomUUID();
        await statements(em, 'down');
        const now = new Date();
        await em.execute('update tasks set done_at = ? where subject_id in (?, ?) and done_at is null', [
          now,
          payoutId,
          refund.id,
        ]);
        const open = { payout: randomUUID(), refund: randomUUID(), lost: randomUUID() };
        for (const [id, kind, subject] of [
          [open.payout, 'RAISE_REFUND', payoutId],
          [open.refund, 'DISPATCH_REFUND', refund.id],
          [open.lost, 'DISPATCH', lost],
        ]) {
          await em.execute(
            `insert into tasks (id, kind, subject_id, due_at, attempts, created_at, updated_at)
             values (?, ?, ?, ?, 0, ?, ?)`,
            [id, kind, subject, now, now, now],
          );
        }

        await statements(em, 'up');
        const tenants = await em.execute<{ id: string; done: boolean; tenant_id: string | null }[]>(
          `select id, done_at is not null as done, tenant_id from tasks where subject_id in (?, ?, ?)`,
          [payoutId, refund.id, lost],
        );
        const tenantOf = (id: string) => tenants.find((t) => t.id === id)?.tenant_id;
        expect(tenantOf(open.payout), "a payout's task").to.equal(merchant.tenantId);
        expect(tenantOf(open.refund), "a refund's task").to.equal(merchant.tenantId);
        expect(tenantOf(open.lost), 'a task whose subject is gone').to.equal(null);
        const done = tenants.filter((t) => t.done);
        expect(done.length, 'the payout went through several tasks').to.be.greaterThan(1);
        expect(done.map((t) => t.tenant_id)).to.deep.equal(done.map(() => null));
        throw rolledBack;
      })
      .catch((err: unknown) => {
        if (err !== rolledBack) throw err;
      });
  });
});
