import { Migration } from '@mikro-orm/migrations';

/**
 * The merchant lists' filters read their pages in index order, like the unfiltered lists: payouts
 * by status and by merchant_reference (only payouts that carry one), inflows by is_matched, delivery
 * records by status, event type and payout.
 */
export class Migration20261126044908_list_filters extends Migration {
  override name = 'Migration20261126044908_list_filters';

  override up(): void | Promise<void> {
    this.addSql(
      `create index "payouts_status_index" on "payouts" ("tenant_id", "status", "created_at", "id");`,
    );
    this.addSql(
      `create index "payouts_merchant_reference_index" on "payouts" ("tenant_id", "merchant_reference", "created_at", "id") where "merchant_reference" is not null;`,
    );

    this.addSql(
      `create index "inflows_is_matched_index" on "inflows" ("tenant_id", "is_matched", "created_at", "id");`,
    );

    this.addSql(
      `create index "webhook_delivery_attempts_status_index" on "webhook_delivery_attempts" ("tenant_id", "status", "created_at", "id");`,
    );
    this.addSql(
      `create index "webhook_delivery_attempts_event_type_index" on "webhook_delivery_attempts" ("tenant_id", "event_type", "created_at", "id");`,
    );
    this.addSql(
      `create index "webhook_delivery_attempts_payout_index" on "webhook_delivery_attempts" ("tenant_id", "payout_id", "created_at", "id");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "inflows_is_matched_index";`);

    this.addSql(`drop index "payouts_status_index";`);
    this.addSql(`drop index "payouts_merchant_reference_index";`);

    this.addSql(`drop index "webhook_delivery_attempts_status_index";`);
    this.addSql(`drop index "webhook_delivery_attempts_event_type_index";`);
    this.addSql(`drop index "webhook_delivery_attempts_payout_index";`);
  }
}
