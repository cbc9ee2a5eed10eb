import { Migration } from '@mikro-orm/migrations';

/**
 * The ledger (src/ledger, docs/ledger.md): entries, balances and what the database itself
 * enforces about them.
 * - A deferred constraint trigger checks, at commit, that each ledger transaction an entry belongs
 *   to sums to zero in every currency: an unbalanced transaction cannot commit.
 * - Triggers refuse UPDATE, DELETE and TRUNCATE of entries: a correction is a new transaction.
 * - A statement trigger adds each statement's sums per account and currency to
 *   `ledger_balance_deltas` (one payout's account and one virtual account summed into their
 *   parent), which the `ledger` job folds into `ledger_balances`.
 */
export class Migration20261128100000_ledger extends Migration {
  override name = 'Migration20261128100000_ledger';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "ledger_balances" ("account" varchar(300) collate "C" not null, "currency" varchar(8) not null, "balance" numeric not null, "entries" bigint not null, "updated_at" timestamptz not null, primary key ("account", "currency"));`,
    );
    this.addSql(
      `create table "ledger_balance_deltas" ("id" bigserial primary key, "account" varchar(300) collate "C" not null, "currency" varchar(8) not null, "amount" numeric not null, "entries" int not null);`,
    );
    this.addSql(
      `create table "ledger_entries" ("id" uuid not null, "transaction_id" uuid not null, "account" varchar(300) collate "C" not null, "currency" varchar(8) not null, "amount" numeric not null, "tenant_id" uuid null, "payout_id" uuid null, "movement" varchar(32) null, "cause_object" varchar(16) not null, "cause_id" uuid not null, "transition" varchar(200) not null, "approval_id" uuid null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "ledger_entries_transaction_idx" on "ledger_entries" ("transaction_id");`);
    this.addSql(
      `create index "ledger_entries_account_idx" on "ledger_entries" ("account", "created_at", "id");`,
    );
    this.addSql(
      `create index "ledger_entries_payout_idx" on "ledger_entries" ("payout_id", "created_at", "id") where "payout_id" is not null;`,
    );
    this.addSql(
      `create index "ledger_entries_movements_idx" on "ledger_entries" ("tenant_id", "created_at", "id") where "movement" is not null;`,
    );
    this.addSql(`create index "ledger_entries_cause_idx" on "ledger_entries" ("cause_id");`);
    this.addSql(
      `alter table "ledger_entries" add constraint "ledger_entries_amount_check" check (amount <> 0);`,
    );
    this.addSql(
      `alter table "ledger_entries" add constraint "ledger_entries_cause_object_check" check (cause_object in ('inflow', 'outflow', 'refund', 'payout', 'approval'));`,
    );

    this.addSql(`create or replace function "ledger_entries_balanced_fn"() returns trigger as $$
      begin
        if exists (select 1 from "ledger_entries" where "transaction_id" = new."transaction_id"
                    group by "currency" having sum("amount") <> 0) then
          raise exception 'ledger transaction % does not balance in every currency', new."transaction_id"
            using errcode = 'check_violation';
        end if;
        return null;
      end; $$ language plpgsql;`);
    this.addSql(
      `create constraint trigger "ledger_entries_balanced" after insert on "ledger_entries" deferrable initially deferred for each row execute function "ledger_entries_balanced_fn"();`,
    );

    this.addSql(`create or replace function "ledger_entries_immutable_fn"() returns trigger as $$
      begin
        raise exception 'ledger entries are immutable: % refused', tg_op using errcode = 'integrity_constraint_violation';
      end; $$ language plpgsql;`);
    this.addSql(
      `create trigger "ledger_entries_immutable" before update or delete on "ledger_entries" for each row execute function "ledger_entries_immutable_fn"();`,
    );
    this.addSql(
      `create trigger "ledger_entries_no_truncate" before truncate on "ledger_entries" for each statement execute function "ledger_entries_immutable_fn"();`,
    );

    this.addSql(`create or replace function "ledger_entries_balances_fn"() returns trigger as $$
      begin
        insert into "ledger_balance_deltas" ("account", "currency", "amount", "entries")
        select regexp_replace("account", '^(tenants:[^:]+:payouts|collection:bank):[^:]+$', '\\1'), "currency",
               sum("amount"), count(*)::int
          from added group by 1, 2;
        return null;
      end; $$ language plpgsql;`);
    this.addSql(
      `create trigger "ledger_entries_balances" after insert on "ledger_entries" referencing new table as added for each statement execute function "ledger_entries_balances_fn"();`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "ledger_entries" cascade;`);
    this.addSql(`drop function if exists "ledger_entries_balanced_fn"();`);
    this.addSql(`drop function if exists "ledger_entries_immutable_fn"();`);
    this.addSql(`drop function if exists "ledger_entries_balances_fn"();`);
    this.addSql(`drop table if exists "ledger_balance_deltas" cascade;`);
    this.addSql(`drop table if exists "ledger_balances" cascade;`);
  }
}
