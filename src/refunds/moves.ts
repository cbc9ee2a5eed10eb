import { z } from 'zod';
import { moneyMove } from '#src/approvals/moves.ts';
import { idIn } from '#src/http/schemas.ts';
import type { Refund } from './entities.ts';
import { refundOut, toRefundResource } from './resource.ts';
import { checkRefundRetry, raiseRefundIn, retryRefundIn } from './service.ts';

/** A refund as operators see it: the merchant's view plus the tenant and the failure context. */
export const adminRefundOut = refundOut.extend({ tenant_id: z.string() });
export const toAdminRefund = (r: Refund) => ({ ...toRefundResource(r), tenant_id: r.tenant.id });

/** The refund decisions that move money, each run once a second operator approves it. */
export const refundMoves = {
  'refund.retry': moneyMove({
    action: 'refund.retry',
    args: z.strictObject({ refund_id: idIn }),
    targets: (a) => [a.refund_id],
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
    run: async (em, deps, { args, now }) => {
      const outcome = await raiseRefundIn(em, deps, args.payout_id, now);
      return {
        outcome: outcome.kind,
        refund_id:
          outcome.kind === 'RAISED'
            ? outcome.refund.id
            : outcome.kind === 'ALREADY_RAISED'
              ? outcome.refundId
              : null,
        reason: outcome.kind === 'NOT_ELIGIBLE' ? outcome.reason : null,
      };
    },
  }),
};
