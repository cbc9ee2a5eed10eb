import { Migration } from '@mikro-orm/migrations';

/** What a proposal puts at stake (tenant, amount, currency, its target's state), kept with it. */
export class Migration20261128140100_approval_stake extends Migration {
  override name = 'Migration20261128140100_approval_stake';

  override up(): void | Promise<void> {
    this.addSql(`alter table "approvals" add column "stake" jsonb null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "approvals" drop column if exists "stake";`);
  }
}
