/**
 * How each table would be placed on a Citus cluster (docs/scaling.md, "Sharding by tenant"):
 * distributed by `tenant_id` and co-located, a reference table copied to every node, or local to
 * the coordinator. test/db/citus-readiness.test.ts reads the live schema from pg_catalog and
 * fails when a table is missing here or breaks the rules of its kind.
 */
export type Distribution = 'distributed' | 'reference' | 'local';

export const TABLE_DISTRIBUTION = {
  // Merchant-owned rows, distributed by tenant_id.
  idempotency_keys: 'distributed',
  quotes: 'distributed',
  refund_destinations: 'distributed',
  webhook_configs: 'distributed',
  payouts: 'distributed',
  payout_status_timeline: 'distributed',
  payment_instructions: 'distributed',
  inflows: 'distributed',
  outflows: 'distributed',
  refunds: 'distributed',
  outbox_events: 'distributed',
  webhook_deliveries: 'distributed',
  webhook_delivery_attempts: 'distributed',
  // Small, read by every tenant's work, looked up without a tenant (the directory of tenants,
  // of API-key hashes and of deposit addresses, which route a chain transfer to its tenant).
  tenants: 'reference',
  api_keys: 'reference',
  deposit_addresses: 'reference',
  operators: 'reference',
  approval_rules: 'reference',
  // Per receiver (URL origin), the deliveries in flight: receivers are shared across tenants.
  webhook_origins_in_flight: 'reference',
  // The platform's own rows, read across tenants, on the coordinator.
  tasks: 'local',
  rail_cursors: 'local',
  audit: 'local',
  approvals: 'local',
  exception_overdue_notices: 'local',
  ledger_entries: 'local',
  ledger_balances: 'local',
  ledger_balance_deltas: 'local',
  ledger_violations: 'local',
  recon_runs: 'local',
  recon_accounts: 'local',
  recon_breaks: 'local',
  recon_rail_lines: 'local',
  recon_rail_totals: 'local',
  recon_processor_lines: 'local',
  mikro_orm_migrations: 'local',
} as const satisfies Record<string, Distribution>;

/**
 * Distributed tables whose primary key is still `(id)` alone, not `(id, tenant_id)`: none left.
 * Every distributed table is keyed by `(id, tenant_id)`, the partitioned ones with their partition
 * key (docs/scaling.md); the list stays so that the test holds it exact if one ever joins it.
 */
export const KEYED_BY_ID_ALONE: readonly string[] = [];
