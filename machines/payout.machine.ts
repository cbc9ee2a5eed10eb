import { and, assign, setup } from 'xstate';
import type { MachineTexts, PostParams, StateMeta, TransitionMeta } from './texts.ts';

/**
 * The life of a payout (product decisions §1). Pure: the engine (`src/engine/engine.ts`) applies
 * one event to a persisted snapshot and turns the returned actions into rows in the same
 * transaction: `timeline` (one status_timeline row; `triggered_by` is the event's `triggeredBy`),
 * `emit` (one outbox event, in order), `schedule` (a task row due right after commit) and `post`
 * (the money the transition moves: the ledger's flows in `src/payouts/money.ts`).
 *
 *   (start) ------------------------------------------------> CREATED.preparing
 *             timeline PAYOUT_CREATED, emit payout.created, schedule GENERATE_INSTRUCTION
 *   CREATED.preparing --INSTRUCTION_GENERATED--> PENDING_PAYMENT.awaiting
 *   CREATED.preparing --INSTRUCTION_GENERATION_FAILED--> FAILED (no money, no refund)
 *   CREATED.preparing --PAYEE_NAME_HELD--> CREATED.payeeHeld (payee name check, policy `hold`)
 *   CREATED.preparing --PAYEE_NAME_REFUSED--> FAILED (policy `refuse`, verdict known after the create)
 *   CREATED.payeeHeld --PAYEE_NAME_ACCEPTED--> CREATED.preparing (schedule GENERATE_INSTRUCTION)
 *   CREATED.payeeHeld --OPERATOR_FAIL--> FAILED (no money, no refund)
 *   PENDING_PAYMENT.awaiting --SETTLEMENT_CONFIRMED [coversExpected]--> PAYMENT_RECEIVED
 *   PENDING_PAYMENT.awaiting --SETTLEMENT_CONFIRMED [isUnderpaid]--> PENDING_PAYMENT.held
 *   PENDING_PAYMENT.awaiting --INSTRUCTION_EXPIRED--> EXPIRED
 *   PENDING_PAYMENT.held --SETTLEMENT_CONFIRMED [coversExpected]--> PAYMENT_RECEIVED
 *   PENDING_PAYMENT.held --SETTLEMENT_CONFIRMED [isUnderpaid, raisesTotal]--> held (new total)
 *   PENDING_PAYMENT.held --OPERATOR_FAIL--> FAILED (refund; the inflows held against it go FOR_REFUND)
 *   PAYMENT_RECEIVED --DISPATCH_ACCEPTED--> PROCESSING.inFlight
 *   PAYMENT_RECEIVED --DISPATCH_FAILED [isRetryable, hasAttemptsLeft]--> PAYMENT_RECEIVED (dispatch again)
 *   PAYMENT_RECEIVED --DISPATCH_FAILED [otherwise]--> FAILED (refund)
 *   PROCESSING --PROCESSOR_SUCCEEDED--> SUCCESSFUL
 *   PROCESSING --PROCESSOR_FAILED | DISPATCH_FAILED [isRetryable, hasAttemptsLeft]--> PROCESSING.redispatching
 *   PROCESSING --PROCESSOR_FAILED | DISPATCH_FAILED [otherwise]--> FAILED (refund)
 *   PROCESSING.redispatching --DISPATCH_ACCEPTED--> PROCESSING.inFlight (schedule QUERY_OUTFLOW only)
 *
 * SUCCESSFUL, FAILED and EXPIRED are final: whatever arrives later changes nothing. Any event not
 * listed for a state is ignored too, and the snapshot comes back as the very same object, which
 * is how the engine tells "ignored" from "taken". Because XState also returns the same object for
 * a transition that keeps the state and assigns nothing, every self-transition here assigns to
 * context (the new total, the failure it retries), so the engine sees it as taken.
 *
 * Callers feed processor outcomes through the outflow machine first and forward them here only
 * when that attempt's outflow actually changed: a duplicate callback for an attempt that already
 * failed must not retry or fail the payout a second time.
 *
 * Every state and transition carries its plain-language text (`description`, `meta`: see
 * `./texts.ts`); the guards' texts are `payoutTexts` at the end of this file.
 */

export type PayoutStatus =
  | 'CREATED'
  | 'PENDING_PAYMENT'
  | 'PAYMENT_RECEIVED'
  | 'PROCESSING'
  | 'SUCCESSFUL'
  | 'FAILED'
  | 'EXPIRED';

