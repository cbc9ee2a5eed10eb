import { Migration } from '@mikro-orm/migrations';

export class Migration20261122063538_lifecycle extends Migration {
  override name = 'Migration20261122063538_lifecycle';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "chain_cursors" ("network" text not null, "cursor" varchar(200) null, "tip" int not null default 0, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("network"));`,
    );

    this.addSql(
      `create table "tasks" ("id" uuid not null, "kind" text not null, "subject_id" uuid not null, "due_at" timestamptz not null, "attempts" int not null default 0, "last_error" text null, "done_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create unique index "tasks_open_unique" on "tasks" ("kind", "subject_id") where "done_at" is null;`,
    );
    this.addSql(`create index "tasks_due_index" on "tasks" ("due_at") where "done_at" is null;`);

    this.addSql(
      `create table "payouts" ("id" uuid not null, "tenant_id" uuid not null, "status" text not null, "snapshot" jsonb not null, "merchant_reference" varchar(200) null, "notification_url" varchar(2048) null, "destination_type" text not null, "destination_country" varchar(2) not null, "destination_currency" varchar(8) not null, "destination_amount" numeric not null, "destination_account_unique" varchar(128) not null, "destination_provider_name" varchar(200) not null, "destination_provider_code" varchar(32) null, "destination_account_name" varchar(200) null, "settlement_currency" text not null, "settlement_network" text null, "settlement_amount" numeric not null, "exchange_rate" numeric not null, "mid_market_rate" numeric not null, "platform_fee_amount" numeric not null, "network_fee_amount" numeric not null, "total_fee_amount" numeric not null, "quote_id" uuid null, "received_amount" numeric not null, "is_refunded" boolean not null default false, "refund_reference" uuid null, "instruction_attempts" int not null default 0, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "payouts_tenant_id_created_at_id_index" on "payouts" ("tenant_id", "created_at", "id");`,
    );

    this.addSql(
      `create table "payout_status_timeline" ("id" uuid not null, "payout_id" uuid not null, "from_status" text null, "to_status" text not null, "triggered_by" text not null, "reason_code" varchar(100) not null, "reason_detail" jsonb null, "metadata" jsonb null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "payout_status_timeline_payout_id_created_at_index" on "payout_status_timeline" ("payout_id", "created_at");`,
    );

    this.addSql(
      `create table "payment_instructions" ("id" uuid not null, "tenant_id" uuid not null, "payout_id" uuid not null, "status" text not null, "snapshot" jsonb not null, "rail" text not null, "account_unique" varchar(128) not null, "provider_name" varchar(200) not null, "network" varchar(16) null, "chain" text null, "expected_amount" numeric not null, "expected_currency" text not null, "expires_at" timestamptz not null, "paid_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "payment_instructions" add constraint "payment_instructions_payout_id_unique" unique ("payout_id");`,
    );
    this.addSql(
      `create index "payment_instructions_status_expires_at_index" on "payment_instructions" ("status", "expires_at");`,
    );
    this.addSql(
      `create unique index "payment_instructions_open_amount_unique" on "payment_instructions" ("account_unique", "expected_amount") where "status" = 'UNPAID';`,
    );

    this.addSql(
      `create table "outflows" ("id" uuid not null, "tenant_id" uuid not null, "payout_id" uuid not null, "status" text not null, "snapshot" jsonb not null, "processor" varchar(100) not null, "attempt_number" int not null, "destination_amount" numeric not null, "destination_currency" varchar(8) not null, "processor_reference" varchar(128) null, "failure_reason" varchar(500) null, "failure_code" varchar(100) null, "retryable" boolean not null default false, "dispatched_at" timestamptz null, "settled_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "outflows_status_dispatched_at_index" on "outflows" ("status", "dispatched_at");`,
    );
    this.addSql(
      `alter table "outflows" add constraint "outflows_payout_id_attempt_number_unique" unique ("payout_id", "attempt_number");`,
    );

    this.addSql(
      `create table "outbox_events" ("id" uuid not null, "tenant_id" uuid not null, "payout_id" uuid null, "event_type" varchar(64) not null, "payload" jsonb not null, "published_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "outbox_events_payout_id_index" on "outbox_events" ("payout_id");`);
    this.addSql(
      `create index "outbox_events_published_at_created_at_index" on "outbox_events" ("published_at", "created_at");`,
    );

    this.addSql(
      `create table "inflows" ("id" uuid not null, "tenant_id" uuid not null, "rail" text not null, "provider_name" varchar(200) not null, "network" text null, "amount" numeric not null, "currency" text not null, "external_ref" varchar(128) not null, "to_account" varchar(128) not null, "payer_name" varchar(200) null, "payer_account" varchar(128) null, "block_number" int null, "confirmations_received" int not null default 0, "confirmations_required" int not null default 0, "state" text not null, "is_matched" boolean not null default false, "matched_at" timestamptz null, "payout_id" uuid null, "instruction_id" uuid null, "is_underpaid" boolean not null default false, "overpayment_amount" numeric not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "inflows_tenant_id_created_at_id_index" on "inflows" ("tenant_id", "created_at", "id");`,
    );
    this.addSql(`create index "inflows_state_network_index" on "inflows" ("state", "network");`);
    this.addSql(
      `alter table "inflows" add constraint "inflows_rail_external_ref_unique" unique ("rail", "external_ref");`,
    );

