import { Migration } from '@mikro-orm/migrations';

/**
 * Outbox payloads (a payout resource with its timeline, 2-3 KB as JSON) are past PostgreSQL's
 * threshold for compressing a value, and every event is written once and read once: they are
 * compressed with lz4 rather than the default pglz, which took about twice as long per event. A
 * server built without lz4 (the embedded one) keeps its default.
 */
export class Migration20261125140000_outbox_payload_lz4 extends Migration {
  override name = 'Migration20261125140000_outbox_payload_lz4';

  override up(): void | Promise<void> {
    this.addSql(`do $$
begin
  alter table "outbox_events" alter column "payload" set compression lz4;
exception when feature_not_supported then null;
end $$;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "outbox_events" alter column "payload" set compression default;`);
  }
}
