import { createHash, randomBytes } from 'node:crypto';
import Router from '@koa/router';
import { z } from 'zod';
import { type Corridors, DESTINATION_TYPES, NETWORK_NAMES, networkNamed } from '#src/corridors/corridors.ts';
import type { Clock } from '#src/lib/clock.ts';
import { dayEnd, dayOf } from '#src/lib/days.ts';
import { currencyDecimals, type Decimal, isCurrency } from '#src/lib/money.ts';
import { isChainAddress } from '#src/providers/addresses.ts';
import type { PayoutProcessor } from '#src/providers/rails.ts';
import type { CallbackDelivery, CallbackSender } from './callbacks.ts';
import { readJson, SandboxError, validate } from './http.ts';
import {
  amountField,
  dayField,
  optionalJson,
  pathParam,
  positionCursors,
  RailError,
  railErrors,
  listQuery as railListQuery,
  referenceField,
} from './rail-http.ts';

/**
 * The payout processor: takes one dispatch attempt per reference, answers at once (ACCEPTED, or
 * FAILED for a destination it can reject on sight), settles accepted payouts after the callback
 * delay and reports the outcome to the attempt's callback URL, signed. The last four characters
 * of the account decide the outcome (product decisions §6).
 */

export type ProcessorStatus = 'ACCEPTED' | 'SUCCESSFUL' | 'FAILED';

/** A final outcome, as a callback or a status query reports it. */
export interface PayoutOutcome {
  status: 'SUCCESSFUL' | 'FAILED';
  failureCode: string | null;
  failureReason: string | null;
  retryable: boolean;
}

/** What the processor does with one attempt: reject it at once, or accept it and settle later. */
export type PayoutPlan =
  | { kind: 'REJECT'; outcome: PayoutOutcome }
  | {
      kind: 'ACCEPT';
      outcome: PayoutOutcome;
      callback: boolean;
      /** A success the processor takes back this long after it settled (a late return); null: never. */
      returnAfterMs?: number | null;
      /** False: the settlement report never lists this payout (a report missing a transfer). */
      reported?: boolean;
    };

/** How long after its success a `1005` payout is returned: three days, as bounce-backs come. */
export const LATE_RETURN_AFTER_MS = 3 * 24 * 60 * 60 * 1000;

/** A final state as the settlement report lists it: a returned payout succeeded first. */
export type SettledStatus = 'SUCCESSFUL' | 'FAILED' | 'RETURNED';

export const FAILURE_REASONS = {
  INVALID_DESTINATION: 'The destination is incomplete or unknown to the processor.',
  ACCOUNT_CLOSED: 'The beneficiary account is closed.',
  PROCESSOR_TIMEOUT: 'The beneficiary institution did not answer in time.',
} as const satisfies Record<string, string>;

type FailureCode = keyof typeof FAILURE_REASONS;

const SUCCESS: PayoutOutcome = {
  status: 'SUCCESSFUL',
  failureCode: null,
  failureReason: null,
  retryable: false,
};

function reasonFor(code: string): string {
  return Object.hasOwn(FAILURE_REASONS, code)
    ? FAILURE_REASONS[code as FailureCode]
    : `Simulated failure (${code}).`;
}

function failure(
  code: FailureCode,
  retryable: boolean,
  reason: string = FAILURE_REASONS[code],
): PayoutOutcome {
  return { status: 'FAILED', failureCode: code, failureReason: reason, retryable };
}

/** What a dispatch attempt carries: the provider API's fields, as the service's interface names them. */
export type PayoutSubmission = Parameters<PayoutProcessor['submit']>[0];