    this.addSql(
      `create table "refunds" ("id" uuid not null, "tenant_id" uuid not null, "payout_id" uuid not null, "inflow_id" uuid null, "status" text not null, "snapshot" jsonb not null, "received_amount" numeric not null, "received_currency" text not null, "network_fee_amount" numeric not null, "refund_amount" numeric not null, "destination_id" uuid not null, "destination_type" text not null, "destination_provider_name" varchar(200) not null, "destination_masked" varchar(128) not null, "destination_network" text null, "destination_bank_code" varchar(16) null, "destination_account" varchar(128) not null, "destination_account_name" varchar(200) null, "processor_reference" varchar(128) null, "failure_reason" varchar(500) null, "attempt_number" int not null default 1, "dispatched_at" timestamptz null, "settled_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "refunds" add constraint "refunds_payout_id_unique" unique ("payout_id");`);
    this.addSql(
      `create index "refunds_tenant_id_created_at_id_index" on "refunds" ("tenant_id", "created_at", "id");`,
    );

    this.addSql(
      `create table "deposit_addresses" ("id" uuid not null, "tenant_id" uuid not null, "network" text not null, "address" varchar(128) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "deposit_addresses" add constraint "deposit_addresses_address_unique" unique ("address");`,
    );
    this.addSql(
      `alter table "deposit_addresses" add constraint "deposit_addresses_tenant_id_network_unique" unique ("tenant_id", "network");`,
    );

    this.addSql(
      `alter table "chain_cursors" add constraint "chain_cursors_network_check" check ("network" in ('TRON', 'BSC'));`,
    );

    this.addSql(
      `alter table "tasks" add constraint "tasks_kind_check" check ("kind" in ('GENERATE_INSTRUCTION', 'DISPATCH', 'QUERY_OUTFLOW', 'RAISE_REFUND', 'DISPATCH_REFUND'));`,
    );

    this.addSql(
      `alter table "payouts" add constraint "payouts_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id");`,
    );
    this.addSql(
      `alter table "payouts" add constraint "payouts_status_check" check ("status" in ('CREATED', 'PENDING_PAYMENT', 'PAYMENT_RECEIVED', 'PROCESSING', 'SUCCESSFUL', 'FAILED', 'EXPIRED'));`,
    );
    this.addSql(
      `alter table "payouts" add constraint "payouts_destination_type_check" check ("destination_type" in ('MOBILE_MONEY', 'BANK_ACCOUNT', 'CRYPTO_WALLET'));`,
    );
    this.addSql(
      `alter table "payouts" add constraint "payouts_settlement_currency_check" check ("settlement_currency" in ('USDT', 'NGN'));`,
    );
    this.addSql(
      `alter table "payouts" add constraint "payouts_settlement_network_check" check ("settlement_network" in ('TRON', 'BSC'));`,
    );

    this.addSql(
      `alter table "payout_status_timeline" add constraint "payout_status_timeline_payout_id_foreign" foreign key ("payout_id") references "payouts" ("id");`,
    );
    this.addSql(
      `alter table "payout_status_timeline" add constraint "payout_status_timeline_from_status_check" check ("from_status" in ('CREATED', 'PENDING_PAYMENT', 'PAYMENT_RECEIVED', 'PROCESSING', 'SUCCESSFUL', 'FAILED', 'EXPIRED'));`,
    );
    this.addSql(
      `alter table "payout_status_timeline" add constraint "payout_status_timeline_to_status_check" check ("to_status" in ('CREATED', 'PENDING_PAYMENT', 'PAYMENT_RECEIVED', 'PROCESSING', 'SUCCESSFUL', 'FAILED', 'EXPIRED'));`,
    );
    this.addSql(
      `alter table "payout_status_timeline" add constraint "payout_status_timeline_triggered_by_check" check ("triggered_by" in ('SYSTEM', 'API', 'PROCESSOR_WEBHOOK', 'ADMIN'));`,
    );

