import { Migration } from '@mikro-orm/migrations';

/**
 * The audit trail of `admin.*` (src/audit): one row per call that changed something. Immutable:
 * a trigger refuses every UPDATE and DELETE, so a row stays as it was committed.
 */
export class Migration20261126190000_audit extends Migration {
  override name = 'Migration20261126190000_audit';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "audit" ("id" uuid not null, "operator_id" uuid not null, "operator_name" varchar(100) not null, "operator_role" varchar(16) not null, "action" varchar(100) not null, "target_ids" text[] not null, "arguments" jsonb not null, "outcome" varchar(64) not null, "request_id" varchar(128) not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "audit_operator_created_idx" on "audit" ("operator_id", "created_at", "id");`);
    this.addSql(`create index "audit_created_idx" on "audit" ("created_at", "id");`);
    this.addSql(`create index "audit_target_ids_idx" on "audit" using gin ("target_ids");`);
    this.addSql(
      `create or replace function "audit_audit_immutable_fn"() returns trigger as $$ begin raise exception 'the audit trail is immutable: % refused', tg_op; end; $$ language plpgsql;`,
    );
    this.addSql(
      `create trigger "audit_immutable" BEFORE UPDATE OR DELETE on "audit" for each ROW execute function "audit_audit_immutable_fn"();`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop trigger if exists "audit_immutable" on "audit";`);
    this.addSql(`drop function if exists "audit_audit_immutable_fn"();`);
    this.addSql(`drop table if exists "audit" cascade;`);
  }
}
