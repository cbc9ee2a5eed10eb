import { Migration } from '@mikro-orm/migrations';

/**
 * A task names its subject's tenant as well as its subject, so that the workers read and lock the
 * subject by its primary key `(id, tenant_id)`, on one node once the tenants' tables are sharded
 * (docs/scaling.md). Open tasks take it from their subject: a refund for DISPATCH_REFUND, a payout
 * for every other kind. Done tasks, and a task whose subject is gone, keep null: a worker handed
 * one looks its subject up by id alone.
 */
export class Migration20261129090000_task_tenant extends Migration {
  override name = 'Migration20261129090000_task_tenant';

  override up(): void | Promise<void> {
    this.addSql(`alter table "tasks" add "tenant_id" uuid null;`);
    this.addSql(`update "tasks" t set "tenant_id" = p."tenant_id" from "payouts" p
      where t."done_at" is null and t."kind" <> 'DISPATCH_REFUND' and p."id" = t."subject_id";`);
    this.addSql(`update "tasks" t set "tenant_id" = r."tenant_id" from "refunds" r
      where t."done_at" is null and t."kind" = 'DISPATCH_REFUND' and r."id" = t."subject_id";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "tasks" drop column "tenant_id";`);
  }
}
