import { Migration } from '@mikro-orm/migrations';

/**
 * Approval rules (how many approvers, of which roles, above which amount), what each proposal
 * needs (written when it is made), and the proposals that are not money moves: changing a rule
 * and raising an operator's role.
 */
export class Migration20261128140200_approval_rules extends Migration {
  override name = 'Migration20261128140200_approval_rules';

  override up(): void | Promise<void> {
    this.addSql(`create table "approval_rules" (
      "id" uuid not null, "action" varchar(64) not null, "above_amount" numeric null,
      "currency" varchar(8) null, "approvers" int not null, "roles" text[] not null,
      "approval_id" uuid not null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "approvals" add column "required_approvers" int not null default 1;`);
    this.addSql(
      `alter table "approvals" add column "approver_roles" text[] not null default '{approver,admin}';`,
    );
    this.addSql(`alter table "approvals" add column "rule_id" uuid null;`);
    this.addSql(`alter table "approvals" drop constraint if exists "approvals_action_check";`);
    this.addSql(
      `alter table "approvals" add constraint "approvals_action_check" check ("action" in ('inflow.attribute', 'inflow.return', 'payout.fail', 'refund.retry', 'refund.raise', 'recon.resolve', 'approval_rule.set', 'operator.role'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "approvals" drop constraint if exists "approvals_action_check";`);
    this.addSql(
      `alter table "approvals" add constraint "approvals_action_check" check ("action" in ('inflow.attribute', 'inflow.return', 'payout.fail', 'refund.retry', 'refund.raise', 'recon.resolve'));`,
    );
    this.addSql(`alter table "approvals" drop column "rule_id";`);
    this.addSql(`alter table "approvals" drop column "approver_roles";`);
    this.addSql(`alter table "approvals" drop column "required_approvers";`);
    this.addSql(`drop table if exists "approval_rules";`);
  }
}
