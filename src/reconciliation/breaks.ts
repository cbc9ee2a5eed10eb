import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import {
  type BreakResolution,
  type ReconBreakEvent,
  reconBreakMachine,
} from '#machines/recon-break.machine.ts';
import { Approval } from '#src/approvals/entities.ts';
import { moneyMove } from '#src/approvals/moves.ts';
import { stakeOf } from '#src/approvals/stakes.ts';
import { applyEvent } from '#src/engine/engine.ts';
import { AppError, invalidField } from '#src/http/errors.ts';
import { idIn } from '#src/http/schemas.ts';
import { isUuid } from '#src/lib/ids.ts';
import { raiseRefundIn } from '#src/refunds/service.ts';
import { ReconBreak } from './entities.ts';

/**
 * Resolving breaks. An operator explains a break with a note (EXPLAINED: nothing to move), alone.
 * A resolution that moves money is the money move `recon.resolve`, a four-eyes proposal: the books
 * take what the rail shows (BOOKED_RAIL), or the money a processor returned after success goes
 * back to the merchant's refund destination as the payout's refund (REFUNDED_RETURN). The audit
 * row of the call (and of the approval) names the break.
 */

/** Locks and loads an OPEN break; refuses an unknown or resolved one. */
async function openBreak(em: EntityManager, breakId: string): Promise<ReconBreak> {
  const found = isUuid(breakId) ? await em.findOne(ReconBreak, breakId) : null;
  if (!found) throw new AppError('NOT_FOUND', { details: [{ field: 'break_id', issue: 'is no break' }] });
  if (found.status !== 'OPEN') throw invalidField('break_id', `is ${found.status} already`);
  return found;
}

/** Applies RESOLVE to a break in the caller's transaction and records who, why and how. */
export async function resolveBreakIn(
  em: EntityManager,
  args: {
    breakId: string;
    resolution: BreakResolution;
    note: string;
    operatorId: string;
    approvalId: string | null;
    now: Date;
  },
): Promise<ReconBreak> {
  await openBreak(em, args.breakId);
  const event: ReconBreakEvent = {
    type: 'RESOLVE',
    resolution: args.resolution,
    note: args.note,
    operatorId: args.operatorId,
    approvalId: args.approvalId,
  };
  const t = await applyEvent(em, { machine: reconBreakMachine, entity: ReconBreak, id: args.breakId, event });
  if (!t.taken)
    throw invalidField('break_id', 'cannot be resolved this way: moving money needs an approved proposal');
  Object.assign(t.row, {
    resolution: args.resolution,
    resolutionNote: args.note,
    resolvedBy: args.operatorId,
    resolvedAt: args.now,
    approvalId: args.approvalId,
  });
  return t.row;
}

/** Why a resolution that moves money cannot apply to this break, or null. */
function moveProblem(b: ReconBreak, resolution: 'BOOKED_RAIL' | 'REFUNDED_RETURN'): string | null {
  if (resolution === 'REFUNDED_RETURN') {
    if (b.rail !== 'PROCESSOR' || b.kind !== 'STATE_DIFFERS' || b.railState !== 'RETURNED') {
      return 'is no payout the processor returned after success; REFUNDED_RETURN is for those';
    }
    if (!b.payoutId) return 'names no payout to refund';
  }
  return null;
}

/** The money move of a break's resolution, run once a second operator approves. */
export const reconMoves = {
  'recon.resolve': moneyMove({
    action: 'recon.resolve',
    args: z.strictObject({ break_id: idIn, resolution: z.enum(['BOOKED_RAIL', 'REFUNDED_RETURN']) }),
    targets: (a) => [a.break_id],
    stake: (em, a) => stakeOf(em, 'recon-break', a.break_id),
    run: async (em, deps, { args, actor, now }) => {
      const found = await openBreak(em, args.break_id);
      const problem = moveProblem(found, args.resolution);
      if (problem) throw invalidField('break_id', problem);
      let refundId: string | null = null;
      if (args.resolution === 'REFUNDED_RETURN') {
        const outcome = await raiseRefundIn(em, deps, found.payoutId!, now, { afterReturn: true });
        if (outcome.kind !== 'RAISED') {
          throw invalidField(
            'break_id',
            `its payout cannot be refunded: ${outcome.kind.toLowerCase().replaceAll('_', ' ')}`,
          );
        }
        refundId = outcome.refund.id;
      }
      // The proposal's note is the resolution's (absent while a proposal is rehearsed).
      const approval = await em.findOne(Approval, actor.approvalId);
      const resolved = await resolveBreakIn(em, {
        breakId: found.id,
        resolution: args.resolution,
        note: approval?.note ?? 'proposed',
        operatorId: actor.approverId,
        approvalId: actor.approvalId,
        now,
      });
      return {
        break_id: resolved.id,
        status: resolved.status,
        resolution: args.resolution,
        refund_id: refundId,
      };
    },
  }),
};
