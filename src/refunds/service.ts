import {
  type EntityManager,
  LockMode,
  raw,
  UniqueConstraintViolationException,
  wrap,
} from '@mikro-orm/postgresql';
import {
  type RefundContext,
  type RefundEvent,
  type RefundScheduleParams,
  type RefundStatus,
  refundMachine,
} from '#machines/refund.machine.ts';
import type { Corridors, Network } from '#src/corridors/corridors.ts';
import { emSql } from '#src/db/sql.ts';
import type { Deps } from '#src/deps.ts';
import { applyEvent, initialState, type MachineAction, type Transition } from '#src/engine/engine.ts';
import { AppError } from '#src/http/errors.ts';
import { type PageMeta, type PageRequest, paginate } from '#src/http/pagination.ts';
import { DONE, type TaskOutcome } from '#src/jobs/runner.ts';
import { type ClaimedTask, completeTask, scheduleTask, taskBackoffMs, taskSubject } from '#src/jobs/tasks.ts';
import { post } from '#src/ledger/ledger.ts';
import { crashPoint } from '#src/lib/crash-points.ts';
import { isUuid } from '#src/lib/ids.ts';
import { maskAccountNumber, maskAddress } from '#src/lib/masking.ts';
import { type Decimal, roundMoney, toDecimal } from '#src/lib/money.ts';
import { Payout } from '#src/payouts/entities.ts';
import { emitPayoutEvents } from '#src/payouts/lifecycle.ts';
import { ProviderUnavailableError } from '#src/providers/providers.ts';
import type { RailTransfer } from '#src/providers/rails.ts';
import type { RefundDestination } from '#src/refund-destinations/entities.ts';
import { activeRefundDestination } from '#src/refund-destinations/service.ts';
import { Inflow } from '#src/settlement/entities.ts';
import { Refund } from './entities.ts';
import { refundLedger } from './money.ts';

/**
 * Refunds: returning a failed payout's settlement to the merchant's refund destination.
 *
 * - Raised by the RAISE_REFUND task the payout machine schedules on FAILED, for payouts that
 *   received money, in one transaction with `is_refunded`, `refund_reference` and the events
 *   payout.refunded and refund.created. The unique index on refunds.payout_id is the last word on
 *   "at most one per payout".
 * - Sent by the DISPATCH_REFUND task on the destination's rail (chain or bank) under the stable
 *   reference `<refund id>:<attempt number>`, which the rail deduplicates; the result is recorded
 *   through the refund machine. Every status change goes through `applyRefundEvent`.
 * - A FAILED refund waits for an operator, who retries it once the merchant's destination differs
 *   from the one that failed: same row, attempt number + 1, new destination snapshot.
 */

/** First wait after a rail was unreachable, doubled per attempt up to the cap. */
const RAIL_RETRY_BASE_MS = 5000;
const RAIL_RETRY_CAP_MS = 10 * 60_000;
/** How soon a transfer the rail reports as pending is looked at again, doubled up to the cap. */
const STATUS_POLL_BASE_MS = 5000;
const STATUS_POLL_CAP_MS = 5 * 60_000;

function unreachable(value: never): never {
  throw new Error(`unexpected value ${JSON.stringify(value)}`);
}

// --- Effects of refund transitions --------------------------------------------------------------

/**
 * Writes what a refund transition's actions ask for: outbox events carrying the refund's payout
 * (the contract: `data` of refund.* events is the payout) and tasks about the refund.
 */
