import { Migration } from '@mikro-orm/migrations';

/**
 * The payee name check (src/payees): each payout's verdict on the beneficiary's name against the
 * institution's (null where no check applies: crypto wallets, and payouts made before it), the
 * name the institution holds and when it answered; the proposal `payee.accept` (four eyes on
 * accepting a held payee's name); each tenant's policy for a NO_MATCH (`allow`
 * for every tenant until an operator says otherwise); and the partial index of the exception
 * queue PAYOUTS_HELD_PAYEE_NAME (payouts in CREATED.payeeHeld).
 */
export class Migration20261128150000_payee_name_check extends Migration {
  override name = 'Migration20261128150000_payee_name_check';

  override up(): void | Promise<void> {
    this.addSql(
      `alter table "payouts" add column "payee_check" text check ("payee_check" in ('PENDING', 'MATCH', 'CLOSE_MATCH', 'NO_MATCH', 'UNAVAILABLE')) null, add column "payee_institution_name" varchar(200) null, add column "payee_checked_at" timestamptz null;`,
    );
    this.addSql(
      `alter table "tenants" add column "payee_name_policy" text check ("payee_name_policy" in ('allow', 'hold', 'refuse')) not null default 'allow';`,
    );
    this.addSql(`alter table "approvals" drop constraint if exists "approvals_action_check";`);
    this.addSql(
      `alter table "approvals" add constraint "approvals_action_check" check ("action" in ('inflow.attribute', 'inflow.return', 'payout.fail', 'refund.retry', 'refund.raise', 'recon.resolve', 'payee.accept', 'approval_rule.set', 'operator.role'));`,
    );
    this.addSql(
      `create index "payouts_held_payee_index" on "payouts" ("created_at", "id") where "status" = 'CREATED' and (("snapshot" -> 'value') ->> 'CREATED') = 'payeeHeld';`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "payouts_held_payee_index";`);
    this.addSql(`alter table "approvals" drop constraint if exists "approvals_action_check";`);
    this.addSql(
      `alter table "approvals" add constraint "approvals_action_check" check ("action" in ('inflow.attribute', 'inflow.return', 'payout.fail', 'refund.retry', 'refund.raise', 'recon.resolve', 'approval_rule.set', 'operator.role'));`,
    );
    this.addSql(`alter table "tenants" drop column if exists "payee_name_policy";`);
    this.addSql(
      `alter table "payouts" drop column if exists "payee_check", drop column if exists "payee_institution_name", drop column if exists "payee_checked_at";`,
    );
  }
}