/** One payout as the processor keeps it. */
export interface ProcessorPayout extends PayoutSubmission {
  processorReference: string | null;
  status: ProcessorStatus;
  /** The outcome this payout has or will have: a duplicate callback repeats it. */
  plan: PayoutPlan;
  /** How often the reference was submitted; each submission after the first pays nothing. */
  submissions: number;
  receivedAt: Date;
  settledAt: Date | null;
  /** When the processor took a success back (the beneficiary's institution returned it), or null. */
  returnedAt: Date | null;
  returnReason: string | null;
  /** False once the settlement report leaves this payout out (magic `1006`, or on request). */
  reported: boolean;
  /** The position of this payout's latest change in the listing of report changes; 0: none yet. */
  changeSeq: number;
  /** Callbacks sent for this payout, forced ones included. */
  callbacks: CallbackDelivery[];
}

/** Programmatic access for tests and tools; the HTTP API offers the same. */
export interface SandboxProcessor {
  router: Router;
  /** Payouts received, oldest first; one per reference, however often it was submitted. */
  payouts(reference?: string): readonly ProcessorPayout[];
  /** Resolves once the payout has its final status (at once for a rejected one). */
  settled(reference: string): Promise<ProcessorPayout>;
  /**
   * Sends one more signed callback for a payout now: a duplicate of its outcome by default, or
   * whatever the overrides say, contradictory or not. The payout itself does not change.
   */
  sendCallback(reference: string, overrides?: Partial<PayoutOutcome>): CallbackDelivery;
  /** Returns a successful payout now (or at `at`): the settlement report shows it RETURNED. */
  returnPayout(reference: string, args?: { at?: Date; reason?: string }): ProcessorPayout;
  /** Leaves a payout out of every settlement report from now on. */
  omitFromReport(reference: string): ProcessorPayout;
  /**
   * Records payouts the processor took and paid at the given times, without a request or a
   * callback: a past day's settlement report for benchmarks and tools. A reference it has already
   * is left as it is.
   */
  recordPaid(payouts: readonly PaidPayout[]): void;
}

/** A payout paid on a past day, as {@link SandboxProcessor.recordPaid} records it. */
export interface PaidPayout {
  reference: string;
  amount: Decimal;
  currency: string;
  settledAt: Date;
}

type PlanInput = Omit<PayoutSubmission, 'reference' | 'amount' | 'callbackUrl'>;

/**
 * The processor's decision for one attempt, a pure function of the request: destinations it
 * cannot pay are rejected as INVALID_DESTINATION, then the magic endings apply.
 */
export function planPayout(input: PlanInput, corridors: Corridors): PayoutPlan {
  const invalid = destinationProblem(input, corridors);
  if (invalid) return { kind: 'REJECT', outcome: failure('INVALID_DESTINATION', false, invalid) };
  switch (input.accountUnique.slice(-4).toLowerCase()) {
    case '1001':
      return { kind: 'REJECT', outcome: failure('ACCOUNT_CLOSED', false) };
    case '1002':
      return {
        kind: 'ACCEPT',
        outcome: input.attempt === 1 ? failure('PROCESSOR_TIMEOUT', true) : SUCCESS,
        callback: true,
      };
    case '1003':
      return { kind: 'ACCEPT', outcome: failure('PROCESSOR_TIMEOUT', true), callback: true };
    case '1004':
      return { kind: 'ACCEPT', outcome: SUCCESS, callback: false };
    case '1005':
      return { kind: 'ACCEPT', outcome: SUCCESS, callback: true, returnAfterMs: LATE_RETURN_AFTER_MS };
    case '1006':
      return { kind: 'ACCEPT', outcome: SUCCESS, callback: true, reported: false };
    default:
      return { kind: 'ACCEPT', outcome: SUCCESS, callback: true };
  }
}