export async function recordRefundEffects(
  em: EntityManager,
  refund: Refund,
  step: { actions: MachineAction[]; event: string; from: string; to: string },
  now: Date,
): Promise<void> {
  const emitted: string[] = [];
  let posts = false;
  for (const action of step.actions) {
    const params = (action.params ?? {}) as Record<string, unknown>;
    switch (action.type) {
      case 'emit':
        // A successful payout whose overpayment goes back is not refunded (`is_refunded` stays
        // false): its return announces itself as refund.created alone.
        if (refund.kind === 'OVERPAYMENT' && params.event === 'payout.refunded') break;
        emitted.push(String(params.event));
        break;
      case 'schedule': {
        const { task } = params as unknown as RefundScheduleParams;
        await scheduleTask(em, {
          kind: task,
          subjectId: refund.id,
          tenantId: refund.tenant.id,
          dueAt: now,
          now,
        });
        break;
      }
      case 'post':
        posts = true;
        break;
      default:
        throw new Error(`refund machine asked for unknown action ${action.type}`);
    }
  }
  if (posts) {
    await post(
      emSql(em),
      refundLedger(
        {
          id: refund.id,
          tenantId: refund.tenant.id,
          payoutId: refund.payout.id,
          currency: refund.receivedCurrency,
          rail: refund.destinationType === 'CRYPTO_ADDRESS' ? (refund.destinationNetwork ?? 'CHAIN') : 'BANK',
          fee: refund.networkFeeAmount,
          refund: refund.refundAmount,
        },
        step,
        step.event,
        now,
      ),
    );
  }
  if (emitted.length > 0) {
    // The payout the refund was raised with, or read by its key: its id and the refund's tenant.
    const payout = wrap(refund.payout).isInitialized()
      ? refund.payout
      : await em.findOneOrFail(Payout, { id: refund.payout.id, tenant: refund.tenant.id });
    await emitPayoutEvents(em, payout, emitted, now);
  }
}

/**
 * Applies one event to a refund inside the caller's transaction (row locked, looked up with its
 * tenant when the caller knows it); ignored events write nothing.
 */
export async function applyRefundEvent(
  em: EntityManager,
  refundId: string,
  event: RefundEvent,
  tenantId?: string | null,
): Promise<Transition<Refund, RefundEvent>> {
  return applyEvent(em, {
    machine: refundMachine,
    entity: Refund,
    id: refundId,
    tenantId,
    event,
    onTransition: (tx, t: Transition<Refund, RefundEvent>) =>
      recordRefundEffects(
        tx,
        t.row,
        { actions: t.actions, event: event.type, from: t.from, to: t.to },
        event.now,
      ),
  }) as Promise<Transition<Refund, RefundEvent>>;
}

// --- Amounts and destination snapshots ----------------------------------------------------------

/**
 * What a refund returns: everything received (overpayment included) minus the rail's refund fee
 * (an unconfigured fee is zero). The fee never exceeds what was received, so the refund amount is
 * never negative and `refund = received - fee` always holds.
 */
export function refundAmounts(
  corridors: Corridors,
  currency: 'USDT' | 'NGN',
  network: Network | null,
  received: Decimal,
): { fee: Decimal; refund: Decimal } {
  const configured = roundMoney(corridors.refundFee(currency, network), currency, 'half-up');
  const fee = configured.gt(received) ? received : configured;
  return { fee, refund: received.minus(fee) };
}

/** The refund columns that snapshot a destination: what is sent to, and its masked form. */
export function destinationSnapshot(d: RefundDestination) {
  if (d.type === 'BANK_ACCOUNT') {
    const account = d.accountNumber ?? '';
    return {
      destinationId: d.id,
      destinationType: 'BANK_ACCOUNT' as const,
      destinationProviderName: d.bankName ?? d.bankCode ?? 'Bank',
      destinationMasked: maskAccountNumber(account),
      destinationNetwork: null,
      destinationBankCode: d.bankCode ?? null,
      destinationAccount: account,
      destinationAccountName: d.accountName ?? null,
    };
  }
  const address = d.address ?? '';
  const network = d.network ?? null;
  return {
    destinationId: d.id,
    destinationType: 'CRYPTO_ADDRESS' as const,
    destinationProviderName: network ? `USDT on ${network}` : 'USDT',
    destinationMasked: maskAddress(address),
    destinationNetwork: network,
    destinationBankCode: null,
    destinationAccount: address,
    destinationAccountName: null,
  };
}

