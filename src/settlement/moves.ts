import { z } from 'zod';
import { actorMetadata, moneyMove } from '#src/approvals/moves.ts';
import { stakeOf } from '#src/approvals/stakes.ts';
import { idIn } from '#src/http/schemas.ts';
import { toAdminInflow, toPayoutSummary } from './admin.schemas.ts';
import { Inflow } from './entities.ts';
import { attributeInflow, failHeldPayout, returnInflow } from './operator.ts';

/** The evidence of a return made outside the service: the bank's reference or the transaction hash. */
export const returnReference = z.string().trim().min(1).max(200);

/** The settlement decisions that move money, each run once a second operator approves it. */
export const settlementMoves = {
  'inflow.attribute': moneyMove({
    action: 'inflow.attribute',
    args: z.strictObject({ inflow_id: idIn, payout_id: idIn }),
    targets: (a) => [a.inflow_id, a.payout_id],
    stake: (em, a) => stakeOf(em, 'inflow', a.inflow_id),
    run: async (em, _deps, { args, actor, now }) => {
      await attributeInflow(em, {
        inflowId: args.inflow_id,
        payoutId: args.payout_id,
        now,
        metadata: actorMetadata(actor),
      });
      // Attribution writes with plain statements: read the row as it now is, not the entity as loaded.
      const inflow = await em.findOneOrFail(Inflow, args.inflow_id, { populate: ['payout'], refresh: true });
      return { inflow: toAdminInflow(inflow), payout: toPayoutSummary(inflow.payout!) };
    },
  }),
  'inflow.return': moneyMove({
    action: 'inflow.return',
    // `reference` is optional here only so that a proposal made before it was asked for still runs.
    args: z.strictObject({ inflow_id: idIn, reference: returnReference.optional() }),
    targets: (a) => [a.inflow_id],
    stake: (em, a) => stakeOf(em, 'inflow', a.inflow_id),
    run: async (em, _deps, { args, actor, now }) => ({
      inflow: toAdminInflow(
        await returnInflow(em, {
          inflowId: args.inflow_id,
          reference: args.reference ?? null,
          now,
          approvalId: actor.approvalId,
        }),
      ),
    }),
  }),
  'payout.fail': moneyMove({
    action: 'payout.fail',
    args: z.strictObject({ payout_id: idIn }),
    targets: (a) => [a.payout_id],
    stake: (em, a) => stakeOf(em, 'payout', a.payout_id),
    run: async (em, _deps, { args, actor, now }) => ({
      payout: toPayoutSummary(
        await failHeldPayout(em, { payoutId: args.payout_id, now, metadata: actorMetadata(actor) }),
      ),
    }),
  }),
};
