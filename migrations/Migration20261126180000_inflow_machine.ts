import { Migration } from '@mikro-orm/migrations';

/**
 * Inflows get a machine (`machines/inflow.machine.ts`) like every other object with a status: its
 * persisted snapshot beside the `state` column, written together. Existing rows get the snapshot
 * their state and columns describe: a HELD inflow is HELD.attributed when it names a payout, else
 * HELD.unattributed; the context is the frozen confirmations requirement and the payout.
 */
export class Migration20261126180000_inflow_machine extends Migration {
  override name = 'Migration20261126180000_inflow_machine';

  override up(): void | Promise<void> {
    this.addSql(`alter table "inflows" add "snapshot" jsonb null;`);
    this.addSql(
      `update "inflows" set "snapshot" = jsonb_build_object(
         'status', case when "state" in ('MATCHED', 'RETURNED') then 'done' else 'active' end,
         'value', case when "state" = 'HELD'
                       then jsonb_build_object('HELD', case when "payout_id" is null then 'unattributed' else 'attributed' end)
                       else to_jsonb("state") end,
         'historyValue', '{}'::jsonb,
         'context', jsonb_build_object('confirmationsRequired', "confirmations_required", 'payoutId', "payout_id"),
         'children', '{}'::jsonb);`,
    );
    this.addSql(`alter table "inflows" alter column "snapshot" set not null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "inflows" drop column "snapshot";`);
  }
}
