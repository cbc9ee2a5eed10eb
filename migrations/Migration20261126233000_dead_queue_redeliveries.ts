import { Migration } from '@mikro-orm/migrations';

/**
 * The DEAD deliveries' queue of `admin.exceptions` leaves out those whose event an operator sent
 * again (a later delivery of the same event names a DEAD one in `redelivery_of`): its partial
 * index carries the event and the creation time, so the queue is still counted from the index.
 */
export class Migration20261126233000_dead_queue_redeliveries extends Migration {
  override name = 'Migration20261126233000_dead_queue_redeliveries';

  override up(): void | Promise<void> {
    this.addSql(`drop index if exists "webhook_deliveries_dead_since_index";`);
    this.addSql(
      `create index "webhook_deliveries_dead_since_index" on "webhook_deliveries" ("updated_at") include ("event_id", "created_at", "id") where "status" = 'DEAD';`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "webhook_deliveries_dead_since_index";`);
    this.addSql(
      `create index "webhook_deliveries_dead_since_index" on "webhook_deliveries" ("updated_at") where "status" = 'DEAD';`,
    );
  }
}