/** Whether `d` is the very account the refund last went to (a re-saved dead address is not a correction). */
export function isSameAccount(d: RefundDestination, refund: Refund): boolean {
  if (d.type !== refund.destinationType) return false;
  if (d.type === 'BANK_ACCOUNT') {
    return d.bankCode === refund.destinationBankCode && d.accountNumber === refund.destinationAccount;
  }
  if (d.network !== refund.destinationNetwork) return false;
  // BSC addresses compare case-insensitively (EIP-55 mixed case); TRON's base58 does not.
  const same = (a: string, b: string) =>
    d.network === 'BSC' ? a.toLowerCase() === b.toLowerCase() : a === b;
  return same(d.address ?? '', refund.destinationAccount);
}

// --- Raising ------------------------------------------------------------------------------------

export type RaiseOutcome =
  | { kind: 'RAISED'; refund: Refund }
  | { kind: 'ALREADY_RAISED'; refundId: string | null }
  | { kind: 'NO_DESTINATION'; currency: string }
  | { kind: 'NO_PAYOUT' }
  /** `reason`: what keeps the payout from having a refund, said of the payout. */
  | { kind: 'NOT_ELIGIBLE'; reason: string };

/**
 * Raises the refund of a FAILED payout that received money, if its tenant has an active refund
 * destination for the settlement currency. Safe to run any number of times, concurrently too:
 * the payout lock and the unique index on refunds.payout_id leave exactly one refund.
 */
export async function raiseRefund(
  deps: Deps,
  payoutId: string,
  tenantId: string | null = null,
): Promise<RaiseOutcome> {
  const now = deps.clock.now();
  try {
    return await deps.orm.em
      .fork()
      .transactional((tx) => raiseRefundIn(tx, deps, payoutId, now, { tenantId }));
  } catch (err) {
    if (err instanceof UniqueConstraintViolationException) {
      return { kind: 'ALREADY_RAISED', refundId: null };
    }
    throw err;
  }
}

/**
 * {@link raiseRefund} inside the caller's transaction (an operator's approved proposal): the
 * payout's lock makes a concurrent raiser wait and then find the refund. With `tenantId`, the
 * payout, its refund and its inflow are looked up with their tenant.
 */
