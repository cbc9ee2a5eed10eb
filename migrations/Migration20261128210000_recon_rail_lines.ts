import { Migration } from '@mikro-orm/migrations';

/**
 * Reconciliation reads each rail incrementally: the lines of the bank's statement and of the
 * chains' transfers it has read are kept (`recon_rail_lines`, found by day), with every collection
 * account's running total (`recon_rail_totals`), and its own cursors in `rail_cursors`
 * (`RECON_BANK`, `RECON_TRON`, `RECON_BSC`). The books of a day are read through indexes: inflows by
 * rail and arrival, outflows and bank refunds by the time they became final.
 */
export class Migration20261128210000_recon_rail_lines extends Migration {
  override name = 'Migration20261128210000_recon_rail_lines';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "recon_rail_lines" ("rail" text not null, "kind" text not null, "line_id" varchar(200) not null, "reference" varchar(200) not null, "account" varchar(300) not null, "ledger_account" varchar(300) null, "amount" numeric not null, "currency" varchar(8) not null, "occurred_at" timestamptz not null, primary key ("rail", "kind", "line_id"));`,
    );
    this.addSql(
      `alter table "recon_rail_lines" add constraint "recon_rail_lines_rail_check" check ("rail" in ('BANK_TRANSFER', 'CRYPTO'));`,
    );
    this.addSql(
      `alter table "recon_rail_lines" add constraint "recon_rail_lines_kind_check" check ("kind" in ('CREDIT', 'REVERSAL', 'DEBIT'));`,
    );
    this.addSql(`create index "recon_rail_lines_day_index" on "recon_rail_lines" ("rail", "occurred_at");`);
    this.addSql(
      `create table "recon_rail_totals" ("account" varchar(300) not null, "currency" varchar(8) not null, "rail" text not null, "amount" numeric not null, primary key ("account", "currency"));`,
    );
    this.addSql(
      `alter table "recon_rail_totals" add constraint "recon_rail_totals_rail_check" check ("rail" in ('BANK_TRANSFER', 'CRYPTO'));`,
    );
    this.addSql(`alter table "rail_cursors" drop constraint "rail_cursors_source_check";`);
    this.addSql(
      `alter table "rail_cursors" add constraint "rail_cursors_source_check" check ("source" in ('TRON', 'BSC', 'BANK', 'RECON_TRON', 'RECON_BSC', 'RECON_BANK'));`,
    );
    this.addSql(`create index "inflows_rail_arrived_index" on "inflows" ("rail", "arrived_at");`);
    this.addSql(
      `create index "outflows_settled_index" on "outflows" ("settled_at") where "status" = 'SUCCESSFUL';`,
    );
    this.addSql(
      `create index "outflows_failed_index" on "outflows" ("updated_at") where "status" = 'FAILED';`,
    );
    this.addSql(
      `create index "refunds_bank_settled_index" on "refunds" ("settled_at") where "status" = 'SUCCESSFUL' and "destination_type" = 'BANK_ACCOUNT';`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "refunds_bank_settled_index";`);
    this.addSql(`drop index "outflows_failed_index";`);
    this.addSql(`drop index "outflows_settled_index";`);
    this.addSql(`drop index "inflows_rail_arrived_index";`);
    this.addSql(`delete from "rail_cursors" where "source" like 'RECON_%';`);
    this.addSql(`alter table "rail_cursors" drop constraint "rail_cursors_source_check";`);
    this.addSql(
      `alter table "rail_cursors" add constraint "rail_cursors_source_check" check ("source" in ('TRON', 'BSC', 'BANK'));`,
    );
    this.addSql(`drop table "recon_rail_totals";`);
    this.addSql(`drop table "recon_rail_lines";`);
  }
}
