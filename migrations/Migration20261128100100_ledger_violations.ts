import { Migration } from '@mikro-orm/migrations';

/**
 * What the ledger's checks find out of balance (src/ledger/checks.ts): one open row per check and
 * subject until a later check no longer finds it. The open rows are the "Out of balance" queue.
 */
export class Migration20261128100100_ledger_violations extends Migration {
  override name = 'Migration20261128100100_ledger_violations';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "ledger_violations" ("id" uuid not null, "check" varchar(64) not null, "subject" varchar(200) not null, "tenant_id" uuid null, "detail" jsonb not null, "first_seen_at" timestamptz not null, "last_seen_at" timestamptz not null, "resolved_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(
      `create unique index "ledger_violations_open_unique" on "ledger_violations" ("check", "subject") where "resolved_at" is null;`,
    );
    this.addSql(
      `create index "ledger_violations_open_index" on "ledger_violations" ("first_seen_at") where "resolved_at" is null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "ledger_violations" cascade;`);
  }
}
