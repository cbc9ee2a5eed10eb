import { Migration } from '@mikro-orm/migrations';

/**
 * Proposals of money moves (four eyes, src/approvals): the move and its arguments, the proposer
 * and note, the decision, and the status owned by machines/approval.machine.ts with its snapshot.
 */
export class Migration20261126191000_approvals extends Migration {
  override name = 'Migration20261126191000_approvals';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "approvals" ("id" uuid not null, "status" text not null, "snapshot" jsonb not null, "action" text not null, "args" jsonb not null, "target_ids" text[] not null, "note" text not null, "proposer_id" uuid not null, "decider_id" uuid null, "decision_note" text null, "failure_code" varchar(64) null, "failure_reason" text null, "result" jsonb null, "expires_at" timestamptz not null, "decided_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "approvals_status_created_idx" on "approvals" ("status", "created_at", "id");`);
    this.addSql(
      `create index "approvals_pending_expiry_idx" on "approvals" ("expires_at") where "status" = 'PENDING';`,
    );
    this.addSql(
      `alter table "approvals" add constraint "approvals_status_check" check ("status" in ('PENDING', 'APPROVED', 'REJECTED', 'EXPIRED', 'FAILED'));`,
    );
    this.addSql(
      `alter table "approvals" add constraint "approvals_action_check" check ("action" in ('inflow.attribute', 'inflow.return', 'payout.fail', 'refund.retry', 'refund.raise'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "approvals" cascade;`);
  }
}