/** Why the processor cannot pay this destination, or null. */
function destinationProblem(input: PlanInput, corridors: Corridors): string | null {
  switch (input.destinationType) {
    case 'CRYPTO_WALLET': {
      const network = networkNamed(input.providerName.toUpperCase());
      if (!network)
        return `provider_name must be the network (${NETWORK_NAMES.join(', ')}) for CRYPTO_WALLET`;
      if (input.currency !== 'USDT') return 'CRYPTO_WALLET payouts are in USDT';
      if (!isChainAddress(network, input.accountUnique)) return `account_unique is not a ${network} address`;
      return null;
    }
    case 'BANK_ACCOUNT':
    case 'MOBILE_MONEY': {
      if (!input.accountName) return `account_name is required for ${input.destinationType}`;
      if (!input.providerCode) return `provider_code is required for ${input.destinationType}`;
      const corridor = corridors.find(input.country, input.currency);
      const known = corridor?.institutions.some(
        (i) => i.provider_code === input.providerCode && i.destination_type === input.destinationType,
      );
      if (!corridor || !known) {
        return `no ${input.destinationType} institution ${input.providerCode} in ${input.country}/${input.currency}`;
      }
      // A switch refuses an account number that cannot exist, as the service does before it.
      const format = corridors.accountFormat(corridor, input.destinationType, null);
      if (format && !format.pattern.test(input.accountUnique))
        return `account_unique must be ${format.description}`;
      return null;
    }
  }
}

const payoutBody = z.object({
  reference: referenceField,
  attempt: z.number().int().min(1).max(1000),
  destination_type: z.enum(DESTINATION_TYPES),
  country: z.string().regex(/^([A-Z]{2}|\*)$/, 'must be an ISO 3166-1 alpha-2 code'),
  currency: z.string().refine(isCurrency, 'is not a currency the processor pays'),
  amount: z.unknown().optional(),
  account_unique: z.string().trim().min(1).max(64),
  provider_code: z.string().trim().max(32).nullish(),
  provider_name: z.string().trim().min(1).max(100),
  account_name: z.string().trim().max(100).nullish(),
  callback_url: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }),
});

const forcedCallbackBody = z.object({
  status: z.enum(['SUCCESSFUL', 'FAILED']).optional(),
  failure_code: z
    .string()
    .regex(/^[A-Z][A-Z0-9_]{1,63}$/, 'must be an upper-case code such as PROCESSOR_TIMEOUT')
    .optional(),
  failure_reason: z.string().max(200).optional(),
  retryable: z.boolean().optional(),
});

const listQuery = z.object({ reference: z.string().max(128).optional() });

const MAX_REPORT_PAGE = 1000;
const reportQuery = railListQuery({ maxPage: MAX_REPORT_PAGE, defaultPage: 500 }).extend({
  date: dayField,
});

const MAX_CHANGES_PAGE = 1000;
const changesQuery = railListQuery({ maxPage: MAX_CHANGES_PAGE, defaultPage: 500 });

const returnBody = z.object({
  returned_at: z.iso.datetime({ offset: true }).optional(),
  reason: z.string().trim().min(1).max(200).optional(),
});

const DEFAULT_RETURN_REASON = "Returned by the beneficiary's institution: the account could not be credited.";

/** The state a payout has in the settlement report now. */
function settledStatus(p: ProcessorPayout): SettledStatus | null {
  if (p.returnedAt) return 'RETURNED';
  return p.status === 'ACCEPTED' ? null : p.status;
}

function reportLineJson(p: ProcessorPayout, status: SettledStatus) {
  return {
    reference: p.reference,
    processor_reference: p.processorReference,
    amount: p.amount.toFixed(currencyDecimals(p.currency)),
    currency: p.currency,
    status,
    failure_code: p.plan.outcome.failureCode,
    settled_at: p.settledAt?.toISOString() ?? null,
    returned_at: p.returnedAt?.toISOString() ?? null,
  };
}

function resultJson(p: ProcessorPayout) {
  const final = p.status === 'ACCEPTED' ? null : p.plan.outcome;
  return {
    reference: p.reference,
    status: p.status,
    processor_reference: p.processorReference,
    failure_code: final?.failureCode ?? null,
    failure_reason: final?.failureReason ?? null,
    retryable: final?.retryable ?? false,
  };
}

