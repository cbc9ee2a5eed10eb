import { Migration } from '@mikro-orm/migrations';

export class Migration20261122070844_chain_cursor_lease extends Migration {
  override name = 'Migration20261122070844_chain_cursor_lease';

  override up(): void | Promise<void> {
    this.addSql(
      `alter table "chain_cursors" add "lease_token" uuid null, add "lease_until" timestamptz null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "chain_cursors" drop column "lease_token", drop column "lease_until";`);
  }
}
