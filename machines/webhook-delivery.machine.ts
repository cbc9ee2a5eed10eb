import { and, assign, not, setup } from 'xstate';
import type { Actor, MachineTexts, StateMeta, TransitionMeta } from './texts.ts';

/**
 * One delivery job: one event to one URL (product decisions §4). Pure: time enters only through
 * each event's `now`, and due times live in context (`dueAt`) for the caller to copy into a
 * column that the delivery job claims, never as `after` delays.
 *
 *   (start) --> PENDING                 dueAt = now: attempt 1 at once
 *   PENDING | RETRY_SCHEDULED --ATTEMPT [isDue]--> ATTEMPTING       attempts + 1, dueAt = lease end
 *   ATTEMPTING --SUCCEEDED [isCurrentAttempt]--> SUCCEEDED (final)   record SUCCESS
 *   ATTEMPTING --FAILED [isCurrentAttempt, hasAttemptsLeft]--> RETRY_SCHEDULED   record FAILED,
 *                                                    dueAt = now + retryDelayMs(next attempt)
 *   ATTEMPTING --FAILED [isCurrentAttempt]--> DEAD (final)           record DEAD (the 5th failure)
 *   ATTEMPTING --ABANDON [leaseExpired, ...]--> RETRY_SCHEDULED | DEAD    as FAILED, no response
 *
 * ATTEMPTING is committed before the HTTP call is made and its `dueAt` is a lease: a worker that
 * dies mid-attempt leaves a row whose lease runs out, and ABANDON turns it into a failed attempt
 * like any other (the receiver may have got it: a duplicate carries the same event_id). Results
 * name the attempt they belong to, so a late result of an abandoned attempt is ignored rather
 * than settling the next one.
 *
 * The machine's one custom action, `record`, asks the caller for one delivery record (the
 * merchant-visible log line of that attempt). Anything not listed is ignored and the snapshot
 * comes back as the very same object; every transition here assigns, so none is mistaken for
 * an ignored event.
 *
 * Every state and transition carries its plain-language text (`description`, `meta`: see
 * `./texts.ts`); `webhookDeliveryTexts` at the end holds the rest.
 */

/** Attempts in total, the first included (contract: "up to 5 in total"). */
export const WEBHOOK_MAX_ATTEMPTS = 5;

export type WebhookDeliveryStatus = 'PENDING' | 'ATTEMPTING' | 'RETRY_SCHEDULED' | 'SUCCEEDED' | 'DEAD';

/** Status of one delivery record, as the contract names it. */
export type DeliveryRecordStatus = 'SUCCESS' | 'FAILED' | 'DEAD';

/** Parameters of the `record` action: one delivery record to write. */
export interface RecordParams {
  attemptNumber: number;
  status: DeliveryRecordStatus;
  /** The HTTP status the receiver answered; null when no response came (time-out, transport error). */
  responseStatus: number | null;
  /** Null on success; otherwise the HTTP status or the transport error. */
  failureReason: string | null;
}

export interface WebhookDeliveryContext {
  /** Attempts started so far; the one in progress included. */
  attempts: number;
  /** ISO-8601: when the next attempt is due, or while ATTEMPTING when its lease ends; null once final. */
  dueAt: string | null;
  lastResponseStatus: number | null;
  lastFailureReason: string | null;
}

export interface WebhookDeliveryInput {
  now: Date;
}

export type WebhookDeliveryEvent =
  /** Start the due attempt; `leaseMs` bounds how long it may stay unanswered before ABANDON. */
  | { type: 'ATTEMPT'; now: Date; leaseMs: number }
  | { type: 'SUCCEEDED'; attempt: number; responseStatus: number; now: Date }
  | {
      type: 'FAILED';
      attempt: number;
      responseStatus: number | null;
      failureReason: string;
      backoffBaseMs: number;
      now: Date;
    }
  /** The attempt's lease ran out without a result: its worker stopped. */
  | { type: 'ABANDON'; backoffBaseMs: number; now: Date };

/** What ABANDON records: the outcome of the attempt is unknown. */
export const ABANDONED_REASON = 'interrupted: the attempt was not completed (worker stopped)';

/**
 * The wait before attempt `attemptNumber` (n >= 2): `baseMs * 2^(n-2)`, so 10 s, 20 s, 40 s,
 * 80 s with the default base. Attempt 1 goes at once.
 */
