import { Migration } from '@mikro-orm/migrations';

/**
 * `webhook_origins_in_flight`: per receiver (the origin of a delivery's URL), how many deliveries
 * are ATTEMPTING. The claim reads it to keep to `WEBHOOK_CONCURRENCY_PER_TARGET` instead of
 * counting ATTEMPTING deliveries, whose status index holds an entry for every version a delivery
 * ever had (each attempt writes two), so that the count read thousands of dead entries per round.
 * The statement that moves deliveries into or out of ATTEMPTING updates it (src/webhooks/
 * delivery.service.ts); filled here from the deliveries, under the claim rounds' turn lock.
 * `webhook_origins_recount()` counts it afresh from the deliveries: the `retention` job calls it
 * after dropping partitions, whose rows leave without a statement that would update it.
 */
export class Migration20261129110000_webhook_origins_in_flight extends Migration {
  override name = 'Migration20261129110000_webhook_origins_in_flight';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "webhook_origins_in_flight" ("target_origin" varchar(512) not null, "attempting" int not null, primary key ("target_origin"));`,
    );
    this.addSql(RECOUNT_FUNCTION);
    this.addSql('select webhook_origins_recount();');
    // Nothing reads the ATTEMPTING deliveries by receiver any more; every attempt wrote an entry.
    this.addSql('drop index if exists "webhook_deliveries_attempting_index";');
  }

  override down(): void | Promise<void> {
    this.addSql(
      `create index "webhook_deliveries_attempting_index" on "webhook_deliveries" ("target_origin") where "status" = 'ATTEMPTING';`,
    );
    this.addSql('drop function if exists webhook_origins_recount();');
    this.addSql('drop table if exists "webhook_origins_in_flight";');
  }
}

/**
 * Sets every receiver's count to the ATTEMPTING deliveries. It takes the claim rounds' turn and
 * locks the table against writers first: a transaction that moved deliveries and updated the
 * counts has committed before the deliveries are counted, and one that comes later adds its
 * change to the new counts.
 */
const RECOUNT_FUNCTION = `create or replace function webhook_origins_recount() returns void as $$
begin
  perform pg_advisory_xact_lock(hashtext('webhook_deliveries_claim'));
  lock table webhook_origins_in_flight in share row exclusive mode;
  insert into webhook_origins_in_flight as f (target_origin, attempting)
  select o.target_origin, coalesce(n.n, 0)
    from (select target_origin from webhook_origins_in_flight
          union select target_origin from webhook_deliveries where status = 'ATTEMPTING') o
    left join (select target_origin, count(*)::int as n from webhook_deliveries where status = 'ATTEMPTING'
                group by target_origin) n on n.target_origin = o.target_origin
  on conflict (target_origin) do update set attempting = excluded.attempting
    where f.attempting <> excluded.attempting;
  delete from webhook_origins_in_flight where attempting = 0;
end; $$ language plpgsql;`;
