import { Migration } from '@mikro-orm/migrations';

/**
 * Operators with roles and hashed tokens, and `root`, the bootstrap operator of ADMIN_TOKEN
 * (its id is `ROOT_OPERATOR_ID` in src/operators/entities.ts; it has no stored token).
 */
export class Migration20261126043306_operators extends Migration {
  override name = 'Migration20261126043306_operators';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "operators" ("id" uuid not null, "name" varchar(100) not null, "role" text not null, "token_prefix" varchar(32) null, "token_hash" varchar(64) null, "created_by" uuid null, "revoked_at" timestamptz null, "revoked_by" uuid null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "operators" add constraint "operators_token_hash_unique" unique ("token_hash");`,
    );
    this.addSql(
      `create unique index "operators_active_name_unique" on "operators" (lower("name")) where "revoked_at" is null;`,
    );
    this.addSql(
      `alter table "operators" add constraint "operators_role_check" check ("role" in ('viewer', 'operator', 'approver', 'admin'));`,
    );
    this.addSql(
      `insert into "operators" ("id", "name", "role", "created_at", "updated_at")
       values ('00000000-0000-7000-8000-000000000001', 'root', 'admin', now(), now());`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "operators" cascade;`);
  }
}
