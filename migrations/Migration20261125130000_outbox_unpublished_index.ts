import { Migration } from '@mikro-orm/migrations';

/**
 * The outbox's waiting events get a partial index in publishing order, in place of the index on
 * (published_at, created_at) that held every event ever written: with statistics taken while a
 * burst was waiting, the planner read "is anything waiting?" as a sequential scan of the whole
 * outbox, every 50 ms of a busy webhooks pass.
 */
export class Migration20261125130000_outbox_unpublished_index extends Migration {
  override name = 'Migration20261125130000_outbox_unpublished_index';

  override up(): void | Promise<void> {
    this.addSql(
      `create index "outbox_events_unpublished_index" on "outbox_events" ("created_at", "id") where "published_at" is null;`,
    );
    this.addSql(`drop index "outbox_events_published_at_created_at_index";`);
  }

  override down(): void | Promise<void> {
    this.addSql(
      `create index "outbox_events_published_at_created_at_index" on "outbox_events" ("published_at", "created_at");`,
    );
    this.addSql(`drop index "outbox_events_unpublished_index";`);
  }
}
