import { Migration } from '@mikro-orm/migrations';

export class Migration20261124091525_idempotency_at_commit extends Migration {
  override name = 'Migration20261124091525_idempotency_at_commit';

  override up(): void | Promise<void> {
    // A claim that never completed wrote nothing: its key is free, as it is under the new rule.
    this.addSql(`delete from "idempotency_keys" where "state" = 'IN_PROGRESS';`);
    this.addSql(`alter table "idempotency_keys" drop constraint "idempotency_keys_state_check";`);
    this.addSql(
      `alter table "idempotency_keys" drop column "state", drop column "claim_token", drop column "locked_until";`,
    );
    this.addSql(`alter table "idempotency_keys" alter column "response_status" set not null;`);
    this.addSql(`alter table "idempotency_keys" alter column "response_body" set not null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(
      `alter table "idempotency_keys" add "state" text not null default 'COMPLETE', add "claim_token" uuid null, add "locked_until" timestamptz(6) null;`,
    );
    this.addSql(`alter table "idempotency_keys" alter column "response_status" drop not null;`);
    this.addSql(`alter table "idempotency_keys" alter column "response_body" drop not null;`);
    this.addSql(
      `alter table "idempotency_keys" add constraint "idempotency_keys_state_check" check ("state" in ('IN_PROGRESS', 'COMPLETE'));`,
    );
  }
}
