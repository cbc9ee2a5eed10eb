import { Migration } from '@mikro-orm/migrations';

export class Migration20261125090000_settlement_lookups extends Migration {
  override name = 'Migration20261125090000_settlement_lookups';

  override up(): void | Promise<void> {
    this.addSql(`create index "inflows_payout_id_index" on "inflows" ("payout_id");`);
    this.addSql(
      `create index "inflows_confirmed_queue_index" on "inflows" ("created_at", "id") where "state" = 'CONFIRMED';`,
    );
    this.addSql(
      `create index "payment_instructions_account_unique_expected_amount_index" on "payment_instructions" ("account_unique", "expected_amount");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "payment_instructions_account_unique_expected_amount_index";`);
    this.addSql(`drop index "inflows_confirmed_queue_index";`);
    this.addSql(`drop index "inflows_payout_id_index";`);
  }
}
