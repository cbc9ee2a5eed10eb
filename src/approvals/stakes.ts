import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * What a proposal puts at stake, as its rows show it (CLI and console): the tenant whose money it
 * is, the amount and currency, and the state of the object it acts on, read when it is proposed.
 */
export interface Stake {
  tenantId: string | null;
  amount: string | null;
  currency: string | null;
  targetState: string | null;
}

const NOTHING: Stake = { tenantId: null, amount: null, currency: null, targetState: null };

/** The state of a row with inner states in its snapshot, as `PENDING_PAYMENT.held`. */
const withInner = (column: string) => `${column} || coalesce('.' || (snapshot->'value'->>${column}), '')`;

const QUERIES = {
  payout: `select tenant_id, received_amount::text as amount, settlement_currency as currency,
                  ${withInner('status')} as state from payouts where id = ?`,
  inflow: `select tenant_id, amount::text as amount, currency, ${withInner('state')} as state
             from inflows where id = ?`,
  refund: `select tenant_id, refund_amount::text as amount, received_currency as currency, status as state
             from refunds where id = ?`,
  'recon-break': `select tenant_id, coalesce(rail_amount, ledger_amount)::text as amount, currency,
                         status as state from recon_breaks where id = ?`,
} as const;

/** The stake of the `kind` of object with `id` (nothing known when there is none). */
export async function stakeOf(em: EntityManager, kind: keyof typeof QUERIES, id: string): Promise<Stake> {
  const [row] = await em.execute<
    { tenant_id: string | null; amount: string | null; currency: string | null; state: string | null }[]
  >(QUERIES[kind], [id]);
  if (!row) return NOTHING;
  return { tenantId: row.tenant_id, amount: row.amount, currency: row.currency, targetState: row.state };
}
