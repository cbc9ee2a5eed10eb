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
import { emSql } from '#src/db/sql.ts';
import { applyEvent } from '#src/engine/engine.ts';
import { AppError, invalidField } from '#src/http/errors.ts';
import { idIn } from '#src/http/schemas.ts';
import { accountName } from '#src/ledger/chart.ts';
import { flowNamed, flowTransaction } from '#src/ledger/flows.ts';
import { type LedgerTransaction, post, transitionName } from '#src/ledger/ledger.ts';
import { isUuid } from '#src/lib/ids.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import { Refund } from '#src/refunds/entities.ts';
import { setAsideOf } from '#src/refunds/overpayments.ts';
import { raiseRefundIn } from '#src/refunds/service.ts';
import { ReconBreak } from './entities.ts';
import { RECON_FLOWS } from './money.ts';

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

/**
 * What the rail shows more (positive) or less (negative) than the books on a break's collection
 * account: a credit the books lack, an amount the statement corrected, a credit reversed.
 */
export function railDifference(b: ReconBreak): Decimal {
  const books = b.ledgerAmount ?? toDecimal(0);
  const rail = b.railState === 'REVERSED' ? toDecimal(0) : (b.railAmount ?? toDecimal(0));
  return rail.minus(books);
}

/** The ledger transaction that books a break's difference (BOOKED_RAIL), or null when there is none. */
function bookedRail(b: ReconBreak, actor: { approvalId: string }, now: Date): LedgerTransaction | null {
  const difference = railDifference(b);
  if (difference.isZero()) return null;
  const collection = b.rail === 'BANK_TRANSFER' ? 'virtualAccount' : 'depositAddress';
  // A reversed credit that a payout had: the payout's statement shows it, and it stays whole.
  const ofPayout =
    b.railState === 'REVERSED' && difference.lt(0) && b.payoutId && b.tenantId ? b.payoutId : null;
  const name = ofPayout ? 'CREDIT_REVERSED' : difference.gt(0) ? 'RAIL_SHOWED_MORE' : 'RAIL_SHOWED_LESS';
  return flowTransaction(
    flowNamed(RECON_FLOWS, 'approval', name),
    {
      accounts: {
        [collection]: b.account,
        railDifferences: accountName('railDifferences', { rail: b.rail }),
        ...(ofPayout ? { payout: accountName('payout', { tenant: b.tenantId!, payout: ofPayout }) } : {}),
      },
      amounts: { difference: difference.abs() },
      currencies: { currency: b.currency },
    },
    {
      tenantId: b.tenantId ?? null,
      payoutId: ofPayout,
      approvalId: actor.approvalId,
      at: now,
      causeId: actor.approvalId,
      transition: transitionName('RESOLVE', 'OPEN', 'RESOLVED'),
    },
  );
}

/**
 * The ledger transaction of money the processor returned, brought back into its payout for the
 * refund. The refund returns all the payout received: what the processor had (converted back) and
 * the overpayment the payout set aside at its success (`setAside`, taken back from the merchant's
 * overpayments account, so that it is not owed a second time).
 */
function processorReturned(
  b: ReconBreak,
  refund: Refund,
  setAside: Decimal,
  actor: { approvalId: string },
  now: Date,
): LedgerTransaction {
  return flowTransaction(
    flowNamed(RECON_FLOWS, 'approval', 'PROCESSOR_RETURNED'),
    {
      accounts: {
        beneficiaries: accountName('beneficiaries', {}),
        payout: accountName('payout', { tenant: refund.tenant.id, payout: b.payoutId! }),
        conversion: accountName('conversion', {}),
        overpayments: accountName('overpayments', { tenant: refund.tenant.id }),
      },
      amounts: {
        returned: b.railAmount ?? b.ledgerAmount ?? toDecimal(0),
        refundable: refund.receivedAmount.minus(setAside),
        setAside,
      },
      currencies: { destination: b.currency, settlement: refund.receivedCurrency },
    },
    {
      tenantId: refund.tenant.id,
      payoutId: b.payoutId ?? null,
      approvalId: actor.approvalId,
      at: now,
      causeId: actor.approvalId,
      transition: transitionName('RESOLVE', 'OPEN', 'RESOLVED'),
    },
  );
}

/** Why a resolution that moves money cannot apply to this break, or null. */
function moveProblem(b: ReconBreak, resolution: 'BOOKED_RAIL' | 'REFUNDED_RETURN'): string | null {
  if (resolution === 'BOOKED_RAIL') {
    if (b.rail === 'PROCESSOR' || !b.account.startsWith('collection:')) {
      return "is on the processor, whose money the books follow through its payouts; BOOKED_RAIL is for a collection account's difference";
    }
    if (railDifference(b).isZero()) return 'shows no difference of amount to book; resolve it as explained';
  }
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
      if (args.resolution === 'BOOKED_RAIL') {
        const booked = bookedRail(found, actor, now);
        if (booked) await post(emSql(em), [booked]);
      }
      if (args.resolution === 'REFUNDED_RETURN') {
        const outcome = await raiseRefundIn(em, deps, found.payoutId!, now, { afterReturn: true });
        if (outcome.kind === 'RAISED') {
          // The payout is locked (raiseRefundIn): what it set aside cannot be returned meanwhile.
          const refund = outcome.refund;
          const setAside = await setAsideOf(emSql(em), {
            id: found.payoutId!,
            tenantId: refund.tenant.id,
            currency: refund.receivedCurrency,
          });
          await post(emSql(em), [processorReturned(found, refund, setAside, actor, now)]);
        }
        if (outcome.kind === 'ALREADY_RAISED') {
          const earlier = await em.findOne(Refund, { payout: found.payoutId! });
          if (earlier?.kind === 'OVERPAYMENT') {
            throw invalidField(
              'break_id',
              `its payout's overpayment went back already (refund ${earlier.id}), and a payout has one refund: the returned transfer is resolved by hand (docs/reconciliation.md, a return after an overpayment's)`,
            );
          }
        }
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
