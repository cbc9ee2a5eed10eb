import { Migration } from '@mikro-orm/migrations';

export class Migration20261128110000_reconciliation extends Migration {
  override name = 'Migration20261128110000_reconciliation';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "recon_runs" ("id" uuid not null, "day" varchar(10) not null, "rail" text not null, "state" text not null, "rail_complete" boolean not null default false, "attempts" int not null default 0, "started_by" uuid null, "started_at" timestamptz null, "finished_at" timestamptz null, "error" text null, "lease_token" uuid null, "lease_until" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "recon_runs_created_idx" on "recon_runs" ("created_at", "id");`);
    this.addSql(
      `alter table "recon_runs" add constraint "recon_runs_day_rail_unique" unique ("day", "rail");`,
    );

    this.addSql(
      `create table "recon_breaks" ("id" uuid not null, "run_id" uuid not null, "day" varchar(10) not null, "rail" text not null, "account" varchar(300) not null, "kind" text not null, "reference" varchar(200) not null, "currency" varchar(8) not null, "ledger_amount" numeric null, "rail_amount" numeric null, "ledger_state" varchar(40) null, "rail_state" varchar(40) null, "tenant_id" uuid null, "payout_id" uuid null, "inflow_id" uuid null, "outflow_id" uuid null, "summary" text not null, "status" text not null, "snapshot" jsonb not null, "resolution" text null, "resolution_note" text null, "resolved_by" uuid null, "resolved_at" timestamptz null, "approval_id" uuid null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "recon_breaks_created_idx" on "recon_breaks" ("created_at", "id");`);
    this.addSql(
      `create index "recon_breaks_open_index" on "recon_breaks" ("created_at", "id") where "status" = 'OPEN';`,
    );
    this.addSql(
      `alter table "recon_breaks" add constraint "recon_breaks_rail_kind_reference_unique" unique ("rail", "kind", "reference");`,
    );

    this.addSql(
      `create table "recon_accounts" ("run_id" uuid not null, "account" varchar(300) not null, "currency" varchar(8) not null, "matched_count" int not null, "matched_amount" numeric not null, "ledger_count" int not null, "ledger_amount" numeric not null, "rail_count" int not null, "rail_amount" numeric not null, "breaks" int not null, primary key ("run_id", "account", "currency"));`,
    );

    this.addSql(`alter table "approvals" drop constraint "approvals_action_check";`);
    this.addSql(
      `alter table "approvals" add constraint "approvals_action_check" check ("action" in ('inflow.attribute', 'inflow.return', 'payout.fail', 'refund.retry', 'refund.raise', 'recon.resolve'));`,
    );

    this.addSql(
      `alter table "recon_runs" add constraint "recon_runs_rail_check" check ("rail" in ('BANK_TRANSFER', 'CRYPTO', 'PROCESSOR'));`,
    );
    this.addSql(
      `alter table "recon_runs" add constraint "recon_runs_state_check" check ("state" in ('RUNNING', 'DONE', 'FAILED'));`,
    );

    this.addSql(
      `alter table "recon_breaks" add constraint "recon_breaks_run_id_foreign" foreign key ("run_id") references "recon_runs" ("id");`,
    );
    this.addSql(
      `alter table "recon_breaks" add constraint "recon_breaks_rail_check" check ("rail" in ('BANK_TRANSFER', 'CRYPTO', 'PROCESSOR'));`,
    );
    this.addSql(
      `alter table "recon_breaks" add constraint "recon_breaks_kind_check" check ("kind" in ('MISSING_IN_LEDGER', 'MISSING_ON_RAIL', 'AMOUNT_DIFFERS', 'STATE_DIFFERS'));`,
    );
    this.addSql(
      `alter table "recon_breaks" add constraint "recon_breaks_status_check" check ("status" in ('OPEN', 'RESOLVED'));`,
    );
    this.addSql(
      `alter table "recon_breaks" add constraint "recon_breaks_resolution_check" check ("resolution" in ('EXPLAINED', 'BOOKED_RAIL', 'REFUNDED_RETURN'));`,
    );

    this.addSql(
      `alter table "recon_accounts" add constraint "recon_accounts_run_id_foreign" foreign key ("run_id") references "recon_runs" ("id");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "recon_breaks" drop constraint "recon_breaks_run_id_foreign";`);
    this.addSql(`alter table "recon_accounts" drop constraint "recon_accounts_run_id_foreign";`);

    this.addSql(`drop table if exists "recon_runs" cascade;`);
    this.addSql(`drop table if exists "recon_breaks" cascade;`);
    this.addSql(`drop table if exists "recon_accounts" cascade;`);

    this.addSql(`alter table "approvals" drop constraint "approvals_action_check";`);
    this.addSql(
      `alter table "approvals" add constraint "approvals_action_check" check ("action" in ('inflow.attribute', 'inflow.return', 'payout.fail', 'refund.retry', 'refund.raise'));`,
    );
  }
}
