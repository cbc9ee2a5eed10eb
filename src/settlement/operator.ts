import { type EntityManager, type FilterQuery, LockMode } from '@mikro-orm/postgresql';
import { emSql } from '#src/db/sql.ts';
import { AppError, invalidField } from '#src/http/errors.ts';
import { type PageMeta, type PageRequest, paginate } from '#src/http/pagination.ts';
import { PaymentInstruction } from '#src/instructions/entities.ts';
import { post } from '#src/ledger/ledger.ts';
import { isUuid } from '#src/lib/ids.ts';
import { Payout } from '#src/payouts/entities.ts';
import { applyPayoutEvent } from '#src/payouts/lifecycle.ts';
import { Inflow } from './entities.ts';
import { awaitsOperator, stepInflowOrThrow } from './lifecycle.ts';
import { attributeLocked, lockAttributionTarget, type MatchOutcome } from './matching.ts';
import { inflowLedger } from './money.ts';

/**
 * What operators do with money that matching could not settle on its own (product decisions
 * §2, §7): see it, attribute it to a payout, fail a held payout (its refund follows), or record
 * that unattributed money went back to the merchant. Each runs inside the caller's transaction.
 */

/**
 * Money waiting for an operator, oldest first, a page at a time (`admin.settlement.inflows`):
 * every UNMATCHED and HELD inflow, which are
 *
 * - UNMATCHED, and HELD attributed to no payout (HELD.unattributed): an operator attributes the
 *   money to a payout or records its return. These are exactly the `INFLOWS_UNMATCHED` queue that
 *   `admin.exceptions` counts one by one (src/compliance/exceptions.ts).
 * - HELD against a payout that still waits for money (PENDING_PAYMENT: held for review, since
 *   money is attributed to it): the decision is the payout's (the rest arrives, or an operator
 *   fails it), so the console counts each such payout once in `PAYOUTS_HELD_UNDERPAID`, not its
 *   inflows. They are listed here, with `state=HELD`, as the money those payouts hold.
 *
 * Money held against a payout leaves HELD when the payout does: MATCHED when it is covered,
 * FOR_REFUND when it fails (its refund returns the money; `src/settlement/payout-failure.ts`), so
 * no HELD inflow belongs to a payout that moved on, and the list needs no look at payouts.
 *
 * Every variant reads its page in order from `inflows_attention_index` (all tenants) or
 * `inflows_tenant_attention_index` (one), which hold exactly the HELD and UNMATCHED inflows, or,
 * `unattributed`, from `inflows_unattributed_index`, and stops at the page: no sort, and a page
 * costs its rows.
 */
export async function inflowsNeedingAttention(
  em: EntityManager,
  filter: { tenantId?: string; state?: 'HELD' | 'UNMATCHED'; unattributed?: boolean },
  page: PageRequest,
): Promise<{ items: { inflow: Inflow; accountPayoutId: string | null }[]; meta: PageMeta }> {
  // `in`: the predicate of both indexes, word for word. One state is picked by ruling the other
  // out (`<>`), a filter no other index serves: with `state = 'HELD'` PostgreSQL would combine the
  // index with inflows_state_network_index in a bitmap, count the state's rarity twice, expect a
  // handful of rows and sort them.
  const state = {
    $in: ['HELD', 'UNMATCHED'],
    ...(filter.state ? { $ne: filter.state === 'HELD' ? 'UNMATCHED' : 'HELD' } : {}),
  };
  const { items: inflows, meta } = await paginate(em, Inflow, {
    where: {
      state,
      ...(filter.tenantId ? { tenant: filter.tenantId } : {}),
      // Exactly the INFLOWS_UNMATCHED queue, read from inflows_unattributed_index.
      ...(filter.unattributed ? { payout: null } : {}),
    } as FilterQuery<Inflow>,
    list: `admin:inflows:${filter.tenantId ?? '*'}:${filter.state ?? '*'}:${filter.unattributed ? 'unattributed' : '*'}`,
    order: 'asc',
    ...page,
  });
  // Money on a virtual account names its payout even when it could not be attributed (it came
  // late): the operator's obvious first lead.
  const accounts = [...new Set(inflows.filter((i) => i.rail === 'BANK_TRANSFER').map((i) => i.toAccount))];
  const owners =
    accounts.length === 0
      ? []
      : await em.find(PaymentInstruction, { rail: 'BANK_TRANSFER', accountUnique: { $in: accounts } });
  const byAccount = new Map(owners.map((o) => [o.accountUnique, o.payout.id]));
  const items = inflows.map((inflow) => ({
    inflow,
    accountPayoutId: inflow.rail === 'BANK_TRANSFER' ? (byAccount.get(inflow.toAccount) ?? null) : null,
  }));
  return { items, meta };
}

async function lockUndecidedInflow(em: EntityManager, inflowId: string): Promise<Inflow> {
  if (!isUuid(inflowId)) throw new AppError('INFLOW_NOT_FOUND');
  const inflow = await em.findOne(Inflow, inflowId, { lockMode: LockMode.PESSIMISTIC_WRITE });
  if (!inflow) throw new AppError('INFLOW_NOT_FOUND');
  if (!awaitsOperator(inflow)) {
    const attributed = inflow.payout ? ` and attributed to payout ${inflow.payout.id}` : '';
    throw invalidField(
      'inflow_id',
      `is ${inflow.state}${attributed}; only UNMATCHED inflows and HELD inflows attributed to no payout can be decided`,
    );
  }
  return inflow;
}