/** Who caused an event; the hook copies it into the timeline row's `triggered_by`. */
export type TriggeredBy = 'SYSTEM' | 'API' | 'PROCESSOR_WEBHOOK' | 'ADMIN';

/** Webhook event types the payout machine emits (product decisions §4). */
export type PayoutWebhook =
  | 'payout.created'
  | 'payout.pending_payment'
  | 'payout.underpaid'
  | 'payout.payment_received'
  | 'payout.processing'
  | 'payout.successful'
  | 'payout.failed'
  | 'payout.expired';

/** Background work a payout transition makes due. */
export type PayoutTask = 'GENERATE_INSTRUCTION' | 'DISPATCH' | 'QUERY_OUTFLOW' | 'RAISE_REFUND';

/** Parameters of the custom actions, as `transition()` hands them back (always plain objects). */
export interface TimelineParams {
  reasonCode: string;
}
export interface EmitParams {
  event: PayoutWebhook;
}
export interface ScheduleParams {
  task: PayoutTask;
}

export interface PayoutFailure {
  /** The processor's failure code, or the reason code of a failure that is not the processor's. */
  code: string;
  reason: string | null;
}

export interface PayoutContext {
  /** Settlement received so far (decimal string), as last confirmed; null until a settlement is confirmed. */
  receivedTotal: string | null;
  /** What the settlement brought beyond the expected amount (decimal string); null when none. */
  overpayment: string | null;
  /** The failure that failed the payout once FAILED; before that, the last dispatch failure that was retried. */
  failure: PayoutFailure | null;
}

interface Base {
  triggeredBy: TriggeredBy;
  now: Date;
}

/** The processor's verdict on one dispatch attempt that did not succeed. */
export interface AttemptFailure {
  failureCode: string;
  failureReason: string;
  retryable: boolean;
  /** Whether the configured number of attempts allows another one (the outflow rows count them). */
  attemptsLeft: boolean;
}

export type PayoutEvent =
  | ({ type: 'INSTRUCTION_GENERATED' } & Base)
  | ({ type: 'INSTRUCTION_GENERATION_FAILED'; failureReason: string } & Base)
  /**
   * The settlement attributed to this payout so far. Amounts are non-negative decimal strings
   * (`Decimal.toFixed()`); an operator's attribution or top-up sends it with triggeredBy ADMIN.
   */
  | ({ type: 'SETTLEMENT_CONFIRMED'; receivedTotal: string; expected: string } & Base)
  | ({ type: 'INSTRUCTION_EXPIRED' } & Base)
  | { type: 'OPERATOR_FAIL'; triggeredBy: 'ADMIN'; now: Date }
  /** The payee name check under the tenant's policy: hold for an operator, or refuse (`src/payees`). */
  | ({ type: 'PAYEE_NAME_HELD' } & Base)
  | ({ type: 'PAYEE_NAME_REFUSED' } & Base)
  | { type: 'PAYEE_NAME_ACCEPTED'; triggeredBy: 'ADMIN'; now: Date }
  | ({ type: 'DISPATCH_ACCEPTED' } & Base)
  | ({ type: 'DISPATCH_FAILED' } & AttemptFailure & Base)
  | ({ type: 'PROCESSOR_SUCCEEDED' } & Base)
  | ({ type: 'PROCESSOR_FAILED' } & AttemptFailure & Base);

const DECIMAL = /^\d+(\.\d+)?$/;

/**
 * Two non-negative decimal strings as integers of their common smallest unit, so that they
 * compare and subtract exactly. BigInt keeps the machine free of imports and of floats.
 */
function inUnits(a: string, b: string): { a: bigint; b: bigint; scale: number } {
  for (const v of [a, b]) {
    if (!DECIMAL.test(v)) throw new Error(`not a non-negative decimal string: ${JSON.stringify(v)}`);
  }
  // Stryker disable next-line StringLiteral: a longer common scale only pads both sides with zeros
  const scale = Math.max((a.split('.')[1] ?? '').length, (b.split('.')[1] ?? '').length);
  const units = (v: string) => {
    // Stryker disable next-line StringLiteral: split always gives the whole part
    const [whole = '', fraction = ''] = v.split('.');
    return BigInt(whole + fraction.padEnd(scale, '0'));
  };
  return { a: units(a), b: units(b), scale };
}

