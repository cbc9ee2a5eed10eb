import type { PayoutStatus } from '#machines/payout.machine.ts';
import { type Sql, statement, TextArray } from '#src/db/sql.ts';
import type { Deps } from '#src/deps.ts';
import { inRounds } from '#src/lib/rounds.ts';
import { type InflowMachineRow, stepInflowOrThrow } from './lifecycle.ts';

/**
 * What a payout's failure does to the money held against it: each HELD inflow attributed to the
 * payout takes PAYOUT_FAILED and ends FOR_REFUND (`machines/inflow.machine.ts`), since the payout's
 * refund returns that money. The payout's lifecycle (`src/payouts/lifecycle.ts`) calls
 * {@link handHeldToRefund} in the transaction of every failure that can leave money held: one of a
 * payout that still waited for money. The settlement job's {@link sweepHeldOfFailedPayouts} hands
 * over what a failure written before this rule left HELD.
 *
 * The inflows take no timeline row of their own: the payout's failure (its timeline row, and the
 * audit row of the operator's approved proposal) is their record, as the payout's settlement is for
 * the money it matches. Merchants see no change (an inflow's state is not in its resource), so no
 * outbox event either.
 */

/** Inflows handed over per transaction by the sweep, and batches per settlement pass. */
export const SWEEP_BATCH = 100;
const MAX_SWEEP_ROUNDS = 10;

/**
 * Whether a payout's transition can leave money held against it with nobody to decide: it fails
 * while it still waited for money (PENDING_PAYMENT, held for review once money is attributed to
 * it). A payout leaves PENDING_PAYMENT otherwise only covered (its held money MATCHED in the same
 * transaction) or expired (from awaiting, when nothing is attributed to it).
 */
export function failsHoldingMoney(from: PayoutStatus | null, to: PayoutStatus): boolean {
  return from === 'PENDING_PAYMENT' && to === 'FAILED';
}

/**
 * The HELD inflows of the payouts being failed, locked (the payouts are locked first). `$2` holds
 * those payouts' tenants: with the payout ids it names the same rows, and a sharded cluster only
 * those tenants' nodes.
 */
const lockHeldOfPayouts = statement(
  'inflows_held_of_failing_payouts',
  `select id, tenant_id, state, snapshot from inflows
    where payout_id = any($1::uuid[]) and tenant_id = any($2::uuid[]) and state = 'HELD'
    order by id
    for update`,
);

/**
 * Up to `$1` HELD inflows attributed to a FAILED payout, claimed FOR UPDATE SKIP LOCKED: another
 * instance sweeping at the same time takes others. Read from the HELD inflows only (an index that
 * starts with the state), each one's payout status by the payout's key `(id, tenant_id)` (the
 * inflow's tenant is its payout's, and the subquery stays on the inflow's node once sharded): a
 * pass costs the held money, not either table. The status is a scalar subquery, which PostgreSQL
 * runs per row and never turns into a join: as `exists`, it hashed the FAILED payouts, read from
 * the whole table (the status has no index of its own). A FAILED payout is final, so its row needs
 * no lock.
 */
export const claimHeldOfFailedPayouts = statement(
  'inflows_held_of_failed_payouts_claim',
  `select f.id, f.tenant_id, f.state, f.snapshot from inflows f
    where f.state = 'HELD' and f.payout_id is not null
      and (select p.status from payouts p where p.id = f.payout_id and p.tenant_id = f.tenant_id) = 'FAILED'
    limit $1
    for update of f skip locked`,
);

// The ids are also given as a list, so that the rows are found through the primary key (see
// matching's `settlement_update_inflows`), each with its tenant; snapshots as text, parsed once
// into their column.
const writeInflowSteps = statement(
  'inflows_hand_to_refund',
  `update inflows f
      set state = u.state, snapshot = u.snapshot::jsonb, updated_at = $4
     from unnest($1::uuid[], $2::text[], $3::text[], $5::uuid[]) as u(id, state, snapshot, tenant_id)
    where f.id = any($1::uuid[]) and f.id = u.id and f.tenant_id = u.tenant_id`,
);

/** A held inflow as handing it over reads it: its machine and its tenant. */
type HeldInflow = InflowMachineRow & { tenant_id: string };

/** Steps each locked inflow through PAYOUT_FAILED and writes the results in one statement. */
async function handOver(tx: Sql, inflows: readonly HeldInflow[], now: Date): Promise<string[]> {
  if (inflows.length === 0) return [];
  const done = inflows.map((inflow) => stepInflowOrThrow(inflow, { type: 'PAYOUT_FAILED', now }));
  await tx.rows(writeInflowSteps, [
    inflows.map((i) => i.id),
    done.map((d) => d.to),
    new TextArray(done.map((d) => JSON.stringify(d.snapshot))),
    now,
    inflows.map((i) => i.tenant_id),
  ]);
  return inflows.map((i) => i.id);
}

/**
 * Hands the money held against `payouts` (each with its tenant) to their refunds, inside the
 * caller's transaction, which has just failed those payouts (locked) through their machine.
 * Returns the inflows moved.
 */
export async function handHeldToRefund(
  tx: Sql,
  payouts: readonly { id: string; tenantId: string }[],
  now: Date,
): Promise<string[]> {
  if (payouts.length === 0) return [];
  return handOver(
    tx,
    await tx.rows<HeldInflow>(lockHeldOfPayouts, [
      payouts.map((p) => p.id),
      [...new Set(payouts.map((p) => p.tenantId))],
    ]),
    now,
  );
}

/**
 * Part of each settlement pass: hands to their refunds the inflows still HELD against a payout
 * that has FAILED (a failure written before failures handed them over), a batch per transaction.
 * Returns how many it moved; usually none, found by one read of the held money.
 */
export async function sweepHeldOfFailedPayouts(
  deps: Pick<Deps, 'sql' | 'clock' | 'log'>,
  batch = SWEEP_BATCH,
): Promise<number> {
  return inRounds({ batch, maxRounds: MAX_SWEEP_ROUNDS }, async () => {
    const now = deps.clock.now();
    const ids = await deps.sql.transaction(async (tx) =>
      handOver(tx, await tx.rows<HeldInflow>(claimHeldOfFailedPayouts, [batch]), now),
    );
    if (ids.length > 0) {
      deps.log.info({ inflows: ids }, 'money held against failed payouts handed to their refunds');
    }
    return ids.length;
  });
}