function recordJson(p: ProcessorPayout) {
  return {
    ...resultJson(p),
    attempt: p.attempt,
    destination_type: p.destinationType,
    country: p.country,
    currency: p.currency,
    amount: p.amount.toFixed(currencyDecimals(p.currency)),
    account_unique: p.accountUnique,
    provider_code: p.providerCode,
    provider_name: p.providerName,
    account_name: p.accountName,
    submissions: p.submissions,
    received_at: p.receivedAt.toISOString(),
    settled_at: p.settledAt?.toISOString() ?? null,
    returned_at: p.returnedAt?.toISOString() ?? null,
    in_settlement_report: p.reported,
    callbacks: p.callbacks.map((c) => ({
      id: c.id,
      status: c.status,
      attempts: c.attempts,
      body: JSON.parse(c.body),
    })),
  };
}

/** The payout processor. */
export function processorParty(options: {
  corridors: Corridors;
  clock: Clock;
  callbacks: CallbackSender;
  callbackDelayMs: number;
}): SandboxProcessor {
  const { clock, callbacks } = options;
  const payouts = new Map<string, ProcessorPayout>();
  const reportEpoch = randomBytes(4).toString('hex');
  const settledSignals = new Map<string, PromiseWithResolvers<ProcessorPayout>>();
  // Bumped by every change a settlement report can show; a day's report is kept until the next
  // change or the next late return falls due, so that paging through a large day sorts it once.
  let version = 0;
  // The listing of report changes: one entry per change, in the order the processor recorded them;
  // an entry whose payout changed again later is left out of the listing (its later one stands).
  const changes: { seq: number; payout: ProcessorPayout; at: Date }[] = [];
  // Successes a late return (`1005`) will take back, worked out when the listing is read.
  const lateReturnsDue = new Set<ProcessorPayout>();
  let cachedReport: {
    day: string;
    version: number;
    validUntil: number;
    lines: { payout: ProcessorPayout; status: SettledStatus }[];
  } | null = null;

  function signal(reference: string): PromiseWithResolvers<ProcessorPayout> {
    let s = settledSignals.get(reference);
    if (!s) {
      s = Promise.withResolvers<ProcessorPayout>();
      settledSignals.set(reference, s);
    }
    return s;
  }

  /** A callback now; `occurredAt` is the settlement's time for the payout's own outcome, so a duplicate repeats it byte for byte. */
  function sendCallback(payout: ProcessorPayout, outcome: PayoutOutcome, occurredAt: Date): CallbackDelivery {
    const delivery = callbacks.deliver(
      payout.callbackUrl,
      {
        event: 'payout.status',
        reference: payout.reference,
        processor_reference: payout.processorReference,
        status: outcome.status,
        failure_code: outcome.failureCode,
        failure_reason: outcome.failureReason,
        retryable: outcome.retryable,
        occurred_at: occurredAt.toISOString(),
      },
      0,
    );
    payout.callbacks.push(delivery);
    return delivery;
  }

  /** Records a change of the payout's report line in the listing of changes (a listed payout only). */
  function recordChange(payout: ProcessorPayout): void {
    if (!payout.reported || settledStatus(payout) === null) return;
    payout.changeSeq = changes.length + 1;
    changes.push({ seq: payout.changeSeq, payout, at: clock.now() });
  }

  function settle(payout: ProcessorPayout): void {
    version += 1;
    payout.status = payout.plan.outcome.status;
    payout.settledAt = clock.now();
    if (payout.plan.kind === 'ACCEPT' && payout.plan.returnAfterMs && payout.status === 'SUCCESSFUL')
      lateReturnsDue.add(payout);
    recordChange(payout);
    if (payout.plan.kind === 'ACCEPT' && payout.plan.callback) {
      sendCallback(payout, payout.plan.outcome, payout.settledAt);
    }
    signal(payout.reference).resolve(payout);
  }

  function find(reference: string): ProcessorPayout {
    const payout = payouts.get(reference);
    if (!payout) throw new RailError(404, 'PAYOUT_NOT_FOUND', 'No payout with that reference.');
    return lateReturns(payout);
  }

  /** A `1005` payout is returned once the clock is past its return time, worked out when looked at. */
  function lateReturns(payout: ProcessorPayout): ProcessorPayout {
    const after = payout.plan.kind === 'ACCEPT' ? payout.plan.returnAfterMs : null;
    if (after && payout.status === 'SUCCESSFUL' && payout.settledAt && !payout.returnedAt) {
      const due = new Date(payout.settledAt.getTime() + after);
      if (due <= clock.now()) {
        payout.returnedAt = due;
        payout.returnReason = DEFAULT_RETURN_REASON;
        lateReturnsDue.delete(payout);
        recordChange(payout);
      }
    }
    return payout;
  }

  function returnPayout(reference: string, args: { at?: Date; reason?: string } = {}): ProcessorPayout {
    const payout = find(reference);
    if (payout.status !== 'SUCCESSFUL' || !payout.settledAt) {
      throw new RailError(409, 'PAYOUT_NOT_SUCCESSFUL', 'Only a payout that succeeded can be returned.');
    }
    if (payout.returnedAt) return payout;
    version += 1;
    const at = args.at ?? clock.now();
    if (at < payout.settledAt) {
      throw new SandboxError('INVALID_REQUEST', 'returned_at: must not be before the payout settled');
    }
    payout.returnedAt = at;
    payout.returnReason = args.reason ?? DEFAULT_RETURN_REASON;
    lateReturnsDue.delete(payout);
    recordChange(payout);
    return payout;
  }

  /**
   * The report changes after `position` (a count of entries), up to `limit` payouts: each listed
   * payout once, at its latest change, as its report line reads now. Late returns now due are
   * recorded first, so that the listing is complete up to now.
   */
  function changesAfter(position: number, limit: number): { lines: ProcessorPayout[]; end: number } {
    const due = [...lateReturnsDue].sort(
      (a, b) => a.settledAt!.getTime() - b.settledAt!.getTime() || a.reference.localeCompare(b.reference),
    );
    for (const payout of due) lateReturns(payout);
    const lines: ProcessorPayout[] = [];
    let end = position;
    while (end < changes.length && lines.length < limit) {
      const change = changes[end]!;
      end += 1;
      if (change.payout.changeSeq === change.seq && change.payout.reported) lines.push(change.payout);
    }
    return { lines, end };
  }

  /**
   * The settlement report of one UTC day: every payout that reached its final state that day,
   * and every payout returned that day (a return is listed on the day it happened, and the
   * payout's own day then lists it RETURNED too), in the order of those events.
   */
  function reportOf(day: string): { payout: ProcessorPayout; status: SettledStatus }[] {
    const now = clock.now().getTime();
    if (
      cachedReport &&
      cachedReport.day === day &&
      cachedReport.version === version &&
      now < cachedReport.validUntil
    )
      return cachedReport.lines;
    let validUntil = Number.POSITIVE_INFINITY;
    const lines: { payout: ProcessorPayout; status: SettledStatus; at: number }[] = [];
    for (const payout of payouts.values()) {
      lateReturns(payout);
      const after = payout.plan.kind === 'ACCEPT' ? payout.plan.returnAfterMs : null;
      if (after && payout.status === 'SUCCESSFUL' && payout.settledAt && !payout.returnedAt)
        validUntil = Math.min(validUntil, payout.settledAt.getTime() + after);
      const status = settledStatus(payout);
      if (!payout.reported || status === null || !payout.settledAt) continue;
      const settledOn = dayOf(payout.settledAt);
      const returnedOn = payout.returnedAt ? dayOf(payout.returnedAt) : null;
      if (settledOn === day) lines.push({ payout, status, at: payout.settledAt.getTime() });
      else if (returnedOn === day) lines.push({ payout, status, at: payout.returnedAt!.getTime() });
    }
    lines.sort((a, b) => a.at - b.at || a.payout.reference.localeCompare(b.payout.reference));
    cachedReport = { day, version, validUntil, lines };
    return lines;
  }

  function forceCallback(reference: string, overrides: Partial<PayoutOutcome> = {}): CallbackDelivery {
    const payout = find(reference);
    const own = payout.plan.outcome;
    const status = overrides.status ?? own.status;
    const base =
      status === own.status ? own : status === 'FAILED' ? failure('PROCESSOR_TIMEOUT', true) : SUCCESS;
    const outcome: PayoutOutcome = {
      status,
      failureCode: overrides.failureCode ?? base.failureCode,
      failureReason:
        overrides.failureReason ??
        (overrides.failureCode ? reasonFor(overrides.failureCode) : base.failureReason),
      retryable: overrides.retryable ?? base.retryable,
    };
    const duplicate =
      payout.settledAt !== null &&
      outcome.status === own.status &&
      outcome.failureCode === own.failureCode &&
      outcome.failureReason === own.failureReason &&
      outcome.retryable === own.retryable;
    return sendCallback(payout, outcome, duplicate && payout.settledAt ? payout.settledAt : clock.now());
  }

  const router = new Router();
  router.use(railErrors);

  router.post('/processor/payouts', async (ctx) => {
    const body = validate(payoutBody, await readJson(ctx));
    const existing = payouts.get(body.reference);
    if (existing) {
      // The first answer stands, whatever this request says: a retry never pays twice.
      existing.submissions += 1;
      ctx.body = resultJson(existing);
      return;
    }
    const amount = validate(z.object({ amount: amountField(currencyDecimals(body.currency)) }), {
      amount: body.amount,
    }).amount;
    const input: PlanInput = {
      attempt: body.attempt,
      destinationType: body.destination_type,
      country: body.country,
      currency: body.currency,
      accountUnique: body.account_unique,
      providerCode: body.provider_code || null,
      providerName: body.provider_name,
      accountName: body.account_name || null,
    };
    const plan = planPayout(input, options.corridors);
    const payout: ProcessorPayout = {
      ...input,
      reference: body.reference,
      amount,
      callbackUrl: body.callback_url,
      processorReference:
        plan.outcome.failureCode === 'INVALID_DESTINATION' ? null : processorReference(body.reference),
      status: 'ACCEPTED',
      plan,
      submissions: 1,
      receivedAt: clock.now(),
      settledAt: null,
      returnedAt: null,
      returnReason: null,
      reported: plan.kind === 'REJECT' || plan.reported !== false,
      changeSeq: 0,
      callbacks: [],
    };
    payouts.set(payout.reference, payout);
    version += 1;
    if (plan.kind === 'REJECT') settle(payout);
    else callbacks.later(options.callbackDelayMs, () => settle(payout));
    ctx.status = 201;
    ctx.body = resultJson(payout);
  });

  router.get('/processor/payouts/:reference', (ctx) => {
    ctx.body = resultJson(find(pathParam(ctx.params, 'reference')));
  });

  router.get('/sandbox/processor/payouts', (ctx) => {
    const { reference } = validate(listQuery, ctx.query);
    const data = [...payouts.values()].filter((p) => reference === undefined || p.reference === reference);
    ctx.body = { data: data.map(recordJson) };
  });

  router.post('/sandbox/processor/payouts/:reference/callbacks', async (ctx) => {
    const reference = pathParam(ctx.params, 'reference');
    find(reference);
    const body = validate(forcedCallbackBody, await optionalJson(ctx));
    const delivery = forceCallback(reference, {
      status: body.status,
      failureCode: body.failure_code,
      failureReason: body.failure_reason,
      retryable: body.retryable,
    });
    ctx.status = 202;
    ctx.body = { reference, delivery_id: delivery.id, callback: JSON.parse(delivery.body) };
  });

  // The settlement report the service reconciles against (`docs/reconciliation.md`).
  router.get('/processor/settlements', (ctx) => {
    const query = validate(reportQuery, ctx.query);
    const lines = reportOf(query.date);
    const cursors = positionCursors(reportEpoch, () => lines.length);
    const after = cursors.after(query.cursor);
    const page = lines.slice(after, after + query.limit);
    const end = after + page.length;
    ctx.body = {
      date: query.date,
      transfers: page.map((l) => reportLineJson(l.payout, l.status)),
      next_cursor: end < lines.length ? cursors.encode(end) : null,
      // The day is over at the processor: its report will list nothing more for it (returns aside).
      complete: dayEnd(query.date) <= clock.now(),
    };
  });

  // The report changes since a cursor: how the service keeps every day's report up to date,
  // late returns included, without reading any day's report again (`docs/reconciliation.md`).
  router.get('/processor/settlements/changes', (ctx) => {
    const query = validate(changesQuery, ctx.query);
    const cursors = positionCursors(reportEpoch, () => changes.length);
    const after = cursors.after(query.cursor);
    const asOf = clock.now();
    const { lines, end } = changesAfter(after, query.limit);
    ctx.body = {
      transfers: lines.map((p) => ({
        ...reportLineJson(p, settledStatus(p)!),
        changed_at: changes[p.changeSeq - 1]!.at.toISOString(),
      })),
      next_cursor: cursors.encode(end),
      as_of: asOf.toISOString(),
    };
  });

  router.post('/sandbox/processor/payouts/:reference/return', async (ctx) => {
    const body = validate(returnBody, await optionalJson(ctx));
    const payout = returnPayout(pathParam(ctx.params, 'reference'), {
      at: body.returned_at ? new Date(body.returned_at) : undefined,
      reason: body.reason,
    });
    ctx.body = recordJson(payout);
  });

  router.post('/sandbox/processor/payouts/:reference/omit-from-report', (ctx) => {
    const payout = find(pathParam(ctx.params, 'reference'));
    payout.reported = false;
    version += 1;
    ctx.body = recordJson(payout);
  });

  return {
    router,
    returnPayout,
    omitFromReport(reference) {
      const payout = find(reference);
      payout.reported = false;
      version += 1;
      return payout;
    },
    recordPaid(paid) {
      for (const p of paid) {
        if (payouts.has(p.reference)) continue;
        payouts.set(p.reference, {
          reference: p.reference,
          attempt: 1,
          destinationType: 'BANK_ACCOUNT',
          country: 'NG',
          currency: p.currency,
          amount: p.amount,
          accountUnique: '0123456789',
          providerCode: null,
          providerName: 'Sandbox Bank',
          accountName: null,
          callbackUrl: 'http://127.0.0.1/',
          processorReference: processorReference(p.reference),
          status: 'SUCCESSFUL',
          plan: { kind: 'ACCEPT', outcome: SUCCESS, callback: false },
          submissions: 1,
          receivedAt: p.settledAt,
          settledAt: p.settledAt,
          returnedAt: null,
          returnReason: null,
          reported: true,
          changeSeq: 0,
          callbacks: [],
        });
        recordChange(payouts.get(p.reference)!);
      }
      version += 1;
    },
    payouts: (reference) =>
      [...payouts.values()]
        .filter((p) => reference === undefined || p.reference === reference)
        .map(lateReturns),
    settled: (reference) => {
      const payout = payouts.get(reference);
      if (payout && payout.status !== 'ACCEPTED') return Promise.resolve(payout);
      return signal(reference).promise;
    },
    sendCallback: forceCallback,
  };
}

/** The processor's id of a payout: stable per reference, as a processor's own id would be. */
function processorReference(reference: string): string {
  return `prc_${createHash('sha256').update(reference).digest('hex').slice(0, 20)}`;
}