/** Whether the decimal string `a` is at least `b`. */
export function decimalAtLeast(a: string, b: string): boolean {
  const u = inUnits(a, b);
  return u.a >= u.b;
}

/** `a - b` as a decimal string without trailing zeros, or null when `a` does not exceed `b`. */
export function decimalExcess(a: string, b: string): string | null {
  const u = inUnits(a, b);
  if (u.a <= u.b) return null;
  const digits = (u.a - u.b).toString().padStart(u.scale + 1, '0');
  const whole = digits.slice(0, digits.length - u.scale);
  const fraction = digits.slice(digits.length - u.scale).replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : whole;
}

const covers = (event: PayoutEvent): boolean =>
  event.type === 'SETTLEMENT_CONFIRMED' && decimalAtLeast(event.receivedTotal, event.expected);

/**
 * A settlement that covers the expected amount: the payout is paid and goes to dispatch. The
 * builders' texts come as `{ description }` so that mutation testing leaves them out.
 */
const paid = ({ description }: { description: string }) =>
  ({
    guard: 'coversExpected' as const,
    target: '#payout.PAYMENT_RECEIVED' as const,
    description,
    meta: {
      by: ['BANK_OR_CHAIN', 'OPERATOR_FOUR_EYES'],
      causes: [
        { machine: 'payment-instruction', event: 'PAYMENT_MATCHED', note: 'at the same moment' },
        { machine: 'outflow', creates: true, note: 'the first attempt at the processor' },
      ],
    },
    actions: [
      'recordSettlement',
      { type: 'timeline', params: { reasonCode: 'PAYMENT_RECEIVED' } },
      { type: 'emit', params: { event: 'payout.payment_received' } },
      { type: 'schedule', params: { task: 'DISPATCH' } },
    ],
  }) as const;

/** A settlement below the expected amount: (still) held for review. */
const underpaidActions = [
  'recordSettlement',
  { type: 'timeline', params: { reasonCode: 'SETTLEMENT_UNDERPAID' } },
  { type: 'emit', params: { event: 'payout.underpaid' } },
] as const;

/**
 * The processor definitely failed one attempt: dispatch again while it is retryable and attempts
 * are left (`retryTarget`; undefined keeps the state), otherwise fail the payout and refund.
 */
const attemptFailed = (
  retryTarget: string | undefined,
  texts: { retry: { description: string }; fail: { description: string } },
) =>
  [
    {
      guard: and(['isRetryable', 'hasAttemptsLeft']),
      target: retryTarget,
      description: texts.retry.description,
      meta: { by: ['PROCESSOR'], causes: [{ machine: 'outflow', creates: true, note: 'the next attempt' }] },
      actions: [
        // Besides keeping the failure, this assign is what makes a same-state retry a new
        // snapshot, the engine's sign that the transition was taken.
        'recordAttemptFailure',
        { type: 'timeline', params: { reasonCode: 'DISPATCH_RETRIED' } },
        { type: 'schedule', params: { task: 'DISPATCH' } },
      ],
    },
    {
      target: '#payout.FAILED',
      description: texts.fail.description,
      meta: { by: ['PROCESSOR'], causes: [{ machine: 'refund', creates: true }] },
      actions: [
        'recordAttemptFailure',
        {
          type: 'timeline',
          params: ({ event }: { event: AttemptFailure }) => ({ reasonCode: event.failureCode }),
        },
        { type: 'emit', params: { event: 'payout.failed' } },
        { type: 'schedule', params: { task: 'RAISE_REFUND' } },
      ],
    },
  ] as const;

// Carried out by the engine's onTransition hook from the returned action data, never here.
const byTheHook = () => {};