export function retryDelayMs(attemptNumber: number, baseMs: number): number {
  if (attemptNumber <= 1) return 0;
  return baseMs * 2 ** (attemptNumber - 2);
}

/** When attempt `attemptNumber` is due, given when the previous one failed. */
export function nextAttemptAt(failedAt: Date, attemptNumber: number, baseMs: number): Date {
  return new Date(failedAt.getTime() + retryDelayMs(attemptNumber, baseMs));
}

const reached = (context: WebhookDeliveryContext, now: Date): boolean =>
  // Stryker disable next-line ConditionalExpression: Date.parse(null) is NaN, never reached either way; the check says so
  context.dueAt !== null && now.getTime() >= Date.parse(context.dueAt);

const failureOf = (event: WebhookDeliveryEvent): { responseStatus: number | null; failureReason: string } =>
  event.type === 'FAILED'
    ? { responseStatus: event.responseStatus, failureReason: event.failureReason }
    : { responseStatus: null, failureReason: ABANDONED_REASON };

const record =
  (status: DeliveryRecordStatus) =>
  ({ context, event }: { context: WebhookDeliveryContext; event: WebhookDeliveryEvent }): RecordParams =>
    event.type === 'SUCCEEDED'
      ? { attemptNumber: context.attempts, status, responseStatus: event.responseStatus, failureReason: null }
      : { attemptNumber: context.attempts, status, ...failureOf(event) };

/**
 * A failed (or abandoned) attempt: retry while attempts are left, else DEAD. `how` says in plain
 * words what happened to the attempt, `by` who caused it.
 */
const attemptFailed = (guard: 'isCurrentAttempt' | 'leaseExpired', how: string, by: readonly Actor[]) =>
  [
    {
      guard: and([guard, 'hasAttemptsLeft']),
      target: 'RETRY_SCHEDULED',
      description: `${how}: another attempt is scheduled.`,
      meta: { by },
      actions: ['scheduleRetry', { type: 'record', params: record('FAILED') }],
    },
    {
      guard: and([guard, not('hasAttemptsLeft')]),
      target: 'DEAD',
      description: `${how}, and it was the last: the delivery is given up and listed for operators.`,
      meta: { by },
      actions: ['recordDead', { type: 'record', params: record('DEAD') }],
    },
  ] as const;

// Carried out by the caller from the returned action data, never here.
const byTheCaller = () => {};

