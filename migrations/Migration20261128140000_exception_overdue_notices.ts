import { Migration } from '@mikro-orm/migrations';

/**
 * Which exception items have been announced overdue (the `exception overdue` log line), so that
 * each is announced once however many instances run the `approvals` job: an item is its queue, its
 * id and when it started waiting (an item that leaves its queue and comes back is announced again).
 */
export class Migration20261128140000_exception_overdue_notices extends Migration {
  override name = 'Migration20261128140000_exception_overdue_notices';

  override up(): void | Promise<void> {
    this.addSql(`create table "exception_overdue_notices" (
      "queue" varchar(64) not null,
      "item_id" uuid not null,
      "since" timestamptz not null,
      "noticed_at" timestamptz not null,
      primary key ("queue", "item_id", "since"));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "exception_overdue_notices";`);
  }
}