export const payoutMachine = setup({
  types: {
    context: {} as PayoutContext,
    events: {} as PayoutEvent,
    meta: {} as StateMeta,
    transitionMeta: {} as TransitionMeta,
  },
  guards: {
    coversExpected: ({ event }) => covers(event),
    isUnderpaid: ({ event }) => event.type === 'SETTLEMENT_CONFIRMED' && !covers(event),
    // A repeated confirmation of the same total (a redelivered bank notification) is not news.
    raisesTotal: ({ context, event }) =>
      event.type === 'SETTLEMENT_CONFIRMED' &&
      (context.receivedTotal === null || !decimalAtLeast(context.receivedTotal, event.receivedTotal)),
    isRetryable: ({ event }) => 'retryable' in event && event.retryable,
    hasAttemptsLeft: ({ event }) => 'attemptsLeft' in event && event.attemptsLeft,
  },
  actions: {
    timeline: byTheHook as (_: unknown, params: TimelineParams) => void,
    emit: byTheHook as (_: unknown, params: EmitParams) => void,
    schedule: byTheHook as (_: unknown, params: ScheduleParams) => void,
    post: byTheHook as (_: unknown, params: PostParams) => void,
    recordSettlement: assign(({ event }) =>
      // Stryker disable next-line ConditionalExpression: narrows the event's type; only SETTLEMENT_CONFIRMED runs it
      event.type === 'SETTLEMENT_CONFIRMED'
        ? {
            receivedTotal: event.receivedTotal,
            overpayment: decimalExcess(event.receivedTotal, event.expected),
          }
        : {},
    ),
    recordAttemptFailure: assign({
      failure: ({ context, event }) =>
        'failureCode' in event ? { code: event.failureCode, reason: event.failureReason } : context.failure,
    }),
    recordGenerationFailure: assign({
      failure: ({ context, event }) =>
        // Stryker disable next-line ConditionalExpression: narrows the event's type; only that event runs it
        event.type === 'INSTRUCTION_GENERATION_FAILED'
          ? { code: 'INSTRUCTION_GENERATION_FAILED', reason: event.failureReason }
          : context.failure,
    }),
    recordRejectedHold: assign({ failure: () => ({ code: 'SETTLEMENT_UNDERPAID', reason: null }) }),
    recordPayeeRefusal: assign({
      failure: () => ({
        code: 'PAYEE_NAME_MISMATCH',
        reason: "the beneficiary's name does not match the account",
      }),
    }),
  },
}).createMachine({
  id: 'payout',
  description:
    "The life of a payout, from the merchant's request to the beneficiary being paid, or to failure or expiry.",
  initial: 'CREATED',
  context: { receivedTotal: null, overpayment: null, failure: null },
  // Root entry runs once, when the payout is created, and never again.
  entry: [
    { type: 'timeline', params: { reasonCode: 'PAYOUT_CREATED' } },
    { type: 'emit', params: { event: 'payout.created' } },
    { type: 'schedule', params: { task: 'GENERATE_INSTRUCTION' } },
  ],
  states: {
    CREATED: {
      description:
        'The merchant has asked for the payout. We are pricing it and preparing the payment instruction that tells the merchant what to pay, where, and by when.',
      initial: 'preparing',
      states: {
        preparing: {
          description:
            "The payout is being priced and its payment instruction prepared; the beneficiary's name is checked against the institution's first.",
          meta: { money: 'NOT_YET_RECEIVED' },
          on: {
            INSTRUCTION_GENERATED: {
              target: '#payout.PENDING_PAYMENT',
              description:
                "The rate is locked (or the merchant's quote is used) and the payment instruction is issued: the amount to pay, a USDT address or an NGN bank account, and a deadline {PAYMENT_INSTRUCTION_TTL_MS} away.",
              meta: { by: ['SYSTEM'], causes: [{ machine: 'payment-instruction', creates: true }] },
              actions: [
                { type: 'timeline', params: { reasonCode: 'INSTRUCTION_GENERATED' } },
                { type: 'emit', params: { event: 'payout.pending_payment' } },
              ],
            },
            INSTRUCTION_GENERATION_FAILED: {
              target: '#payout.FAILED',
              description:
                'No payment instruction can be issued (the corridor or the quote is gone, or the providers stayed unavailable for {MAX_GENERATION_ATTEMPTS} attempts): the payout fails before any money was asked for, so nothing is refunded.',
              meta: { by: ['SYSTEM'] },
              // No money was asked for yet, so there is nothing to refund.
              actions: [
                'recordGenerationFailure',
                { type: 'timeline', params: { reasonCode: 'INSTRUCTION_GENERATION_FAILED' } },
                { type: 'emit', params: { event: 'payout.failed' } },
              ],
            },
            PAYEE_NAME_HELD: {
              target: 'payeeHeld',
              description:
                "The beneficiary's name does not match the name the institution holds (or the institution could not say), and the merchant's policy is to hold such payouts: no payment instruction is issued until an operator decides.",
              meta: { by: ['SYSTEM'] },
              actions: [{ type: 'timeline', params: { reasonCode: 'PAYEE_NAME_HELD' } }],
            },
            PAYEE_NAME_REFUSED: {
              target: '#payout.FAILED',
              description:
                "The institution's answer came after the payout was accepted, the names do not match, and the merchant's policy is to refuse such payouts: the payout fails before any money was asked for, so nothing is refunded.",
              meta: { by: ['SYSTEM'] },
              actions: [
                'recordPayeeRefusal',
                { type: 'timeline', params: { reasonCode: 'PAYEE_NAME_MISMATCH' } },
                { type: 'emit', params: { event: 'payout.failed' } },
              ],
            },
          },
        },
        // The name check said NO_MATCH (or could not be made) under the `hold` policy.
        payeeHeld: {
          description:
            "Held because the beneficiary's name does not match the institution's. No money has been asked for; an operator, with four eyes, lets the payout go on or fails it.",
          meta: { money: 'NOT_YET_RECEIVED' },
          on: {
            PAYEE_NAME_ACCEPTED: {
              target: 'preparing',
              description:
                'An operator, with four eyes, accepts the name as it is (the merchant confirmed the beneficiary): the payment instruction is prepared now.',
              meta: { by: ['OPERATOR_FOUR_EYES'] },
              actions: [
                { type: 'timeline', params: { reasonCode: 'PAYEE_NAME_ACCEPTED' } },
                { type: 'schedule', params: { task: 'GENERATE_INSTRUCTION' } },
              ],
            },
            OPERATOR_FAIL: {
              target: '#payout.FAILED',
              description:
                'An operator, with four eyes, decides the payout must not go to this account: it fails before any money was asked for, so nothing is refunded.',
              meta: { by: ['OPERATOR_FOUR_EYES'] },
              actions: [
                'recordPayeeRefusal',
                { type: 'timeline', params: { reasonCode: 'PAYEE_NAME_REJECTED' } },
                { type: 'emit', params: { event: 'payout.failed' } },
              ],
            },
          },
        },
      },
    },
    PENDING_PAYMENT: {
      description: 'The merchant has been told what to pay and by when; the payout waits for that money.',
      initial: 'awaiting',
      states: {
        awaiting: {
          description:
            "Waiting for the merchant's money: nothing, or nothing that can be assigned to this payout, has arrived yet.",
          meta: { money: 'NOT_YET_RECEIVED' },
          on: {
            SETTLEMENT_CONFIRMED: [
              paid({
                description:
                  "The merchant's money is confirmed and covers the amount asked for at once: the payout is paid and goes to the processor.",
              }),
              {
                // Stryker disable next-line StringLiteral: after `paid`, every settlement left is short; the guard names the case
                guard: 'isUnderpaid',
                target: 'held',
                description:
                  'Money is confirmed but less than the amount asked for: the payout is held for review and the merchant is told it is underpaid.',
                meta: { by: ['BANK_OR_CHAIN', 'OPERATOR_FOUR_EYES'] },
                actions: underpaidActions,
              },
            ],
            INSTRUCTION_EXPIRED: {
              target: '#payout.EXPIRED',
              description: "The instruction's deadline passed with nothing received: the payout expires.",
              meta: { by: ['SYSTEM'] },
              actions: [
                { type: 'timeline', params: { reasonCode: 'INSTRUCTION_EXPIRED' } },
                { type: 'emit', params: { event: 'payout.expired' } },
              ],
            },
          },
        },
        // Underpaid and held for review. Money was received, so a lapsed instruction does not
        // expire the payout (INSTRUCTION_EXPIRED is ignored): a top-up or an operator decides.
        held: {
          description:
            "Money arrived but less than the amount asked for. The payout is held: it is never paid out in part and does not expire. More money from the merchant, or an operator's decision, ends the hold.",
          meta: { money: 'HELD_FOR_PERSON' },
          on: {
            SETTLEMENT_CONFIRMED: [
              paid({
                description:
                  "More money (a top-up, or money an operator attributes) brings the held payout's total to the amount asked for: the hold ends, and the payout is paid and goes to the processor.",
              }),
              {
                guard: and(['isUnderpaid', 'raisesTotal']),
                description:
                  'More money is confirmed but the total is still short: the payout stays held and the merchant is told the new total.',
                meta: { by: ['BANK_OR_CHAIN', 'OPERATOR_FOUR_EYES'] },
                actions: underpaidActions,
              },
            ],
            OPERATOR_FAIL: {
              target: '#payout.FAILED',
              description:
                'An operator decides the shortfall will not be made up: the payout fails and the money received goes back to the merchant through a refund.',
              meta: {
                by: ['OPERATOR_FOUR_EYES'],
                causes: [
                  { machine: 'refund', creates: true },
                  {
                    machine: 'inflow',
                    event: 'PAYOUT_FAILED',
                    note: 'every inflow held against it, at the same moment',
                  },
                ],
              },
              actions: [
                'recordRejectedHold',
                { type: 'timeline', params: { reasonCode: 'SETTLEMENT_UNDERPAID' } },
                { type: 'emit', params: { event: 'payout.failed' } },
                { type: 'schedule', params: { task: 'RAISE_REFUND' } },
              ],
            },
          },
        },
      },
    },
    PAYMENT_RECEIVED: {
      description:
        "The merchant's money has arrived in full (an overpayment is recorded and goes back with any later refund). The payout is being sent to the processor.",
      meta: { money: 'WITH_US' },
      on: {
        DISPATCH_ACCEPTED: {
          target: 'PROCESSING',
          description: 'The processor accepts the payout, to pay the beneficiary.',
          meta: { by: ['PROCESSOR'] },
          // The query finds the outcome if the processor never calls back.
          actions: [
            { type: 'timeline', params: { reasonCode: 'DISPATCHED' } },
            { type: 'emit', params: { event: 'payout.processing' } },
            { type: 'schedule', params: { task: 'QUERY_OUTFLOW' } },
          ],
        },
        DISPATCH_FAILED: attemptFailed(undefined, {
          retry: {
            description:
              'The processor refuses the first attempt as it is sent (it never accepted it) but says another may succeed, and attempts are left: a new attempt is sent.',
          },
          fail: {
            description:
              "The processor refuses the first attempt as it is sent, for good, or refuses the last allowed attempt: the payout fails and the merchant's money is refunded.",
          },
        }),
      },
    },
    PROCESSING: {
      description: 'The processor has the payout and is paying the beneficiary.',
      initial: 'inFlight',
      states: {
        // An accepted attempt whose outcome is awaited (callback or status query).
        inFlight: {
          description:
            'An attempt is with the processor. Its answer comes by its call, or by our status query {OUTFLOW_QUERY_GRACE_MS} after the attempt was accepted.',
          meta: { money: 'WITH_PROCESSOR' },
        },
        // The last attempt failed retryably; the next one is being dispatched.
        redispatching: {
          description:
            'The processor failed the last attempt in a way that may pass on a retry; the money did not leave and the next attempt is being sent.',
          meta: { money: 'WITH_US' },
          on: {
            // No timeline row: the status does not change and DISPATCH_RETRIED already told the story.
            DISPATCH_ACCEPTED: {
              target: 'inFlight',
              description: 'The processor accepts the new attempt.',
              meta: { by: ['PROCESSOR'] },
              actions: [{ type: 'schedule', params: { task: 'QUERY_OUTFLOW' } }],
            },
          },
        },
      },
      on: {
        PROCESSOR_SUCCEEDED: {
          target: 'SUCCESSFUL',
          description: 'The processor reports that the beneficiary was paid.',
          meta: { by: ['PROCESSOR'] },
          actions: [
            { type: 'timeline', params: { reasonCode: 'PAYOUT_SUCCEEDED' } },
            { type: 'emit', params: { event: 'payout.successful' } },
            // The fees are the service's; an overpayment is set aside for the merchant.
            { type: 'post', params: { flow: 'SETTLED' } },
          ],
        },
        // A callback or query reporting that the attempt in flight failed, and a redispatch the
        // processor refused outright, are the same fact: that attempt is definitely over.
        PROCESSOR_FAILED: attemptFailed('.redispatching', {
          retry: {
            description:
              'The processor fails an attempt it had accepted, but says another may succeed, and attempts are left: the money is back from the processor and a new attempt is sent.',
          },
          fail: {
            description:
              "The processor fails an attempt it had accepted, for good, or fails the last allowed attempt: the money is back from the processor, the payout fails and the merchant's money is refunded.",
          },
        }),
        DISPATCH_FAILED: attemptFailed('.redispatching', {
          retry: {
            description:
              'The processor refuses a later attempt as it is sent (it never accepted it) but says another may succeed, and attempts are left: yet another attempt is sent.',
          },
          fail: {
            description:
              "The processor refuses a later attempt as it is sent, for good, or refuses the last allowed attempt: the payout fails and the merchant's money is refunded.",
          },
        }),
      },
    },
    SUCCESSFUL: {
      type: 'final',
      description:
        'The beneficiary has been paid the destination amount. From what the merchant paid, the service kept the platform fee and the network fee; anything paid beyond the amount asked for is set aside for the merchant (its overpayments account) until an operator returns it. A transfer the processor returns after reporting success shows up in reconciliation as a break, and its money goes back to the merchant only through an approved resolution.',
      meta: { money: 'WITH_BENEFICIARY' },
    },
    FAILED: {
      type: 'final',
      description:
        'The payout did not happen. What happened to the merchant’s money is not in the state name but in the ledger, which tells the cases below apart: nothing ever arrived; it is with us, waiting for its refund (raised within a minute, or held for an operator while the merchant has no refund destination, or after a refund that failed); the refund is on its way; or it is back with the merchant, less the refund fee.',
      meta: {
        cases: [
          {
            code: 'AWAITING_REFUND',
            label: 'with us, awaiting its refund',
            money: 'WITH_US',
            description:
              'The money received is still in the payout’s account: its refund is about to be sent, waits for the merchant to register a refund destination and an operator to raise it, or failed and waits for a retry. No fee has been kept.',
            ledger: { test: 'holds', accounts: ['payout'] },
          },
          {
            code: 'REFUND_ON_ITS_WAY',
            label: 'refund on its way',
            money: 'ON_ITS_WAY_BACK',
            description:
              'The refund was sent and is not yet confirmed: the money, less the refund fee the service kept ({REFUND_FEE}), is on its way to the merchant’s refund destination.',
            ledger: { test: 'holds', accounts: ['refundRail'] },
          },
          {
            code: 'RETURNED_TO_MERCHANT',
            label: 'returned to the merchant',
            money: 'BACK_WITH_MERCHANT',
            description:
              'The refund arrived: the money is back with the merchant, less the refund fee the service kept ({REFUND_FEE}, never more than was received).',
            ledger: { test: 'holds', accounts: ['merchant'] },
          },
          {
            code: 'KEPT_AS_REFUND_FEE',
            label: 'all kept as the refund fee',
            money: 'WITH_US',
            description:
              'What arrived was no more than the refund fee ({REFUND_FEE}): the service kept it all as that fee and sent nothing back.',
            ledger: { test: 'holds', accounts: ['refundFee'] },
          },
          {
            code: 'NOTHING_RECEIVED',
            label: 'nothing ever arrived',
            money: 'NOT_YET_RECEIVED',
            description:
              'The payout failed before any money was asked for (its payment instruction could not be issued, or the beneficiary’s name was refused): nothing arrived, so there is nothing to return and no fee.',
            ledger: { test: 'empty', accounts: ['payout'] },
          },
        ],
      },
    },
    EXPIRED: {
      type: 'final',
      description:
        'The merchant did not pay before the deadline, so nothing was received and nothing is refunded. Money arriving later is kept as an unmatched inflow for operators, never lost.',
      meta: { money: 'NOT_YET_RECEIVED' },
    },
  },
});

