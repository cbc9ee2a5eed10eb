import got from 'got';
import type { Clock } from '#src/lib/clock.ts';
import type { Logger } from '#src/lib/log.ts';
import { CALLBACK_SIGNATURE_HEADER, signCallback } from '#src/providers/callback-signature.ts';

/**
 * Signed callbacks from the simulated bank and processor to the service, delivered the way a
 * provider would: after a delay, signed afresh on every attempt, retried with exponential backoff
 * until the receiver answers 2xx or the attempts run out. Every pending timer and request is
 * cancelled by close().
 */

/** Shared secret of the sandbox's callbacks when none is configured: fine for a sandbox, never for production. */
export const DEFAULT_CALLBACK_SECRET = 'sandbox-provider-callback-secret';
export const DEFAULT_CALLBACK_DELAY_MS = 200;
export const DEFAULT_CALLBACK_RETRY_BASE_MS = 1000;
/** Attempts in total, the first included: the same budget the service gives merchant webhooks. */
export const CALLBACK_MAX_ATTEMPTS = 5;
const CALLBACK_TIMEOUT_MS = 5000;

export interface CallbackDelivery {
  readonly id: string;
  readonly url: string;
  readonly event: string;
  /** The exact bytes sent on every attempt. */
  readonly body: string;
  status: 'PENDING' | 'DELIVERED' | 'FAILED';
  attempts: number;
  /** HTTP status of the last attempt, null when it got no response. */
  lastResponseStatus: number | null;
  lastError: string | null;
  /** Settles when the delivery is DELIVERED or FAILED: tests await it instead of sleeping. */
  readonly done: Promise<CallbackDelivery>;
}

export interface CallbackSender {
  /** Sends `payload` to `url` after `delayMs`, retrying until a 2xx. */
  deliver(
    url: string,
    payload: { event: string } & Record<string, unknown>,
    delayMs: number,
  ): CallbackDelivery;
  /** Runs `task` after `delayMs` unless the sandbox closes first. */
  later(delayMs: number, task: () => void): void;
  /** Every delivery so far, oldest first. */
  deliveries(): readonly CallbackDelivery[];
  close(): void;
}

/** Delay before retry number `retry` (1 for the first retry): `baseMs` doubled each time. */
export function callbackRetryDelayMs(baseMs: number, retry: number): number {
  return baseMs * 2 ** (retry - 1);
}

/** The sandbox's one callback sender; the bank and the processor share it. */
export function createCallbackSender(options: {
  secret: string;
  clock: Clock;
  log: Logger;
  retryBaseMs: number;
}): CallbackSender {
  const { secret, clock, log, retryBaseMs } = options;
  const http = got.extend({
    timeout: { request: CALLBACK_TIMEOUT_MS },
    retry: { limit: 0 },
    throwHttpErrors: false,
    followRedirect: false,
    headers: { 'user-agent': 'payout-sandbox' },
  });
  const timers = new Set<NodeJS.Timeout>();
  const aborts = new AbortController();
  const deliveries: CallbackDelivery[] = [];
  const finishers = new Map<CallbackDelivery, () => void>();
  let closed = false;

  function finish(delivery: CallbackDelivery, status: 'DELIVERED' | 'FAILED'): void {
    delivery.status = status;
    finishers.get(delivery)?.();
    finishers.delete(delivery);
  }

  function later(delayMs: number, task: () => void): void {
    if (closed) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      task();
    }, delayMs);
    timers.add(timer);
  }

  async function attempt(delivery: CallbackDelivery): Promise<void> {
    delivery.attempts += 1;
    // Signed per attempt, as of the sandbox's clock: a retry must not carry a stale timestamp.
    const signature = signCallback(secret, delivery.body, Math.floor(clock.now().getTime() / 1000));
    try {
      const response = await http.post(delivery.url, {
        body: delivery.body,
        headers: { 'content-type': 'application/json', [CALLBACK_SIGNATURE_HEADER]: signature },
        signal: aborts.signal,
      });
      delivery.lastResponseStatus = response.statusCode;
      delivery.lastError = null;
      if (response.statusCode >= 200 && response.statusCode < 300) {
        finish(delivery, 'DELIVERED');
        return;
      }
    } catch (err) {
      delivery.lastResponseStatus = null;
      delivery.lastError = (err as Error).message;
    }
    if (closed) {
      finish(delivery, 'FAILED');
      return;
    }
    if (delivery.attempts >= CALLBACK_MAX_ATTEMPTS) {
      finish(delivery, 'FAILED');
      log.warn(
        { delivery: delivery.id, event: delivery.event, attempts: delivery.attempts },
        'sandbox callback given up',
      );
      return;
    }
    log.debug(
      {
        delivery: delivery.id,
        event: delivery.event,
        attempt: delivery.attempts,
        status: delivery.lastResponseStatus,
      },
      'sandbox callback failed, will retry',
    );
    later(callbackRetryDelayMs(retryBaseMs, delivery.attempts), () => void attempt(delivery));
  }

  return {
    deliver(url, payload, delayMs) {
      const settled = Promise.withResolvers<CallbackDelivery>();
      const delivery: CallbackDelivery = {
        id: `cbd_${deliveries.length + 1}`,
        url,
        event: payload.event,
        body: JSON.stringify(payload),
        status: 'PENDING',
        attempts: 0,
        lastResponseStatus: null,
        lastError: null,
        done: settled.promise,
      };
      finishers.set(delivery, () => settled.resolve(delivery));
      deliveries.push(delivery);
      if (closed) {
        delivery.lastError = 'sandbox closed';
        finish(delivery, 'FAILED');
      } else {
        later(delayMs, () => void attempt(delivery));
      }
      return delivery;
    },
    later,
    deliveries: () => deliveries,
    close() {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      aborts.abort();
      for (const delivery of deliveries) {
        if (delivery.status === 'PENDING') {
          delivery.lastError = 'sandbox closed';
          finish(delivery, 'FAILED');
        }
      }
    },
  };
}
