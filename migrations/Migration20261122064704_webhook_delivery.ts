import { Migration } from '@mikro-orm/migrations';

export class Migration20261122064704_webhook_delivery extends Migration {
  override name = 'Migration20261122064704_webhook_delivery';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "webhook_deliveries" ("id" uuid not null, "tenant_id" uuid not null, "event_id" uuid not null, "payout_id" uuid null, "event_type" varchar(64) not null, "target_url" varchar(2048) not null, "target_origin" varchar(512) not null, "status" text not null, "snapshot" jsonb not null, "attempts" int not null default 0, "due_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "webhook_deliveries_due_index" on "webhook_deliveries" ("due_at") where "due_at" is not null;`,
    );
    this.addSql(
      `create index "webhook_deliveries_attempting_index" on "webhook_deliveries" ("target_origin") where "status" = 'ATTEMPTING';`,
    );
    this.addSql(
      `create index "webhook_deliveries_dead_index" on "webhook_deliveries" ("created_at", "id") where "status" = 'DEAD';`,
    );
    this.addSql(
      `alter table "webhook_deliveries" add constraint "webhook_deliveries_event_id_target_url_unique" unique ("event_id", "target_url");`,
    );

    this.addSql(
      `create table "webhook_delivery_attempts" ("id" uuid not null, "tenant_id" uuid not null, "delivery_id" uuid not null, "event_id" uuid not null, "payout_id" uuid null, "event_type" varchar(64) not null, "attempt_number" int not null, "target_url" varchar(2048) not null, "status" text not null, "response_status" int null, "failure_reason" varchar(500) null, "secret_version" int null, "duration_ms" int null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "webhook_delivery_attempts_tenant_id_created_at_id_index" on "webhook_delivery_attempts" ("tenant_id", "created_at", "id");`,
    );
    this.addSql(
      `alter table "webhook_delivery_attempts" add constraint "webhook_delivery_attempts_delivery_id_attempt_number_unique" unique ("delivery_id", "attempt_number");`,
    );

    this.addSql(
      `alter table "webhook_deliveries" add constraint "webhook_deliveries_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id");`,
    );
    this.addSql(
      `alter table "webhook_deliveries" add constraint "webhook_deliveries_event_id_foreign" foreign key ("event_id") references "outbox_events" ("id");`,
    );
    this.addSql(
      `alter table "webhook_deliveries" add constraint "webhook_deliveries_status_check" check ("status" in ('PENDING', 'ATTEMPTING', 'RETRY_SCHEDULED', 'SUCCEEDED', 'DEAD'));`,
    );

    this.addSql(
      `alter table "webhook_delivery_attempts" add constraint "webhook_delivery_attempts_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id");`,
    );
    this.addSql(
      `alter table "webhook_delivery_attempts" add constraint "webhook_delivery_attempts_delivery_id_foreign" foreign key ("delivery_id") references "webhook_deliveries" ("id");`,
    );
    this.addSql(
      `alter table "webhook_delivery_attempts" add constraint "webhook_delivery_attempts_status_check" check ("status" in ('SUCCESS', 'FAILED', 'DEAD'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(
      `alter table "webhook_delivery_attempts" drop constraint "webhook_delivery_attempts_delivery_id_foreign";`,
    );

    this.addSql(`drop table if exists "webhook_deliveries" cascade;`);
    this.addSql(`drop table if exists "webhook_delivery_attempts" cascade;`);
  }
}
