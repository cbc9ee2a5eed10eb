import { Migration } from '@mikro-orm/migrations';

/**
 * A payout's `metadata`: the merchant's own keys and string values (at most 20, checked by the
 * API), returned with the payout and in its webhooks. Existing payouts have none: `{}`.
 */
export class Migration20261128120000_payout_metadata extends Migration {
  override name = 'Migration20261128120000_payout_metadata';

  override up(): void | Promise<void> {
    this.addSql(`alter table "payouts" add column "metadata" jsonb not null default '{}';`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "payouts" drop column "metadata";`);
  }
}
