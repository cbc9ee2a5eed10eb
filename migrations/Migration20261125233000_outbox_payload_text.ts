import { Migration } from '@mikro-orm/migrations';

/**
 * Outbox payloads are stored as the JSON text merchants receive instead of as jsonb: nothing in
 * the service reads inside them, and taking 2-3 KB of JSON apart into jsonb was the largest part
 * of writing an event (about 30 of 50 µs of PostgreSQL's CPU per event, measured). Payloads
 * written before keep jsonb's rendering of them, which is the same JSON with its keys reordered.
 * The column keeps lz4 where the server has it (the change of type resets the setting).
 */
export class Migration20261125233000_outbox_payload_text extends Migration {
  override name = 'Migration20261125233000_outbox_payload_text';

  override up(): void | Promise<void> {
    this.addSql(`alter table "outbox_events" alter column "payload" type text using ("payload"::text);`);
    this.addSql(`do $$
begin
  alter table "outbox_events" alter column "payload" set compression lz4;
exception when feature_not_supported then null;
end $$;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "outbox_events" alter column "payload" type jsonb using ("payload"::jsonb);`);
  }
}