    this.addSql(
      `alter table "payment_instructions" add constraint "payment_instructions_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id");`,
    );
    this.addSql(
      `alter table "payment_instructions" add constraint "payment_instructions_payout_id_foreign" foreign key ("payout_id") references "payouts" ("id");`,
    );
    this.addSql(
      `alter table "payment_instructions" add constraint "payment_instructions_status_check" check ("status" in ('UNPAID', 'PAID', 'EXPIRED'));`,
    );
    this.addSql(
      `alter table "payment_instructions" add constraint "payment_instructions_rail_check" check ("rail" in ('CRYPTO', 'BANK_TRANSFER'));`,
    );
    this.addSql(
      `alter table "payment_instructions" add constraint "payment_instructions_chain_check" check ("chain" in ('TRON', 'BSC'));`,
    );
    this.addSql(
      `alter table "payment_instructions" add constraint "payment_instructions_expected_currency_check" check ("expected_currency" in ('USDT', 'NGN'));`,
    );

    this.addSql(
      `alter table "outflows" add constraint "outflows_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id");`,
    );
    this.addSql(
      `alter table "outflows" add constraint "outflows_payout_id_foreign" foreign key ("payout_id") references "payouts" ("id");`,
    );
    this.addSql(
      `alter table "outflows" add constraint "outflows_status_check" check ("status" in ('PENDING', 'PROCESSING', 'SUCCESSFUL', 'FAILED'));`,
    );

    this.addSql(
      `alter table "outbox_events" add constraint "outbox_events_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id");`,
    );

    this.addSql(
      `alter table "inflows" add constraint "inflows_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id");`,
    );
    this.addSql(
      `alter table "inflows" add constraint "inflows_payout_id_foreign" foreign key ("payout_id") references "payouts" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "inflows" add constraint "inflows_instruction_id_foreign" foreign key ("instruction_id") references "payment_instructions" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "inflows" add constraint "inflows_rail_check" check ("rail" in ('CRYPTO', 'BANK_TRANSFER'));`,
    );
    this.addSql(
      `alter table "inflows" add constraint "inflows_network_check" check ("network" in ('TRON', 'BSC'));`,
    );
    this.addSql(
      `alter table "inflows" add constraint "inflows_currency_check" check ("currency" in ('USDT', 'NGN'));`,
    );
    this.addSql(
      `alter table "inflows" add constraint "inflows_state_check" check ("state" in ('PENDING_CONFIRMATION', 'CONFIRMED', 'MATCHED', 'HELD', 'UNMATCHED', 'RETURNED'));`,
    );

    this.addSql(
      `alter table "refunds" add constraint "refunds_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id");`,
    );
    this.addSql(
      `alter table "refunds" add constraint "refunds_payout_id_foreign" foreign key ("payout_id") references "payouts" ("id");`,
    );
    this.addSql(
      `alter table "refunds" add constraint "refunds_inflow_id_foreign" foreign key ("inflow_id") references "inflows" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "refunds" add constraint "refunds_status_check" check ("status" in ('PENDING', 'PROCESSING', 'SUCCESSFUL', 'FAILED'));`,
    );
    this.addSql(
      `alter table "refunds" add constraint "refunds_received_currency_check" check ("received_currency" in ('USDT', 'NGN'));`,
    );
    this.addSql(
      `alter table "refunds" add constraint "refunds_destination_type_check" check ("destination_type" in ('BANK_ACCOUNT', 'CRYPTO_ADDRESS'));`,
    );
    this.addSql(
      `alter table "refunds" add constraint "refunds_destination_network_check" check ("destination_network" in ('TRON', 'BSC'));`,
    );

    this.addSql(
      `alter table "deposit_addresses" add constraint "deposit_addresses_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id");`,
    );
    this.addSql(
      `alter table "deposit_addresses" add constraint "deposit_addresses_network_check" check ("network" in ('TRON', 'BSC'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(
      `alter table "payout_status_timeline" drop constraint "payout_status_timeline_payout_id_foreign";`,
    );
    this.addSql(
      `alter table "payment_instructions" drop constraint "payment_instructions_payout_id_foreign";`,
    );
    this.addSql(`alter table "outflows" drop constraint "outflows_payout_id_foreign";`);
    this.addSql(`alter table "inflows" drop constraint "inflows_payout_id_foreign";`);
    this.addSql(`alter table "refunds" drop constraint "refunds_payout_id_foreign";`);
    this.addSql(`alter table "inflows" drop constraint "inflows_instruction_id_foreign";`);
    this.addSql(`alter table "refunds" drop constraint "refunds_inflow_id_foreign";`);

    this.addSql(`drop table if exists "chain_cursors" cascade;`);
    this.addSql(`drop table if exists "tasks" cascade;`);
    this.addSql(`drop table if exists "payouts" cascade;`);
    this.addSql(`drop table if exists "payout_status_timeline" cascade;`);
    this.addSql(`drop table if exists "payment_instructions" cascade;`);
    this.addSql(`drop table if exists "outflows" cascade;`);
    this.addSql(`drop table if exists "outbox_events" cascade;`);
    this.addSql(`drop table if exists "inflows" cascade;`);
    this.addSql(`drop table if exists "refunds" cascade;`);
    this.addSql(`drop table if exists "deposit_addresses" cascade;`);
  }
}
