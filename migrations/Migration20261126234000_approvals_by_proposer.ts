import { Migration } from '@mikro-orm/migrations';

/** An operator's own proposals, newest first (`admin.approvals.list` with `proposer_id`), from an index. */
export class Migration20261126234000_approvals_by_proposer extends Migration {
  override name = 'Migration20261126234000_approvals_by_proposer';

  override up(): void | Promise<void> {
    this.addSql(
      `create index "approvals_proposer_created_idx" on "approvals" ("proposer_id", "created_at", "id");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "approvals_proposer_created_idx";`);
  }
}
