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
  /**
   * The locked rate of the payout the money belongs to (destination units per settlement unit)
   * and its destination currency: how approval rules in that currency compare the amount.
   */
  rate?: string | null;
  rateCurrency?: string | null;
}

const NOTHING: Stake = { tenantId: null, amount: null, currency: null, targetState: null };

/** The locked rate of payout `p` (a table alias), for the stake's conversion. */
const RATE = (p: string) => `${p}.exchange_rate::text as rate, ${p}.destination_currency as rate_currency`;

/** The state of a row with inner states in its snapshot, as `PENDING_PAYMENT.held`. */
const withInner = (column: string, snapshot = 'snapshot') =>
  `${column} || coalesce('.' || (${snapshot}->'value'->>${column}), '')`;

const QUERIES = {
  payout: `select tenant_id, received_amount::text as amount, settlement_currency as currency,
                  ${withInner('status')} as state, ${RATE('payouts')} from payouts where id = ?`,
  // A successful payout's overpayment still set aside: what its return would send back.
  overpayment: `select p.tenant_id,
                       (select coalesce(sum(e.amount), 0) from ledger_entries e
                         where e.payout_id = p.id and e.currency = p.settlement_currency
                           and e.account = 'tenants:' || p.tenant_id || ':to_return:overpayments')::text as amount,
                       p.settlement_currency as currency, ${withInner('p.status', 'p.snapshot')} as state, ${RATE('p')}
                  from payouts p where p.id = ?`,
  inflow: `select i.tenant_id, i.amount::text as amount, i.currency, ${withInner('i.state', 'i.snapshot')} as state,
                  ${RATE('p')}
             from inflows i left join payouts p on p.id = i.payout_id where i.id = ?`,
  refund: `select r.tenant_id, r.refund_amount::text as amount, r.received_currency as currency, r.status as state,
                  ${RATE('p')}
             from refunds r join payouts p on p.id = r.payout_id where r.id = ?`,
  'recon-break': `select b.tenant_id, coalesce(b.rail_amount, b.ledger_amount)::text as amount, b.currency,
                         b.status as state, ${RATE('p')}
                    from recon_breaks b left join payouts p on p.id = b.payout_id where b.id = ?`,
} as const;

/** The stake of the `kind` of object with `id` (nothing known when there is none). */
export async function stakeOf(em: EntityManager, kind: keyof typeof QUERIES, id: string): Promise<Stake> {
  const [row] = await em.execute<
    {
      tenant_id: string | null;
      amount: string | null;
      currency: string | null;
      state: string | null;
      rate: string | null;
      rate_currency: string | null;
    }[]
  >(QUERIES[kind], [id]);
  if (!row) return NOTHING;
  return {
    tenantId: row.tenant_id,
    amount: row.amount,
    currency: row.currency,
    targetState: row.state,
    rate: row.rate,
    rateCurrency: row.rate_currency,
  };
}