/** How a payout begins, and its guards in plain words. */
export const payoutTexts = {
  holdsMoney: true,
  created: {
    description:
      'The merchant asks for a payout through the API, naming the beneficiary and the amount; a refund destination must already be registered for the settlement currency.',
    by: ['MERCHANT'],
    causes: [{ machine: 'quote', event: 'USE', note: 'when the merchant gives a quote' }],
  },
  guards: {
    coversExpected: {
      holds: 'the money received so far is at least the amount asked for',
      fails: 'the money received so far is less than the amount asked for',
    },
    isUnderpaid: {
      holds: 'the money received so far is less than the amount asked for',
      fails: 'the money received so far is at least the amount asked for',
    },
    raisesTotal: {
      holds:
        'the new total is higher than the one already recorded (the same money notified twice changes nothing)',
      fails: 'the new total is no higher than the one already recorded',
    },
    isRetryable: {
      holds: 'the processor says another attempt may succeed',
      fails: 'the processor says the failure is final',
    },
    hasAttemptsLeft: {
      holds: 'fewer than {DISPATCH_MAX_ATTEMPTS} attempts have been made',
      fails: '{DISPATCH_MAX_ATTEMPTS} attempts have been made',
    },
  },
} as const satisfies MachineTexts<typeof payoutMachine>;
