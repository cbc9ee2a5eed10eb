import { Migration } from '@mikro-orm/migrations';

/**
 * Reconciliation keeps the processor's settlement report as it keeps the bank's statement: each
 * payout's line in its current state (`recon_processor_lines`, a later return replacing the line
 * of the success), read ahead from a cursor of its own (`RECON_PROCESSOR`) over the processor's
 * listing of report changes. A day's lines are found by when they settled or were returned.
 */
export class Migration20261129100000_recon_processor_lines extends Migration {
  override name = 'Migration20261129100000_recon_processor_lines';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "recon_processor_lines" ("processor" varchar(100) not null, "reference" varchar(200) not null, "processor_reference" varchar(200) null, "amount" numeric not null, "currency" varchar(8) not null, "status" text not null, "failure_code" varchar(100) null, "settled_at" timestamptz not null, "returned_at" timestamptz null, "changed_at" timestamptz not null, primary key ("processor", "reference"));`,
    );
    this.addSql(
      `alter table "recon_processor_lines" add constraint "recon_processor_lines_status_check" check ("status" in ('SUCCESSFUL', 'FAILED', 'RETURNED'));`,
    );
    this.addSql(
      `create index "recon_processor_lines_settled_index" on "recon_processor_lines" ("processor", "settled_at");`,
    );
    this.addSql(
      `create index "recon_processor_lines_returned_index" on "recon_processor_lines" ("processor", "returned_at");`,
    );
    this.addSql(`alter table "rail_cursors" drop constraint "rail_cursors_source_check";`);
    this.addSql(
      `alter table "rail_cursors" add constraint "rail_cursors_source_check" check ("source" in ('TRON', 'BSC', 'BANK', 'RECON_TRON', 'RECON_BSC', 'RECON_BANK', 'RECON_TRON_SENDS', 'RECON_BSC_SENDS', 'RECON_PROCESSOR'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`delete from "rail_cursors" where "source" = 'RECON_PROCESSOR';`);
    this.addSql(`alter table "rail_cursors" drop constraint "rail_cursors_source_check";`);
    this.addSql(
      `alter table "rail_cursors" add constraint "rail_cursors_source_check" check ("source" in ('TRON', 'BSC', 'BANK', 'RECON_TRON', 'RECON_BSC', 'RECON_BANK', 'RECON_TRON_SENDS', 'RECON_BSC_SENDS'));`,
    );
    this.addSql(`drop table "recon_processor_lines";`);
  }
}
