import { Migration } from '@mikro-orm/migrations';

/**
 * A schema ready for Citus (docs/scaling.md, "Sharding by tenant"): every unique key of a
 * tenant table includes tenant_id, every foreign key between tenant tables is (tenant_id, …)
 * against a (…, tenant_id) unique key of its target, and the timeline carries its payout's
 * tenant_id. Each new unique key puts the column lookups use first, so the indexes that served
 * lookups by payout, event or delivery still do. Works on filled tables: the timeline's tenant_id
 * is filled from its payouts before it becomes NOT NULL.
 */
export class Migration20261128170000_citus_ready extends Migration {
  override name = 'Migration20261128170000_citus_ready';

  override up(): void | Promise<void> {
    // Foreign keys on a single id go first: the composite ones below replace them.
    for (const [table, fk] of SINGLE_FKS) this.addSql(`alter table "${table}" drop constraint "${fk}";`);

    this.addSql(
      `alter table "payouts" add constraint "payouts_id_tenant_id_unique" unique ("id", "tenant_id");`,
    );
    this.addSql(`alter table "payout_status_timeline" add column "tenant_id" uuid null;`);
    this.addSql(
      `update "payout_status_timeline" t set "tenant_id" = p."tenant_id" from "payouts" p where p."id" = t."payout_id";`,
    );
    this.addSql(`alter table "payout_status_timeline" alter column "tenant_id" set not null;`);
    this.addSql(
      `alter table "payout_status_timeline" add constraint "payout_status_timeline_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id");`,
    );

    this.addSql(
      `alter table "payment_instructions" drop constraint "payment_instructions_payout_id_unique";`,
    );
    this.addSql(
      `alter table "payment_instructions" add constraint "payment_instructions_id_tenant_id_unique" unique ("id", "tenant_id"), add constraint "payment_instructions_payout_id_tenant_id_unique" unique ("payout_id", "tenant_id");`,
    );
    this.addSql(`drop index "payment_instructions_open_amount_unique";`);
    this.addSql(
      `create unique index "payment_instructions_open_amount_unique" on "payment_instructions" ("account_unique", "expected_amount", "tenant_id") where "status" = 'UNPAID';`,
    );

    this.addSql(`alter table "outflows" drop constraint "outflows_payout_id_attempt_number_unique";`);
    this.addSql(
      `alter table "outflows" add constraint "outflows_payout_id_attempt_number_tenant_id_unique" unique ("payout_id", "attempt_number", "tenant_id");`,
    );

    this.addSql(
      `alter table "outbox_events" add constraint "outbox_events_id_tenant_id_unique" unique ("id", "tenant_id");`,
    );

    this.addSql(`alter table "inflows" drop constraint "inflows_rail_external_ref_unique";`);
    this.addSql(
      `alter table "inflows" add constraint "inflows_rail_external_ref_tenant_id_unique" unique ("rail", "external_ref", "tenant_id"), add constraint "inflows_id_tenant_id_unique" unique ("id", "tenant_id");`,
    );

    this.addSql(`alter table "refunds" drop constraint "refunds_payout_id_unique";`);
    this.addSql(
      `alter table "refunds" add constraint "refunds_payout_id_tenant_id_unique" unique ("payout_id", "tenant_id");`,
    );

    this.addSql(
      `alter table "webhook_deliveries" add constraint "webhook_deliveries_id_tenant_id_unique" unique ("id", "tenant_id");`,
    );
    this.addSql(`drop index "webhook_deliveries_published_unique";`);
    this.addSql(
      `create unique index "webhook_deliveries_published_unique" on "webhook_deliveries" ("event_id", "target_url", "tenant_id") where "redelivery_of" is null;`,
    );
    this.addSql(`drop index "webhook_deliveries_open_redelivery_unique";`);
    this.addSql(
      `create unique index "webhook_deliveries_open_redelivery_unique" on "webhook_deliveries" ("event_id", "tenant_id") where "redelivery_of" is not null and "status" in ('PENDING', 'ATTEMPTING', 'RETRY_SCHEDULED');`,
    );

    this.addSql(
      `alter table "webhook_delivery_attempts" drop constraint "webhook_delivery_attempts_delivery_id_attempt_number_unique";`,
    );
    this.addSql(
      `alter table "webhook_delivery_attempts" add constraint "webhook_delivery_attempts_delivery_attempt_unique" unique ("delivery_id", "attempt_number", "tenant_id");`,
    );

    for (const [table, name, columns, target, rule] of TENANT_FKS) {
      this.addSql(
        `alter table "${table}" add constraint "${name}" foreign key ("tenant_id", "${columns}") references "${target}" ("tenant_id", "id")${rule ? ` on delete set null ("${columns}")` : ''};`,
      );
    }
  }

