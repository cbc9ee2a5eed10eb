import { Migration } from '@mikro-orm/migrations';

/**
 * The exception queue PAYOUTS_OVERPAYMENT_TO_RETURN (`admin.exceptions`, `admin.refunds.overpayments`):
 * successful payouts that set an overpayment aside, read in page order from a partial index of
 * them. Those whose excess went back (a refund of the payout) are ruled out by the refunds' unique
 * (payout_id, tenant_id) index.
 */
export class Migration20261130150000_overpayments_queue extends Migration {
  override name = 'Migration20261130150000_overpayments_queue';

  override up(): void | Promise<void> {
    this.addSql(
      `create index "payouts_overpayment_index" on "payouts" ("created_at", "id") include ("updated_at", "tenant_id") where "status" = 'SUCCESSFUL' and "received_amount" > "settlement_amount";`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "payouts_overpayment_index";`);
  }
}