/**
 * Attributes an UNMATCHED or unattributed HELD inflow to a payout of the same tenant and
 * currency that is still waiting for money (PENDING_PAYMENT, awaiting or held): its total is
 * recomputed with this inflow and the payout gets SETTLEMENT_CONFIRMED with triggered_by ADMIN.
 */
export async function attributeInflow(
  em: EntityManager,
  args: { inflowId: string; payoutId: string; now: Date; metadata?: Record<string, unknown> },
): Promise<MatchOutcome> {
  const inflow = await lockUndecidedInflow(em, args.inflowId);
  if (!isUuid(args.payoutId)) throw new AppError('PAYOUT_NOT_FOUND');
  const tx = emSql(em);
  const { instruction, payout } = await lockAttributionTarget(tx, args.payoutId);
  if (!payout) throw new AppError('PAYOUT_NOT_FOUND');
  if (payout.tenant_id !== inflow.tenant.id) {
    throw invalidField('payout_id', 'belongs to another tenant than the inflow');
  }
  if (payout.settlement_currency !== inflow.currency) {
    throw invalidField(
      'payout_id',
      `settles in ${payout.settlement_currency}, the inflow is ${inflow.currency}`,
    );
  }
  if (payout.status !== 'PENDING_PAYMENT' || !instruction) {
    throw invalidField('payout_id', `is ${payout.status}; only a PENDING_PAYMENT payout can take money`);
  }
  // Written with plain statements, not through the entity: a caller that reads the inflow next
  // must read it with `refresh`.
  return attributeLocked(tx, {
    inflow: {
      id: inflow.id,
      tenantId: inflow.tenant.id,
      state: inflow.state,
      snapshot: inflow.snapshot,
      amount: inflow.amount,
      currency: inflow.currency,
      rail: inflow.rail,
      network: inflow.network ?? null,
      toAccount: inflow.toAccount,
    },
    instruction,
    payout,
    rule: 'OPERATOR',
    triggeredBy: 'ADMIN',
    metadata: args.metadata ?? null,
    now: args.now,
  });
}

/**
 * Fails a payout held for review (OPERATOR_FAIL). Held underpaid: FAILED with SETTLEMENT_UNDERPAID,
 * the machine makes the refund of what was received due, and the inflows held against the payout
 * go FOR_REFUND in the same transaction (the payout's lifecycle). Held by the payee name check:
 * FAILED with PAYEE_NAME_REJECTED, nothing to refund. Anything but a held payout is refused.
 * `metadata` goes on the timeline row (who decided: `operator_id`, `approval_id`).
 */
export async function failHeldPayout(
  em: EntityManager,
  args: { payoutId: string; now: Date; metadata?: Record<string, unknown> },
): Promise<Payout> {
  if (!isUuid(args.payoutId)) throw new AppError('PAYOUT_NOT_FOUND');
  const payout = await em.findOne(Payout, args.payoutId, { lockMode: LockMode.PESSIMISTIC_WRITE });
  if (!payout) throw new AppError('PAYOUT_NOT_FOUND');
  const reasonDetail =
    payout.status === 'CREATED'
      ? { payee_name_check: payout.payeeCheck }
      : {
          received_total: payout.receivedAmount.toFixed(),
          expected_amount: payout.settlementAmount.toFixed(),
          currency: payout.settlementCurrency,
        };
  const transition = await applyPayoutEvent(
    em,
    payout.id,
    { type: 'OPERATOR_FAIL', triggeredBy: 'ADMIN', now: args.now },
    { reasonDetail, metadata: args.metadata ?? null },
    payout.tenant.id,
  );
  if (!transition.taken) {
    const where =
      payout.status === 'PENDING_PAYMENT'
        ? 'awaiting payment'
        : payout.status === 'CREATED'
          ? 'being prepared'
          : payout.status;
    throw invalidField('payout_id', `is ${where}, not held for review`);
  }
  return transition.row;
}

/**
 * Records that an UNMATCHED or unattributed HELD inflow was sent back to the merchant outside the
 * service (RETURNED). A record only: the service moves no money here.
 */
export async function returnInflow(
  em: EntityManager,
  args: { inflowId: string; reference: string | null; now: Date; approvalId?: string | null },
): Promise<Inflow> {
  const inflow = await lockUndecidedInflow(em, args.inflowId);
  const done = stepInflowOrThrow(inflow, { type: 'OPERATOR_RETURN', now: args.now });
  inflow.state = done.to;
  inflow.snapshot = done.snapshot;
  inflow.returnedReference = args.reference;
  await post(
    emSql(em),
    inflowLedger(
      {
        id: inflow.id,
        tenantId: inflow.tenant.id,
        rail: inflow.rail,
        network: inflow.network ?? null,
        toAccount: inflow.toAccount,
        amount: inflow.amount,
        currency: inflow.currency,
        payoutId: null,
      },
      done,
      'OPERATOR_RETURN',
      args.now,
      args.approvalId ?? null,
    ),
  );
  return inflow;
}
