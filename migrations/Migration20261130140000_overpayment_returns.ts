import { Migration } from '@mikro-orm/migrations';

/**
 * A refund returns either a failed payout's settlement (`SETTLEMENT`, every refund so far) or the
 * overpayment a successful payout set aside (`OVERPAYMENT`, an operator's approved return). Still
 * one refund per payout: the unique (payout_id, tenant_id) makes either the only one. The return
 * is the four-eyes money move `overpayment.return`.
 */
export class Migration20261130140000_overpayment_returns extends Migration {
  override name = 'Migration20261130140000_overpayment_returns';

  override up(): void | Promise<void> {
    this.addSql(`alter table "refunds" add column "kind" text not null default 'SETTLEMENT';`);
    this.addSql(
      `alter table "refunds" add constraint "refunds_kind_check" check ("kind" in ('SETTLEMENT', 'OVERPAYMENT'));`,
    );
    this.addSql(`alter table "approvals" drop constraint if exists "approvals_action_check";`);
    this.addSql(
      `alter table "approvals" add constraint "approvals_action_check" check ("action" in ('inflow.attribute', 'inflow.return', 'payout.fail', 'refund.retry', 'refund.raise', 'overpayment.return', 'recon.resolve', 'payee.accept', 'approval_rule.set', 'operator.role'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "approvals" drop constraint if exists "approvals_action_check";`);
    this.addSql(
      `alter table "approvals" add constraint "approvals_action_check" check ("action" in ('inflow.attribute', 'inflow.return', 'payout.fail', 'refund.retry', 'refund.raise', 'recon.resolve', 'payee.accept', 'approval_rule.set', 'operator.role'));`,
    );
    this.addSql(`alter table "refunds" drop column "kind";`);
  }
}
