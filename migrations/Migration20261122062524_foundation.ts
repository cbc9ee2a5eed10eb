import { Migration } from '@mikro-orm/migrations';

export class Migration20261122062524_foundation extends Migration {
  override name = 'Migration20261122062524_foundation';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "idempotency_keys" ("id" uuid not null, "tenant_id" uuid not null, "key" uuid not null, "fingerprint" varchar(64) not null, "state" text not null, "claim_token" uuid null, "locked_until" timestamptz null, "response_status" int null, "response_body" text null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "idempotency_keys" add constraint "idempotency_keys_tenant_id_key_unique" unique ("tenant_id", "key");`,
    );

    this.addSql(
      `create table "tenants" ("id" uuid not null, "name" varchar(200) not null, "payouts_approved" boolean not null default false, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );

    this.addSql(
      `create table "refund_destinations" ("id" uuid not null, "tenant_id" uuid not null, "currency" text not null, "type" text not null, "bank_code" varchar(16) null, "bank_name" varchar(200) null, "account_number" varchar(20) null, "account_name" varchar(200) null, "network" text null, "address" varchar(128) null, "tag" varchar(100) null, "is_verified" boolean not null, "is_active" boolean not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "refund_destinations_tenant_id_index" on "refund_destinations" ("tenant_id");`);
    // One active destination per tenant and currency; replaced ones stay as history.
    this.addSql(
      `create unique index "refund_destinations_active_currency_unique" on "refund_destinations" ("tenant_id", "currency") where "is_active";`,
    );

    this.addSql(
      `create table "quotes" ("id" uuid not null, "tenant_id" uuid not null, "rail" text not null, "status" text not null, "snapshot" jsonb not null, "settlement_currency" varchar(8) not null, "destination_currency" varchar(8) not null, "destination_amount" numeric not null, "settlement_amount" numeric not null, "exchange_rate" numeric not null, "mid_market_rate" numeric not null, "spread" numeric not null, "platform_fee_amount" numeric not null, "network_fee_amount" numeric not null, "total_fee_amount" numeric not null, "provider" varchar(100) not null, "expires_at" timestamptz not null, "used_by_payout_id" uuid null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "quotes_tenant_id_created_at_index" on "quotes" ("tenant_id", "created_at");`);

    this.addSql(
      `create table "api_keys" ("id" uuid not null, "tenant_id" uuid not null, "prefix" varchar(32) not null, "hash" varchar(64) not null, "scopes" text[] not null, "revoked_at" timestamptz null, "last_used_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "api_keys_tenant_id_index" on "api_keys" ("tenant_id");`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_hash_unique" unique ("hash");`);

    this.addSql(
      `create table "webhook_configs" ("tenant_id" uuid not null, "url" varchar(2048) null, "secret_sealed" text null, "secret_version" int not null default 0, "secret_rotated_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("tenant_id"));`,
    );

    this.addSql(
      `alter table "idempotency_keys" add constraint "idempotency_keys_state_check" check ("state" in ('IN_PROGRESS', 'COMPLETE'));`,
    );

    this.addSql(
      `alter table "refund_destinations" add constraint "refund_destinations_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id");`,
    );
    this.addSql(
      `alter table "refund_destinations" add constraint "refund_destinations_currency_check" check ("currency" in ('NGN', 'USDT'));`,
    );
    this.addSql(
      `alter table "refund_destinations" add constraint "refund_destinations_type_check" check ("type" in ('BANK_ACCOUNT', 'CRYPTO_ADDRESS'));`,
    );
    this.addSql(
      `alter table "refund_destinations" add constraint "refund_destinations_network_check" check ("network" in ('TRON', 'BSC'));`,
    );

    this.addSql(
      `alter table "quotes" add constraint "quotes_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id");`,
    );
    this.addSql(
      `alter table "quotes" add constraint "quotes_rail_check" check ("rail" in ('CRYPTO', 'BANK_TRANSFER'));`,
    );
    this.addSql(
      `alter table "quotes" add constraint "quotes_status_check" check ("status" in ('PENDING', 'ACCEPTED', 'USED', 'EXPIRED'));`,
    );

    this.addSql(
      `alter table "api_keys" add constraint "api_keys_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id");`,
    );

    this.addSql(
      `alter table "webhook_configs" add constraint "webhook_configs_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "refund_destinations" drop constraint "refund_destinations_tenant_id_foreign";`);
    this.addSql(`alter table "quotes" drop constraint "quotes_tenant_id_foreign";`);
    this.addSql(`alter table "api_keys" drop constraint "api_keys_tenant_id_foreign";`);
    this.addSql(`alter table "webhook_configs" drop constraint "webhook_configs_tenant_id_foreign";`);

    this.addSql(`drop table if exists "idempotency_keys" cascade;`);
    this.addSql(`drop table if exists "tenants" cascade;`);
    this.addSql(`drop table if exists "refund_destinations" cascade;`);
    this.addSql(`drop table if exists "quotes" cascade;`);
    this.addSql(`drop table if exists "api_keys" cascade;`);
    this.addSql(`drop table if exists "webhook_configs" cascade;`);
  }
}