export async function raiseRefundIn(
  tx: EntityManager,
  deps: Pick<Deps, 'corridors'>,
  payoutId: string,
  now: Date,
  options: { afterReturn?: boolean; tenantId?: string | null } = {},
): Promise<RaiseOutcome> {
  if (!isUuid(payoutId)) return { kind: 'NO_PAYOUT' };
  const tenant = options.tenantId ? { tenant: options.tenantId } : {};
  const payout = await tx.findOne(
    Payout,
    { id: payoutId, ...tenant },
    { lockMode: LockMode.PESSIMISTIC_WRITE },
  );
  if (!payout) return { kind: 'NO_PAYOUT' };
  // A SUCCESSFUL payout is refunded only when the processor returned its money after success, as
  // an approved reconciliation resolution establishes (`src/reconciliation/breaks.ts`).
  const eligible =
    payout.status === 'FAILED' || (options.afterReturn === true && payout.status === 'SUCCESSFUL');
  if (!eligible) {
    return { kind: 'NOT_ELIGIBLE', reason: `is ${payout.status}; only a FAILED payout is refunded` };
  }
  const received = toDecimal(payout.receivedAmount);
  if (!received.gt(0)) {
    return { kind: 'NOT_ELIGIBLE', reason: 'received no money; there is nothing to refund' };
  }
  const existing = await tx.findOne(Refund, { payout: payoutId, tenant: payout.tenant.id });
  if (existing || payout.isRefunded) {
    return { kind: 'ALREADY_RAISED', refundId: existing?.id ?? payout.refundReference ?? null };
  }
  const currency = payout.settlementCurrency;
  const destination = await activeRefundDestination(tx, payout.tenant.id, currency);
  if (!destination) return { kind: 'NO_DESTINATION', currency };

  const snapshot = destinationSnapshot(destination);
  const amounts = refundAmounts(deps.corridors, currency, snapshot.destinationNetwork, received);
  // The inflow whose money goes back: the first one attributed to the payout.
  const inflow = await tx.findOne(
    Inflow,
    { payout: payoutId, tenant: payout.tenant.id },
    { orderBy: { createdAt: 'asc', id: 'asc' } },
  );
  const initial = initialState(refundMachine, {});
  const refund = tx.create(Refund, {
    tenant: payout.tenant,
    payout,
    inflow: inflow ?? null,
    status: initial.status as RefundStatus,
    snapshot: initial.snapshot,
    receivedAmount: received,
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
  payout.isRefunded = true;
  payout.refundReference = refund.id;
  // Flushed first so that a second raiser fails here, on the unique index, before any event is written.
  await tx.flush();
  await recordRefundEffects(
    tx,
    refund,
    { actions: initial.actions, event: 'RAISED', from: '(new)', to: initial.status },
    now,
  );
  return { kind: 'RAISED', refund };
}

/** The RAISE_REFUND task of one payout. Without a destination the money stays held for operators. */
export async function raiseRefundTask(deps: Deps, task: ClaimedTask): Promise<TaskOutcome> {
  const outcome = await raiseRefund(deps, task.subjectId, task.tenantId);
  switch (outcome.kind) {
    case 'RAISED':
      deps.log.info({ payout: task.subjectId, refund: outcome.refund.id }, 'refund raised');
      deps.jobs?.kick('refunds');
      break;
    case 'NO_DESTINATION':
      deps.log.warn(
        { payout: task.subjectId },
        'failed payout holds money but its tenant has no refund destination; held for operations',
      );
      break;
    case 'ALREADY_RAISED':
    case 'NO_PAYOUT':
    case 'NOT_ELIGIBLE':
      break;
    default:
      return unreachable(outcome);
  }
  return DONE;
}

// --- Sending ------------------------------------------------------------------------------------

/** The rail reference of a refund's current attempt: stable across resends, new per operator retry. */
export function railReference(refund: Pick<Refund, 'id' | 'attemptNumber'>): string {
  return `${refund.id}:${refund.attemptNumber}`;
}

function railName(refund: Refund): string {
  return refund.destinationType === 'CRYPTO_ADDRESS' ? `${refund.destinationNetwork} chain` : 'bank';
}

async function sendOnRail(deps: Deps, refund: Refund): Promise<RailTransfer> {
  const reference = railReference(refund);
  switch (refund.destinationType) {
    case 'CRYPTO_ADDRESS':
      return deps.rails.chains.send(refund.destinationNetwork as Network, {
        reference,
        toAddress: refund.destinationAccount,
        amount: toDecimal(refund.refundAmount),
      });
    case 'BANK_ACCOUNT':
      return deps.rails.bank.send({
        reference,
        bankCode: refund.destinationBankCode ?? '',
        accountNumber: refund.destinationAccount,
        accountName: refund.destinationAccountName ?? 'Refund',
        amount: toDecimal(refund.refundAmount),
        narration: (refund.kind === 'OVERPAYMENT'
          ? `Overpayment returned, payout ${refund.payout.id}`
          : `Refund of payout ${refund.payout.id}`
        ).slice(0, 100),
      });
    default:
      return unreachable(refund.destinationType);
  }
}

async function railStatus(deps: Deps, refund: Refund): Promise<RailTransfer | null> {
  const reference = railReference(refund);
  switch (refund.destinationType) {
    case 'CRYPTO_ADDRESS':
      return deps.rails.chains.sendStatus(refund.destinationNetwork as Network, reference);
    case 'BANK_ACCOUNT':
      return deps.rails.bank.sendStatus(reference);
    default:
      return unreachable(refund.destinationType);
  }
}

/** What a rail said about a refund attempt, or a failure of ours (the rail never took it). */
type AttemptResult = RailTransfer | { status: 'UNSENT'; failureReason: string };

/**
 * Records an attempt's result through the refund machine, in one transaction, if the refund is
 * still on that attempt, and completes the task there once the refund is settled: an operator
 * retry (which locks the same row) then always finds the task done and schedules a fresh one.
 * Returns the refund's status afterwards.
 */
async function recordAttempt(
  deps: Deps,
  task: ClaimedTask,
  attemptNumber: number,
  result: AttemptResult,
): Promise<RefundStatus | null> {
  const refundId = task.subjectId;
  const now = deps.clock.now();
  let failed = null as Record<string, unknown> | null;
  const status = await deps.orm.em.fork().transactional(async (tx) => {
    const refund = await tx.findOne(Refund, taskSubject(task), { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!refund || refund.attemptNumber !== attemptNumber) return refund?.status ?? null;
    const providerReference = 'providerReference' in result ? result.providerReference : null;
    const apply = async (event: RefundEvent) => {
      const t = await applyRefundEvent(tx, refundId, event, refund.tenant.id);
      if (!t.taken) return;
      const context = t.row.snapshot.context as RefundContext;
      if (event.type === 'DISPATCHED') {
        t.row.dispatchedAt = now;
        t.row.processorReference = context.processorReference?.slice(0, 128) ?? null;
      }
      if (event.type === 'CONFIRMED') t.row.settledAt = now;
      if (event.type === 'FAILED') {
        t.row.failureReason = context.failureReason?.slice(0, 500) ?? null;
        t.row.processorReference ??= providerReference?.slice(0, 128) ?? null;
        // The destination only as registered, masked: never the full account.
        failed = {
          refund_id: refundId,
          payout_id: t.row.payout.id,
          tenant_id: t.row.tenant.id,
          attempt: t.row.attemptNumber,
          destination: t.row.destinationMasked,
          reason: t.row.failureReason,
        };
      }
    };
    switch (result.status) {
      case 'SUCCESSFUL':
        if (refund.status === 'PENDING')
          await apply({ type: 'DISPATCHED', processorReference: providerReference, now });
        await apply({ type: 'CONFIRMED', now });
        break;
      case 'PENDING':
        if (refund.status === 'PENDING')
          await apply({ type: 'DISPATCHED', processorReference: providerReference, now });
        break;
      case 'FAILED':
        await apply({
          type: 'FAILED',
          failureReason: result.failureReason ?? 'the rail refused the transfer',
          now,
        });
        break;
      case 'UNSENT':
        await apply({ type: 'FAILED', failureReason: result.failureReason, now });
        break;
      default:
        return unreachable(result);
    }
    if (refund.status === 'SUCCESSFUL' || refund.status === 'FAILED') await completeTask(tx, task, now);
    crashPoint('refund.before-commit', [refund.payout.id]);
    return refund.status;
  });
  // Logged once committed: the merchant's money stays held until an operator acts.
  if (failed) deps.log.warn(failed, 'refund failed; waiting for an operator');
  return status;
}

/**
 * The DISPATCH_REFUND task of one refund: a PENDING refund is sent (or resent under the same
 * reference after a transport failure, REFUND_MAX_ATTEMPTS sends in all, then the rail is asked
 * whether it received one), a PROCESSING one is checked with the rail until it settles.
 */
export async function dispatchRefund(deps: Deps, task: ClaimedTask): Promise<TaskOutcome> {
  const refund = await deps.orm.em.fork().findOne(Refund, taskSubject(task));
  if (!refund) return DONE;
  const poll = (error: string): TaskOutcome => ({
    done: false,
    error,
    retryInMs: taskBackoffMs(task.attempts, STATUS_POLL_BASE_MS, STATUS_POLL_CAP_MS),
  });
  const settledOrPolled = (status: RefundStatus | null): TaskOutcome =>
    status === 'PROCESSING' ? poll('the rail reports the transfer as pending') : DONE;

  switch (refund.status) {
    case 'SUCCESSFUL':
    case 'FAILED':
      return DONE;
    case 'PENDING': {
      if (toDecimal(refund.refundAmount).isZero()) {
        // The rail's fee took everything received: there is nothing to move, and nothing owed.
        deps.log.warn(
          { refund: refund.id },
          'refund amount is zero after the fee; settled without a transfer',
        );
        return settledOrPolled(
          await recordAttempt(deps, task, refund.attemptNumber, {
            reference: railReference(refund),
            status: 'SUCCESSFUL',
            providerReference: null,
            failureReason: null,
          }),
        );
      }
      const unavailable = (error: string): TaskOutcome => ({
        done: false,
        error,
        retryInMs: taskBackoffMs(task.attempts, RAIL_RETRY_BASE_MS, RAIL_RETRY_CAP_MS),
      });
      if (task.attempts > deps.config.REFUND_MAX_ATTEMPTS) {
        // No more sends. A send the rail never answered may still have reached it: ask, and fail
        // the refund only on the rail's word that it never received it. While the rail cannot be
        // reached the refund stays PENDING, so that money that moved is never reported as failed.
        let known: RailTransfer | null;
        try {
          known = await railStatus(deps, refund);
        } catch (err) {
          if (!(err instanceof ProviderUnavailableError)) throw err;
          return unavailable(
            `${railName(refund)} unavailable; asking whether it received the refund: ${err.message}`,
          );
        }
        return settledOrPolled(
          await recordAttempt(
            deps,
            task,
            refund.attemptNumber,
            known ?? {
              status: 'UNSENT',
              failureReason: `the ${railName(refund)} did not answer ${deps.config.REFUND_MAX_ATTEMPTS} sends and never received the transfer`,
            },
          ),
        );
      }
      let transfer: RailTransfer;
      try {
        transfer = await sendOnRail(deps, refund);
      } catch (err) {
        if (!(err instanceof ProviderUnavailableError)) throw err;
        return unavailable(`${railName(refund)} unavailable: ${err.message}`);
      }
      crashPoint('refund.sent', [refund.payout.id]);
      return settledOrPolled(await recordAttempt(deps, task, refund.attemptNumber, transfer));
    }
    case 'PROCESSING': {
      let transfer: RailTransfer | null;
      try {
        transfer = await railStatus(deps, refund);
      } catch (err) {
        if (!(err instanceof ProviderUnavailableError)) throw err;
        return poll(`status check failed: ${err.message}`);
      }
      if (!transfer) {
        deps.log.error({ refund: refund.id }, 'the rail does not know a refund it accepted');
        return poll('the rail does not know the transfer');
      }
      return settledOrPolled(await recordAttempt(deps, task, refund.attemptNumber, transfer));
    }
    default:
      return unreachable(refund.status);
  }
}

// --- Operator tools -----------------------------------------------------------------------------

function refusal(issue: string): AppError {
  return new AppError('VALIDATION_FAILED', {
    message: 'The refund cannot be retried.',
    details: [{ field: 'refund_id', issue }],
  });
}

/**
 * Operator retry of a FAILED refund whose tenant has since corrected its destination, first half:
 * the rail is asked about the failed attempt, outside any transaction (money must never move
 * twice: a retry is refused while the rail reports that transfer as anything but failed).
 * Returns the attempt number it vouched for, which {@link retryRefundIn} insists on.
 */
export async function checkRefundRetry(deps: Deps, refundId: string): Promise<{ attemptNumber: number }> {
  if (!isUuid(refundId)) throw new AppError('REFUND_NOT_FOUND');
  const current = await deps.orm.em.fork().findOne(Refund, refundId);
  if (!current) throw new AppError('REFUND_NOT_FOUND');
  if (current.status !== 'FAILED') throw refusal(`is ${current.status}; only a FAILED refund is retried`);
  let previous: RailTransfer | null;
  try {
    previous = await railStatus(deps, current);
  } catch (err) {
    if (err instanceof ProviderUnavailableError) throw new AppError('UPSTREAM_UNAVAILABLE');
    throw err;
  }
  if (previous && previous.status !== 'FAILED') {
    throw refusal(
      `the rail reports attempt ${current.attemptNumber} as ${previous.status}; not sending again`,
    );
  }
  return { attemptNumber: current.attemptNumber };
}

/**
 * Operator retry, second half, inside the caller's transaction: the same row moves back to
 * PENDING with attempt number + 1, a snapshot of the tenant's active destination and the fee of
 * its rail, and is dispatched again. Refused while the destination is unchanged, and when the
 * refund moved on since {@link checkRefundRetry} asked the rail.
 */
export async function retryRefundIn(
  tx: EntityManager,
  deps: Pick<Deps, 'corridors'>,
  args: { refundId: string; attemptNumber: number; now: Date },
): Promise<Refund> {
  const { refundId, now } = args;
  if (!isUuid(refundId)) throw new AppError('REFUND_NOT_FOUND');
  const locked = await tx.findOne(Refund, refundId, { lockMode: LockMode.PESSIMISTIC_WRITE });
  if (!locked) throw new AppError('REFUND_NOT_FOUND');
  if (locked.status !== 'FAILED' || locked.attemptNumber !== args.attemptNumber) {
    throw refusal(`changed meanwhile (now ${locked.status}, attempt ${locked.attemptNumber})`);
  }
  const destination = await activeRefundDestination(tx, locked.tenant.id, locked.receivedCurrency);
  if (!destination) throw refusal(`the tenant has no active ${locked.receivedCurrency} refund destination`);
  const corrected = !isSameAccount(destination, locked);
  if (!corrected) {
    throw refusal('the tenant’s active destination is the one that failed; it must be corrected first');
  }
  const t = await applyRefundEvent(
    tx,
    refundId,
    { type: 'OPERATOR_RETRY', destinationCorrected: corrected, now },
    locked.tenant.id,
  );
  if (!t.taken) throw refusal(`the refund machine refused the retry from ${t.from}`);
  const row = t.row;
  const snapshot = destinationSnapshot(destination);
  const amounts = refundAmounts(
    deps.corridors,
    row.receivedCurrency,
    snapshot.destinationNetwork,
    toDecimal(row.receivedAmount),
  );
  Object.assign(row, snapshot, {
    attemptNumber: row.attemptNumber + 1,
    networkFeeAmount: amounts.fee,
    refundAmount: amounts.refund,
    processorReference: null,
    failureReason: null,
    dispatchedAt: null,
    settledAt: null,
  });
  return row;
}

/** FAILED refunds, oldest first, of one tenant or all: the operators' queue. */
export async function listFailedRefunds(em: EntityManager, filter: { tenantId?: string }, page: PageRequest) {
  return paginate(em, Refund, {
    where: { status: 'FAILED', ...(filter.tenantId ? { tenant: filter.tenantId } : {}) },
    list: `admin:refunds:failed:${filter.tenantId ?? '*'}`,
    order: 'asc',
    ...page,
  });
}

/** A FAILED payout that received money and has no refund: the money is held. */
export interface HeldPayout {
  payout: Payout;
  /** Whether the tenant has an active destination now (then an operator can raise the refund). */
  destinationActive: boolean;
}

/**
 * Payouts that failed after money arrived and hold it without a refund (no destination when the
 * service tried to raise it), oldest first.
 */
export async function listHeldPayouts(
  em: EntityManager,
  filter: { tenantId?: string },
  page: PageRequest,
): Promise<{ items: HeldPayout[]; meta: PageMeta }> {
  // A payout whose RAISE_REFUND task is still open is not held: the service is about to raise its
  // refund itself (or to find it has no destination, and only then it is held).
  const raising = raw(
    (alias: string) =>
      `not exists (select 1 from tasks t where t.kind = 'RAISE_REFUND' and t.subject_id = ${alias}.id and t.done_at is null)`,
  );
  const { items, meta } = await paginate(em, Payout, {
    where: {
      status: 'FAILED',
      isRefunded: false,
      receivedAmount: { $gt: toDecimal(0) },
      ...(filter.tenantId ? { tenant: filter.tenantId } : {}),
      [raising]: [],
    },
    list: `admin:refunds:held:${filter.tenantId ?? '*'}`,
    order: 'asc',
    ...page,
  });
  const held: HeldPayout[] = [];
  for (const payout of items) {
    const destination = await activeRefundDestination(em, payout.tenant.id, payout.settlementCurrency);
    held.push({ payout, destinationActive: destination !== null });
  }
  return { items: held, meta };
}