  override down(): void | Promise<void> {
    for (const [table, name] of TENANT_FKS) this.addSql(`alter table "${table}" drop constraint "${name}";`);
    this.addSql(`drop index "webhook_deliveries_open_redelivery_unique";`);
    this.addSql(
      `create unique index "webhook_deliveries_open_redelivery_unique" on "webhook_deliveries" ("event_id") where "redelivery_of" is not null and "status" in ('PENDING', 'ATTEMPTING', 'RETRY_SCHEDULED');`,
    );
    this.addSql(`drop index "webhook_deliveries_published_unique";`);
    this.addSql(
      `create unique index "webhook_deliveries_published_unique" on "webhook_deliveries" ("event_id", "target_url") where "redelivery_of" is null;`,
    );
    this.addSql(`drop index "payment_instructions_open_amount_unique";`);
    this.addSql(
      `create unique index "payment_instructions_open_amount_unique" on "payment_instructions" ("account_unique", "expected_amount") where "status" = 'UNPAID';`,
    );
    this.addSql(
      `alter table "webhook_delivery_attempts" drop constraint "webhook_delivery_attempts_delivery_attempt_unique", add constraint "webhook_delivery_attempts_delivery_id_attempt_number_unique" unique ("delivery_id", "attempt_number");`,
    );
    this.addSql(`alter table "webhook_deliveries" drop constraint "webhook_deliveries_id_tenant_id_unique";`);
    this.addSql(
      `alter table "refunds" drop constraint "refunds_payout_id_tenant_id_unique", add constraint "refunds_payout_id_unique" unique ("payout_id");`,
    );
    this.addSql(
      `alter table "inflows" drop constraint "inflows_rail_external_ref_tenant_id_unique", drop constraint "inflows_id_tenant_id_unique", add constraint "inflows_rail_external_ref_unique" unique ("rail", "external_ref");`,
    );
    this.addSql(`alter table "outbox_events" drop constraint "outbox_events_id_tenant_id_unique";`);
    this.addSql(
      `alter table "outflows" drop constraint "outflows_payout_id_attempt_number_tenant_id_unique", add constraint "outflows_payout_id_attempt_number_unique" unique ("payout_id", "attempt_number");`,
    );
    this.addSql(
      `alter table "payment_instructions" drop constraint "payment_instructions_id_tenant_id_unique", drop constraint "payment_instructions_payout_id_tenant_id_unique", add constraint "payment_instructions_payout_id_unique" unique ("payout_id");`,
    );
    this.addSql(`alter table "payout_status_timeline" drop column "tenant_id";`);
    this.addSql(`alter table "payouts" drop constraint "payouts_id_tenant_id_unique";`);
    for (const [table, fk, column, target, setNull] of SINGLE_FK_DEFS) {
      this.addSql(
        `alter table "${table}" add constraint "${fk}" foreign key ("${column}") references "${target}" ("id")${setNull ? ' on delete set null' : ''};`,
      );
    }
  }
}

/** [table, constraint, column, referenced table, on delete set null] of the single-column keys replaced. */
const SINGLE_FK_DEFS: readonly (readonly [string, string, string, string, boolean])[] = [
  ['payout_status_timeline', 'payout_status_timeline_payout_id_foreign', 'payout_id', 'payouts', false],
  ['payment_instructions', 'payment_instructions_payout_id_foreign', 'payout_id', 'payouts', false],
  ['outflows', 'outflows_payout_id_foreign', 'payout_id', 'payouts', false],
  ['inflows', 'inflows_instruction_id_foreign', 'instruction_id', 'payment_instructions', true],
  ['inflows', 'inflows_payout_id_foreign', 'payout_id', 'payouts', true],
  ['refunds', 'refunds_inflow_id_foreign', 'inflow_id', 'inflows', true],
  ['refunds', 'refunds_payout_id_foreign', 'payout_id', 'payouts', false],
  ['webhook_deliveries', 'webhook_deliveries_event_id_foreign', 'event_id', 'outbox_events', false],
  [
    'webhook_deliveries',
    'webhook_deliveries_redelivery_of_foreign',
    'redelivery_of',
    'webhook_deliveries',
    true,
  ],
  [
    'webhook_delivery_attempts',
    'webhook_delivery_attempts_delivery_id_foreign',
    'delivery_id',
    'webhook_deliveries',
    false,
  ],
];
const SINGLE_FKS = SINGLE_FK_DEFS.map(([table, fk]) => [table, fk] as const);

/** The same keys with tenant_id in front: [table, constraint, column, referenced table, on delete set null]. */
const TENANT_FKS = SINGLE_FK_DEFS.map(
  ([table, fk, column, target, setNull]) =>
    [table, fk.replace(/_foreign$/, '_tenant_foreign'), column, target, setNull] as const,
);
