import { z } from 'zod';
import { moneyMove } from '#src/approvals/moves.ts';
import { stakeOf } from '#src/approvals/stakes.ts';
import { AppError, invalidField } from '#src/http/errors.ts';
import { idIn, iso, timestampOut } from '#src/http/schemas.ts';
import type { Refund } from './entities.ts';
import { returnOverpaymentIn } from './overpayments.ts';
import { refundOut, toRefundResource } from './resource.ts';
import { checkRefundRetry, type RaiseOutcome, raiseRefundIn, retryRefundIn } from './service.ts';

/** A refund as operators see it: the merchant's view plus the tenant and the failure context. */
export const adminRefundOut = refundOut.extend({
  tenant_id: z.string(),
  /** When its status last changed: for a FAILED refund, when it failed (its queue's age counts from then). */
  updated_at: timestampOut,
});
export const toAdminRefund = (r: Refund) => ({
  ...toRefundResource(r),
  tenant_id: r.tenant.id,
  updated_at: iso(r.updatedAt),
});

/** The refund decisions that move money, each run once a second operator approves it. */
export const refundMoves = {
  'refund.retry': moneyMove({
    action: 'refund.retry',
    args: z.strictObject({ refund_id: idIn }),
    targets: (a) => [a.refund_id],
    stake: (em, a) => stakeOf(em, 'refund', a.refund_id),
    // The rail is asked before the transaction opens, at approval as it was at the proposal.
    prepare: (deps, a) => checkRefundRetry(deps, a.refund_id),
    run: async (em, deps, { args, now, prepared }) => ({
      refund: toAdminRefund(
        await retryRefundIn(em, deps, {
          refundId: args.refund_id,
          attemptNumber: (prepared as { attemptNumber: number }).attemptNumber,
          now,
        }),
      ),
    }),
  }),
  'refund.raise': moneyMove({
    action: 'refund.raise',
    args: z.strictObject({ payout_id: z.uuid() }),
    targets: (a) => [a.payout_id],
    stake: (em, a) => stakeOf(em, 'payout', a.payout_id),
    run: async (em, deps, { args, now }) => {
      const outcome = await raiseRefundIn(em, deps, args.payout_id, now);
      if (outcome.kind !== 'RAISED') throw raiseRefusal(outcome);
      return { refund: toAdminRefund(outcome.refund) };
    },
  }),
  'overpayment.return': moneyMove({
    action: 'overpayment.return',
    args: z.strictObject({ payout_id: z.uuid() }),
    targets: (a) => [a.payout_id],
    stake: (em, a) => stakeOf(em, 'overpayment', a.payout_id),
    run: async (em, deps, { args, actor, now }) => ({
      refund: toAdminRefund(
        await returnOverpaymentIn(em, deps, { payoutId: args.payout_id, approvalId: actor.approvalId, now }),
      ),
    }),
  }),
};

/** Why an operator's raise raised nothing: the refund job takes these in its stride, an operator is told. */
function raiseRefusal(outcome: Exclude<RaiseOutcome, { kind: 'RAISED' }>): AppError {
  switch (outcome.kind) {
    case 'NO_PAYOUT':
      return new AppError('PAYOUT_NOT_FOUND');
    case 'NOT_ELIGIBLE':
      return invalidField('payout_id', outcome.reason);
    case 'ALREADY_RAISED':
      return invalidField(
        'payout_id',
        `has its refund already${outcome.refundId ? ` (${outcome.refundId})` : ''}; a payout is refunded once`,
      );
    case 'NO_DESTINATION':
      return invalidField(
        'payout_id',
        `belongs to a tenant with no active ${outcome.currency} refund destination; raise it once the merchant has registered one`,
      );
  }
}
