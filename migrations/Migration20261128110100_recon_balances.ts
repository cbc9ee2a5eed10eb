import { Migration } from '@mikro-orm/migrations';

export class Migration20261128110100_recon_balances extends Migration {
  override name = 'Migration20261128110100_recon_balances';

  override up(): void | Promise<void> {
    this.addSql(
      `alter table "recon_accounts" add "rail_balance" numeric null, add "ledger_balance" numeric null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "recon_accounts" drop column "rail_balance", drop column "ledger_balance";`);
  }
}
