import { type EntityManager, LockMode } from '@mikro-orm/postgresql';
import { type RefundStatus, refundMachine } from '#machines/refund.machine.ts';
import { emSql, type Sql, statement } from '#src/db/sql.ts';
import type { Deps } from '#src/deps.ts';
import { initialState } from '#src/engine/engine.ts';
import { AppError, invalidField } from '#src/http/errors.ts';
import { accountName } from '#src/ledger/chart.ts';
import { flowNamed, flowTransaction } from '#src/ledger/flows.ts';
import { post, transitionName } from '#src/ledger/ledger.ts';
import { isUuid } from '#src/lib/ids.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import { Payout } from '#src/payouts/entities.ts';
import { activeRefundDestination } from '#src/refund-destinations/service.ts';
import { Inflow } from '#src/settlement/entities.ts';
import { Refund } from './entities.ts';
import { REFUND_FLOWS } from './money.ts';
import { destinationSnapshot, recordRefundEffects, refundAmounts } from './service.ts';

/**
 * The return of a successful payout's overpayment (an operator's `refund.return-overpayment`,
 * under four eyes). When a payout succeeds, what the merchant paid beyond the amount asked for is
 * set aside in `tenants:<tenant>:to_return:overpayments`, entries naming the payout. The approved
 * return, in the approval's transaction, brings that excess back to the payout
 * (OVERPAYMENT_TO_RETURN) and raises a refund of kind OVERPAYMENT for it to the merchant's active
 * refund destination: from there it is sent, confirmed, failed and retried like any refund, under
 * the stable rail reference `<refund id>:<attempt>`. A payout has one refund at most (the unique
 * index on refunds.payout_id), so an overpayment goes back once.
 */

const overpaymentSetAside = statement(
  'refunds_overpayment_set_aside',
  `select coalesce(sum(amount), 0)::text as amount
     from ledger_entries where payout_id = $1 and account = $2 and currency = $3`,
);

/** What a payout's entries left in its merchant's overpayments account, in `currency`: its excess still to return. */
export async function setAsideOf(
  sql: Sql,
  payout: { id: string; tenantId: string; currency: string },
): Promise<Decimal> {
  const [row] = await sql.rows<{ amount: string }>(overpaymentSetAside, [
    payout.id,
    accountName('overpayments', { tenant: payout.tenantId }),
    payout.currency,
  ]);
  return toDecimal(row?.amount ?? '0');
}

/**
 * Raises the return of a SUCCESSFUL payout's set-aside overpayment inside the caller's
 * transaction (an approved proposal's). Refused with the reason: another state, no excess set
 * aside, a refund of the payout already (its overpayment went back with it, or is going), no
 * active refund destination for the settlement currency.
 */
export async function returnOverpaymentIn(
  tx: EntityManager,
  deps: Pick<Deps, 'corridors'>,
  args: { payoutId: string; approvalId: string; now: Date },
): Promise<Refund> {
  const { payoutId, now } = args;
  if (!isUuid(payoutId)) throw new AppError('PAYOUT_NOT_FOUND');
  const payout = await tx.findOne(Payout, payoutId, { lockMode: LockMode.PESSIMISTIC_WRITE });
  if (!payout) throw new AppError('PAYOUT_NOT_FOUND');
  const tenantId = payout.tenant.id;
  if (payout.status !== 'SUCCESSFUL') {
    throw invalidField(
      'payout_id',
      `is ${payout.status}; only a SUCCESSFUL payout sets an overpayment aside (a failed payout's refund returns all it received)`,
    );
  }
  const existing = await tx.findOne(Refund, { payout: payoutId, tenant: tenantId });
  if (existing) {
    throw invalidField(
      'payout_id',
      existing.kind === 'OVERPAYMENT'
        ? `has its overpayment returned already (refund ${existing.id}, ${existing.status}); it goes back once`
        : `has a refund already (${existing.id}); a payout is refunded once`,
    );
  }
  const currency = payout.settlementCurrency;
  const excess = await setAsideOf(emSql(tx), { id: payoutId, tenantId, currency });
  if (!excess.gt(0)) throw invalidField('payout_id', 'set no overpayment aside; there is nothing to return');
  const destination = await activeRefundDestination(tx, tenantId, currency);
  if (!destination) {
    throw invalidField(
      'payout_id',
      `belongs to a tenant with no active ${currency} refund destination; return it once the merchant has registered one`,
    );
  }
  const snapshot = destinationSnapshot(destination);
  const amounts = refundAmounts(deps.corridors, currency, snapshot.destinationNetwork, excess);
  // The inflow that overpaid, else the first attributed to the payout.
  const inflows = await tx.find(
    Inflow,
    { payout: payoutId, tenant: tenantId },
    { orderBy: { createdAt: 'asc', id: 'asc' } },
  );
  const inflow = inflows.find((i) => toDecimal(i.overpaymentAmount).gt(0)) ?? inflows[0] ?? null;
  const initial = initialState(refundMachine, {});
  const refund = tx.create(Refund, {
    tenant: payout.tenant,
    payout,
    inflow,
    status: initial.status as RefundStatus,
    kind: 'OVERPAYMENT',
    snapshot: initial.snapshot,
    receivedAmount: excess,
    receivedCurrency: currency,
    networkFeeAmount: amounts.fee,
    refundAmount: amounts.refund,
    ...snapshot,
    processorReference: null,
    failureReason: null,
    attemptNumber: 1,
    dispatchedAt: null,
    settledAt: null,
  });
  // Flushed first: a concurrent return (or refund) fails here, on the unique index, before any entry.
  // The entries name the refund as their cause (the merchant's statement shows it) and the approval.
  await tx.flush();
  await post(emSql(tx), [
    flowTransaction(
      flowNamed(REFUND_FLOWS, 'refund', 'OVERPAYMENT_TO_RETURN'),
      {
        accounts: {
          overpayments: accountName('overpayments', { tenant: tenantId }),
          payout: accountName('payout', { tenant: tenantId, payout: payoutId }),
        },
        amounts: { overpayment: excess },
        currencies: { currency },
      },
      {
        tenantId,
        payoutId,
        approvalId: args.approvalId,
        at: now,
        causeId: refund.id,
        transition: transitionName('RAISED', '(new)', initial.status),
      },
    ),
  ]);
  await recordRefundEffects(
    tx,
    refund,
    { actions: initial.actions, event: 'RAISED', from: '(new)', to: initial.status },
    now,
  );
  return refund;
}
