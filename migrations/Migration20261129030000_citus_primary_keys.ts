import { Migration } from '@mikro-orm/migrations';

/**
 * A schema ready for Citus, the primary keys (docs/scaling.md, "Sharding by tenant"): the
 * merchant tables keyed by `(id)` alone are keyed by `(id, tenant_id)` (the timeline, partitioned
 * by month, by `(id, tenant_id, created_at)`). `id` stays first, so the key's index still serves
 * every lookup by id. The unique `(id, tenant_id)` that the foreign keys referenced becomes the
 * primary key itself: the foreign keys onto it are dropped, the unique key with them, and made
 * again onto the primary key. Works on filled tables: each key is built from the rows there, and
 * the foreign keys are checked again as they are made.
 *
 * `outbox_events`, `webhook_deliveries` and `webhook_delivery_attempts` are left to their own
 * migration (they are to be partitioned, and keyed with it).
 */
export class Migration20261129030000_citus_primary_keys extends Migration {
  override name = 'Migration20261129030000_citus_primary_keys';

  override up(): void | Promise<void> {
    for (const [table, name] of FKS) this.addSql(`alter table "${table}" drop constraint "${name}";`);
    for (const table of REFERENCED) {
      this.addSql(
        `alter table "${table}" drop constraint "${table}_pkey", drop constraint "${table}_id_tenant_id_unique", add constraint "${table}_pkey" primary key ("id", "tenant_id");`,
      );
    }
    for (const table of UNREFERENCED) {
      this.addSql(
        `alter table "${table}" drop constraint "${table}_pkey", add constraint "${table}_pkey" primary key ("id", "tenant_id");`,
      );
    }
    this.addSql(
      `alter table "payout_status_timeline" drop constraint "payout_status_timeline_pkey", add constraint "payout_status_timeline_pkey" primary key ("id", "tenant_id", "created_at");`,
    );
    for (const [table, name, column, target, setNull] of FKS) {
      this.addSql(
        `alter table "${table}" add constraint "${name}" foreign key ("tenant_id", "${column}") references "${target}" ("tenant_id", "id")${setNull ? ` on delete set null ("${column}")` : ''};`,
      );
    }
  }

  override down(): void | Promise<void> {
    for (const [table, name] of FKS) this.addSql(`alter table "${table}" drop constraint "${name}";`);
    this.addSql(
      `alter table "payout_status_timeline" drop constraint "payout_status_timeline_pkey", add constraint "payout_status_timeline_pkey" primary key ("id", "created_at");`,
    );
    for (const table of UNREFERENCED) {
      this.addSql(
        `alter table "${table}" drop constraint "${table}_pkey", add constraint "${table}_pkey" primary key ("id");`,
      );
    }
    for (const table of REFERENCED) {
      this.addSql(
        `alter table "${table}" drop constraint "${table}_pkey", add constraint "${table}_pkey" primary key ("id"), add constraint "${table}_id_tenant_id_unique" unique ("id", "tenant_id");`,
      );
    }
    for (const [table, name, column, target, setNull] of FKS) {
      this.addSql(
        `alter table "${table}" add constraint "${name}" foreign key ("tenant_id", "${column}") references "${target}" ("tenant_id", "id")${setNull ? ` on delete set null ("${column}")` : ''};`,
      );
    }
  }
}

/** Tables whose unique (id, tenant_id) foreign keys reference: it becomes their primary key. */
const REFERENCED = ['payouts', 'payment_instructions', 'inflows'] as const;

/** Tables that no foreign key references. */
const UNREFERENCED = ['idempotency_keys', 'quotes', 'refund_destinations', 'outflows', 'refunds'] as const;

/** [table, constraint, column, referenced table, on delete set null] of the keys onto REFERENCED. */
const FKS: readonly (readonly [string, string, string, (typeof REFERENCED)[number], boolean])[] = [
  [
    'payout_status_timeline',
    'payout_status_timeline_payout_id_tenant_foreign',
    'payout_id',
    'payouts',
    false,
  ],
  ['payment_instructions', 'payment_instructions_payout_id_tenant_foreign', 'payout_id', 'payouts', false],
  ['outflows', 'outflows_payout_id_tenant_foreign', 'payout_id', 'payouts', false],
  ['inflows', 'inflows_instruction_id_tenant_foreign', 'instruction_id', 'payment_instructions', true],
  ['inflows', 'inflows_payout_id_tenant_foreign', 'payout_id', 'payouts', true],
  ['refunds', 'refunds_inflow_id_tenant_foreign', 'inflow_id', 'inflows', true],
  ['refunds', 'refunds_payout_id_tenant_foreign', 'payout_id', 'payouts', false],
];
