import { Migration } from '@mikro-orm/migrations';

/**
 * Tenant names are unique, ignoring case and surrounding spaces (issue 25 §4): a second tenant
 * with the name of one that exists is refused (TENANT_NAME_TAKEN). Databases made before may hold
 * duplicates already: the oldest of each name keeps it, and every later one is renamed
 * "<name> (duplicate <end of its id>)", which is unique because its id is, before the index is
 * made. Operators see the new names in the console and `tenant list`; merchants never see them.
 */
export class Migration20261128180000_tenant_name_unique extends Migration {
  override name = 'Migration20261128180000_tenant_name_unique';

  override up(): void | Promise<void> {
    this.addSql(`update "tenants" as t
      set "name" = left(btrim(t."name"), 170) || ' (duplicate ' || right(t."id"::text, 12) || ')'
      from (
        select "id", row_number() over (
          partition by lower(btrim("name")) order by "created_at", "id") as n
        from "tenants") as d
      where d."id" = t."id" and d.n > 1;`);
    this.addSql(`create unique index "tenants_name_unique" on "tenants" (lower(btrim("name")));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "tenants_name_unique";`);
  }
}
