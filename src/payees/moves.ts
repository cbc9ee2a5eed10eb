import { LockMode } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { actorMetadata, moneyMove } from '#src/approvals/moves.ts';
import { stakeOf } from '#src/approvals/stakes.ts';
import { AppError, invalidField } from '#src/http/errors.ts';
import { idIn } from '#src/http/schemas.ts';
import { isUuid } from '#src/lib/ids.ts';
import { Payout } from '#src/payouts/entities.ts';
import { applyPayoutEvent } from '#src/payouts/lifecycle.ts';

/**
 * The decision on a payout held by the payee name check, run once a second operator approves:
 * accept the name as it is (the payout gets its instruction). Failing it instead is `payout.fail`.
 */
export const payeeMoves = {
  'payee.accept': moneyMove({
    action: 'payee.accept',
    args: z.strictObject({ payout_id: idIn }),
    targets: (a) => [a.payout_id],
    stake: (em, a) => stakeOf(em, 'payout', a.payout_id),
    run: async (em, _deps, { args, actor, now }) => {
      if (!isUuid(args.payout_id)) throw new AppError('PAYOUT_NOT_FOUND');
      const payout = await em.findOne(Payout, args.payout_id, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if (!payout) throw new AppError('PAYOUT_NOT_FOUND');
      const t = await applyPayoutEvent(
        em,
        payout.id,
        { type: 'PAYEE_NAME_ACCEPTED', triggeredBy: 'ADMIN', now },
        { reasonDetail: { payee_name_check: payout.payeeCheck }, metadata: actorMetadata(actor) },
        payout.tenant.id,
      );
      if (!t.taken) throw invalidField('payout_id', `is ${payout.status}, not held by the payee name check`);
      return { payout: { id: t.row.id, status: t.row.status, payee_name_check: t.row.payeeCheck } };
    },
  }),
};
