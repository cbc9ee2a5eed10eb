import { Migration } from '@mikro-orm/migrations';

/**
 * Settlement reads every rail from a leased cursor: the chains as before, and now the bank's
 * statement of credits, which finds the credits whose notification never came. One row per rail
 * (`TRON`, `BSC`, `BANK`) records how far it was read, in the rail's own time (`read_through`:
 * every transfer or credit before it has been recorded), which is what instruction expiry waits
 * for; `due_at` spaces the reads of a rail that is not read on every pass (the bank).
 *
 * Inflows keep the moment the rail says the money arrived (`arrived_at`: the block's time, the
 * bank's credit time) apart from when the service recorded them (`created_at`): money found late
 * is judged by when it arrived.
 */
export class Migration20261126120000_rail_cursors extends Migration {
  override name = 'Migration20261126120000_rail_cursors';

  override up(): void | Promise<void> {
    this.addSql(`alter table "chain_cursors" rename to "rail_cursors";`);
    this.addSql(`alter table "rail_cursors" rename constraint "chain_cursors_pkey" to "rail_cursors_pkey";`);
    this.addSql(`alter table "rail_cursors" rename column "network" to "source";`);
    this.addSql(`alter table "rail_cursors" drop constraint "chain_cursors_network_check";`);
    this.addSql(
      `alter table "rail_cursors" add constraint "rail_cursors_source_check" check ("source" in ('TRON', 'BSC', 'BANK'));`,
    );
    this.addSql(
      `alter table "rail_cursors" alter column "tip" drop default, alter column "tip" drop not null;`,
    );
    this.addSql(
      `alter table "rail_cursors" add "read_through" timestamptz null, add "due_at" timestamptz null;`,
    );

    this.addSql(`alter table "inflows" add "arrived_at" timestamptz null;`);
    this.addSql(`update "inflows" set "arrived_at" = "created_at";`);
    this.addSql(`alter table "inflows" alter column "arrived_at" set not null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "inflows" drop column "arrived_at";`);
    this.addSql(`delete from "rail_cursors" where "source" = 'BANK';`);
    this.addSql(`alter table "rail_cursors" drop column "read_through", drop column "due_at";`);
    this.addSql(`update "rail_cursors" set "tip" = 0 where "tip" is null;`);
    this.addSql(
      `alter table "rail_cursors" alter column "tip" set default 0, alter column "tip" set not null;`,
    );
    this.addSql(`alter table "rail_cursors" drop constraint "rail_cursors_source_check";`);
    this.addSql(
      `alter table "rail_cursors" add constraint "chain_cursors_network_check" check ("source" in ('TRON', 'BSC'));`,
    );
    this.addSql(`alter table "rail_cursors" rename column "source" to "network";`);
    this.addSql(`alter table "rail_cursors" rename constraint "rail_cursors_pkey" to "chain_cursors_pkey";`);
    this.addSql(`alter table "rail_cursors" rename to "chain_cursors";`);
  }
}
