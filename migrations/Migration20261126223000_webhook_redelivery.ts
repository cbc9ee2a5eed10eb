import { Migration } from '@mikro-orm/migrations';

/**
 * Operators' redeliveries of DEAD webhook jobs: a redelivery is another job of the same event
 * (`redelivery_of` names the DEAD one), so the one-job-per-event-and-URL rule holds for published
 * jobs only, and an event has at most one open redelivery at a time. One tenant's DEAD jobs are
 * read in creation order ("recover since").
 */
export class Migration20261126223000_webhook_redelivery extends Migration {
  override name = 'Migration20261126223000_webhook_redelivery';

  override up(): void | Promise<void> {
    this.addSql(`alter table "webhook_deliveries" add "redelivery_of" uuid null;`);
    this.addSql(
      `alter table "webhook_deliveries" add constraint "webhook_deliveries_redelivery_of_foreign" foreign key ("redelivery_of") references "webhook_deliveries" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "webhook_deliveries" drop constraint "webhook_deliveries_event_id_target_url_unique";`,
    );
    this.addSql(
      `create unique index "webhook_deliveries_published_unique" on "webhook_deliveries" ("event_id", "target_url") where "redelivery_of" is null;`,
    );
    this.addSql(
      `create unique index "webhook_deliveries_open_redelivery_unique" on "webhook_deliveries" ("event_id") where "redelivery_of" is not null and "status" in ('PENDING', 'ATTEMPTING', 'RETRY_SCHEDULED');`,
    );
    this.addSql(
      `create index "webhook_deliveries_redeliveries_index" on "webhook_deliveries" ("event_id") where "redelivery_of" is not null;`,
    );
    this.addSql(
      `create index "webhook_deliveries_tenant_dead_index" on "webhook_deliveries" ("tenant_id", "created_at", "id") where "status" = 'DEAD';`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "webhook_deliveries_tenant_dead_index";`);
    this.addSql(`drop index "webhook_deliveries_redeliveries_index";`);
    this.addSql(`drop index "webhook_deliveries_open_redelivery_unique";`);
    this.addSql(
      `delete from "webhook_delivery_attempts" where "delivery_id" in (select "id" from "webhook_deliveries" where "redelivery_of" is not null);`,
    );
    this.addSql(`delete from "webhook_deliveries" where "redelivery_of" is not null;`);
    this.addSql(`drop index "webhook_deliveries_published_unique";`);
    this.addSql(
      `alter table "webhook_deliveries" add constraint "webhook_deliveries_event_id_target_url_unique" unique ("event_id", "target_url");`,
    );
    this.addSql(
      `alter table "webhook_deliveries" drop constraint "webhook_deliveries_redelivery_of_foreign";`,
    );
    this.addSql(`alter table "webhook_deliveries" drop column "redelivery_of";`);
  }
}
