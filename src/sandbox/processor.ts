import { createHash } from 'node:crypto';
import Router from '@koa/router';
import { z } from 'zod';
import { type Corridors, DESTINATION_TYPES, NETWORKS } from '#src/corridors/corridors.ts';
import type { Clock } from '#src/lib/clock.ts';
import { currencyDecimals, isCurrency } from '#src/lib/money.ts';
import { isChainAddress } from '#src/providers/addresses.ts';
import type { PayoutProcessor } from '#src/providers/rails.ts';
import type { CallbackDelivery, CallbackSender } from './callbacks.ts';
import { readJson, validate } from './http.ts';
import { amountField, optionalJson, pathParam, RailError, railErrors, referenceField } from './rail-http.ts';

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
  | { kind: 'ACCEPT'; outcome: PayoutOutcome; callback: boolean };

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
    default:
      return { kind: 'ACCEPT', outcome: SUCCESS, callback: true };
  }
}

/** Why the processor cannot pay this destination, or null. */
function destinationProblem(input: PlanInput, corridors: Corridors): string | null {
  switch (input.destinationType) {
    case 'CRYPTO_WALLET': {
      const network = NETWORKS.find((n) => n === input.providerName.toUpperCase());
      if (!network) return `provider_name must be the network (${NETWORKS.join(' or ')}) for CRYPTO_WALLET`;
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
  const settledSignals = new Map<string, PromiseWithResolvers<ProcessorPayout>>();

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

  function settle(payout: ProcessorPayout): void {
    payout.status = payout.plan.outcome.status;
    payout.settledAt = clock.now();
    if (payout.plan.kind === 'ACCEPT' && payout.plan.callback) {
      sendCallback(payout, payout.plan.outcome, payout.settledAt);
    }
    signal(payout.reference).resolve(payout);
  }

  function find(reference: string): ProcessorPayout {
    const payout = payouts.get(reference);
    if (!payout) throw new RailError(404, 'PAYOUT_NOT_FOUND', 'No payout with that reference.');
    return payout;
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
      callbacks: [],
    };
    payouts.set(payout.reference, payout);
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

  return {
    router,
    payouts: (reference) =>
      [...payouts.values()].filter((p) => reference === undefined || p.reference === reference),
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
