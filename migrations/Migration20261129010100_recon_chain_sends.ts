import { Migration } from '@mikro-orm/migrations';

/**
 * Reconciliation reads the chains' sends out of the hot wallet (refunds sent on a chain) from
 * cursors of its own (`RECON_TRON_SENDS`, `RECON_BSC_SENDS`), and finds the chain refunds that
 * reached the merchant on a day through an index, as it finds the bank's.
 */
export class Migration20261129010100_recon_chain_sends extends Migration {
  override name = 'Migration20261129010100_recon_chain_sends';

  override up(): void | Promise<void> {
    this.addSql(`alter table "rail_cursors" drop constraint "rail_cursors_source_check";`);
    this.addSql(
      `alter table "rail_cursors" add constraint "rail_cursors_source_check" check ("source" in ('TRON', 'BSC', 'BANK', 'RECON_TRON', 'RECON_BSC', 'RECON_BANK', 'RECON_TRON_SENDS', 'RECON_BSC_SENDS'));`,
    );
    this.addSql(
      `create index "refunds_crypto_settled_index" on "refunds" ("settled_at") where "status" = 'SUCCESSFUL' and "destination_type" = 'CRYPTO_ADDRESS';`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "refunds_crypto_settled_index";`);
    this.addSql(`delete from "rail_cursors" where "source" like 'RECON_%_SENDS';`);
    this.addSql(`alter table "rail_cursors" drop constraint "rail_cursors_source_check";`);
    this.addSql(
      `alter table "rail_cursors" add constraint "rail_cursors_source_check" check ("source" in ('TRON', 'BSC', 'BANK', 'RECON_TRON', 'RECON_BSC', 'RECON_BANK'));`,
    );
  }
}
