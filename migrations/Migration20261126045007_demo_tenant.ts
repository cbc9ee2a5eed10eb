import { Migration } from '@mikro-orm/migrations';

/**
 * Marks the demo tenant of a local start, and lets a database hold at most one: instances that
 * start at once against one database all find the same demo tenant instead of making one each.
 */
export class Migration20261126045007_demo_tenant extends Migration {
  override name = 'Migration20261126045007_demo_tenant';

  override up(): void | Promise<void> {
    this.addSql(`alter table "tenants" add "is_demo" boolean not null default false;`);
    this.addSql(`create unique index "tenants_one_demo" on "tenants" ("is_demo") where "is_demo";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "tenants_one_demo";`);
    this.addSql(`alter table "tenants" drop column "is_demo";`);
  }
}
