import { Migration } from '@mikro-orm/migrations';

/**
 * The operators' list of money waiting for a decision (`admin.settlement.inflows`), read in its
 * page order (created_at, id) from an index of the HELD and UNMATCHED inflows, for all tenants and
 * for one: every variant of the list an index scan that stops at the page, never a sort of the
 * queue (`inflowsNeedingAttention` in src/settlement/operator.ts); and its part that no payout took
 * (the INFLOWS_UNMATCHED queue, `unattributed`) from an index of its own.
 */
export class Migration20261126235000_inflows_attention extends Migration {
  override name = 'Migration20261126235000_inflows_attention';

  override up(): void | Promise<void> {
    this.addSql(
      `create index "inflows_attention_index" on "inflows" ("created_at", "id") where "state" in ('HELD', 'UNMATCHED');`,
    );
    this.addSql(
      `create index "inflows_tenant_attention_index" on "inflows" ("tenant_id", "created_at", "id") where "state" in ('HELD', 'UNMATCHED');`,
    );
    this.addSql(
      `create index "inflows_unattributed_index" on "inflows" ("created_at", "id") where "state" in ('HELD', 'UNMATCHED') and "payout_id" is null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "inflows_attention_index";`);
    this.addSql(`drop index if exists "inflows_tenant_attention_index";`);
    this.addSql(`drop index if exists "inflows_unattributed_index";`);
  }
}
