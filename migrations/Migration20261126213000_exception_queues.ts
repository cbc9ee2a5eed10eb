import { Migration } from '@mikro-orm/migrations';

/**
 * Indexes for the operators' console: the live counts per state (`admin.machines`, a GROUP BY of
 * each status column read from an index) and the exception queues (`admin.exceptions`, each read
 * from a partial index holding exactly its rows), so neither reads a whole hot table. Payouts have
 * no index on the status alone: their counts read `payouts_status_index`, which a tenant's list in
 * one status reads in order; an index on the status alone would cost every create one more insert
 * and lead the planner to read a rare status from it and sort the page.
 */
export class Migration20261126213000_exception_queues extends Migration {
  override name = 'Migration20261126213000_exception_queues';

  override up(): void | Promise<void> {
    this.addSql(
      `create index "payouts_held_underpaid_index" on "payouts" ("id") where "status" = 'PENDING_PAYMENT' and (("snapshot" -> 'value') ->> 'PENDING_PAYMENT') = 'held';`,
    );
    this.addSql(
      `create index "payouts_money_held_index" on "payouts" ("updated_at") where "status" = 'FAILED' and "is_refunded" = false and "received_amount" > 0;`,
    );
    this.addSql(
      `create index "inflows_unmatched_index" on "inflows" ("arrived_at") where "state" = 'UNMATCHED' or ("state" = 'HELD' and "payout_id" is null);`,
    );
    this.addSql(`create index "refunds_state_index" on "refunds" ("status");`);
    this.addSql(`create index "refunds_failed_index" on "refunds" ("updated_at") where "status" = 'FAILED';`);
    this.addSql(`create index "quotes_state_index" on "quotes" ("status");`);
    this.addSql(`create index "webhook_deliveries_state_index" on "webhook_deliveries" ("status");`);
    this.addSql(
      `create index "webhook_deliveries_dead_since_index" on "webhook_deliveries" ("updated_at") where "status" = 'DEAD';`,
    );
  }

  override down(): void | Promise<void> {
    for (const index of [
      'payouts_held_underpaid_index',
      'payouts_money_held_index',
      'inflows_unmatched_index',
      'refunds_state_index',
      'refunds_failed_index',
      'quotes_state_index',
      'webhook_deliveries_state_index',
      'webhook_deliveries_dead_since_index',
    ]) {
      this.addSql(`drop index if exists "${index}";`);
    }
  }
}
