import { Migration } from '@mikro-orm/migrations';

/**
 * An inflow's new final state FOR_REFUND (`machines/inflow.machine.ts`): money held against a
 * payout that failed, which the payout's refund returns. Only the state's check changes here; the
 * inflows still HELD against a FAILED payout are moved by the settlement job through their
 * machine (`sweepHeldOfFailedPayouts` in src/settlement/payout-failure.ts), not by this migration.
 */
export class Migration20261126235500_inflow_for_refund extends Migration {
  override name = 'Migration20261126235500_inflow_for_refund';

  override up(): void | Promise<void> {
    this.addSql(`alter table "inflows" drop constraint if exists "inflows_state_check";`);
    this.addSql(
      `alter table "inflows" add constraint "inflows_state_check" check ("state" in ('PENDING_CONFIRMATION', 'CONFIRMED', 'MATCHED', 'HELD', 'UNMATCHED', 'RETURNED', 'FOR_REFUND'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "inflows" drop constraint if exists "inflows_state_check";`);
    this.addSql(
      `alter table "inflows" add constraint "inflows_state_check" check ("state" in ('PENDING_CONFIRMATION', 'CONFIRMED', 'MATCHED', 'HELD', 'UNMATCHED', 'RETURNED'));`,
    );
  }
}