export const webhookDeliveryMachine = setup({
  types: {
    context: {} as WebhookDeliveryContext,
    events: {} as WebhookDeliveryEvent,
    input: {} as WebhookDeliveryInput,
    meta: {} as StateMeta,
    transitionMeta: {} as TransitionMeta,
  },
  guards: {
    isDue: ({ context, event }) => reached(context, event.now),
    leaseExpired: ({ context, event }) => reached(context, event.now),
    isCurrentAttempt: ({ context, event }) => 'attempt' in event && event.attempt === context.attempts,
    hasAttemptsLeft: ({ context }) => context.attempts < WEBHOOK_MAX_ATTEMPTS,
  },
  actions: {
    record: byTheCaller as (_: unknown, params: RecordParams) => void,
    startAttempt: assign(({ context, event }) => ({
      attempts: context.attempts + 1,
      // Stryker disable next-line ConditionalExpression: narrows the event's type; only ATTEMPT runs it
      dueAt: event.type === 'ATTEMPT' ? new Date(event.now.getTime() + event.leaseMs).toISOString() : null,
    })),
    recordSuccess: assign(({ event }) => ({
      dueAt: null,
      // Stryker disable next-line ConditionalExpression: narrows the event's type; only SUCCEEDED runs it
      lastResponseStatus: event.type === 'SUCCEEDED' ? event.responseStatus : null,
      lastFailureReason: null,
    })),
    scheduleRetry: assign(({ context, event }) => ({
      dueAt:
        'backoffBaseMs' in event
          ? nextAttemptAt(event.now, context.attempts + 1, event.backoffBaseMs).toISOString()
          : null,
      lastResponseStatus: failureOf(event).responseStatus,
      lastFailureReason: failureOf(event).failureReason,
    })),
    recordDead: assign(({ event }) => ({
      dueAt: null,
      lastResponseStatus: failureOf(event).responseStatus,
      lastFailureReason: failureOf(event).failureReason,
    })),
  },
}).createMachine({
  id: 'webhookDelivery',
  description:
    'Telling the merchant about one event at one URL: signed attempts, retried after growing waits, until the merchant acknowledges it or it is given up.',
  initial: 'PENDING',
  // Building an actor computes an initial snapshot without input (XState's pure `transition()` does
  // it per call, the engine once per machine): it gets no due time instead of an exception.
  context: ({ input }) => ({
    attempts: 0,
    dueAt: input ? input.now.toISOString() : null,
    lastResponseStatus: null,
    lastFailureReason: null,
  }),
  states: {
    PENDING: {
      description: 'The event waits for its first attempt, which is due at once.',
      on: {
        ATTEMPT: {
          guard: 'isDue',
          target: 'ATTEMPTING',
          actions: 'startAttempt',
          description: 'The first attempt is sent, signed.',
          meta: { by: ['SYSTEM'] },
        },
      },
    },
    ATTEMPTING: {
      description: "An attempt is on its way; the merchant's server has {WEBHOOK_TIMEOUT_MS} to answer.",
      on: {
        SUCCEEDED: {
          guard: 'isCurrentAttempt',
          target: 'SUCCEEDED',
          description: "The merchant's server acknowledges the event with a 2xx answer.",
          meta: { by: ['MERCHANT'] },
          actions: ['recordSuccess', { type: 'record', params: record('SUCCESS') }],
        },
        FAILED: attemptFailed(
          'isCurrentAttempt',
          // Stryker disable next-line StringLiteral: plain-language text for the documents
          "The merchant's server answers with an error, or not in time",
          // Stryker disable next-line ArrayDeclaration,StringLiteral: who may cause it, for the documents
          ['MERCHANT'],
        ),
        ABANDON: attemptFailed(
          'leaseExpired',
          // Stryker disable next-line StringLiteral: plain-language text for the documents
          'The worker sending the attempt stopped before it finished, so the attempt counts as failed (the merchant may see the event twice, with the same event id)',
          // Stryker disable next-line ArrayDeclaration,StringLiteral: who may cause it, for the documents
          ['SYSTEM'],
        ),
      },
    },
    RETRY_SCHEDULED: {
      description:
        'The last attempt failed; the next is due after a wait that starts at {WEBHOOK_BACKOFF_BASE_MS} and doubles each time.',
      on: {
        ATTEMPT: {
          guard: 'isDue',
          target: 'ATTEMPTING',
          actions: 'startAttempt',
          description: 'The next attempt is sent once its wait is over, signed afresh.',
          meta: { by: ['SYSTEM'] },
        },
      },
    },
    SUCCEEDED: {
      type: 'final',
      description: "The merchant's server acknowledged the event.",
    },
    DEAD: {
      type: 'final',
      description:
        'All {WEBHOOK_MAX_ATTEMPTS} attempts failed. Operators see it in their list and can send the event again.',
    },
  },
});

/** How a delivery begins, and its guards in plain words. */
export const webhookDeliveryTexts = {
  holdsMoney: false,
  created: {
    description:
      "Every event a payout or a refund records (payout.created, refund.failed, ...) becomes one delivery, to the payout's notification URL or else to the merchant's webhook URL. An operator who sends a DEAD delivery again starts another delivery of the same event, with attempts of its own; the DEAD one stays as it is.",
    by: ['SYSTEM', 'OPERATOR'],
  },
  guards: {
    isDue: {
      holds:
        "the attempt's time has come (the first at once, the next {WEBHOOK_BACKOFF_BASE_MS} after a failure, then twice as long each time)",
      fails: "the attempt's time has not come yet",
    },
    leaseExpired: {
      holds:
        'the attempt has had no result for longer than the response time-out, {WEBHOOK_TIMEOUT_MS}, plus a margin of {WEBHOOK_LEASE_MARGIN_MS}',
      fails: 'the attempt may still get its result',
    },
    isCurrentAttempt: {
      holds:
        'the answer belongs to the attempt in progress (a late answer to an earlier attempt changes nothing)',
      fails: 'the answer belongs to an earlier attempt',
    },
    hasAttemptsLeft: {
      holds: 'fewer than {WEBHOOK_MAX_ATTEMPTS} attempts have been made',
      fails: '{WEBHOOK_MAX_ATTEMPTS} attempts have been made',
    },
  },
} as const satisfies MachineTexts<typeof webhookDeliveryMachine>;
