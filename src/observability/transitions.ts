import { AsyncLocalStorage } from 'node:async_hooks';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '#src/lib/log.ts';
import type { Metrics } from './metrics.ts';

/** One payout status change, as the lifecycle writes it. */
export interface PayoutStatusChange {
  payoutId: string;
  tenantId: string;
  /** null for a new payout's first status. */
  from: string | null;
  to: string;
  /** The reason code of its timeline row. */
  reason: string | null;
  triggeredBy: string;
}

/** Told of every payout status change, in the transaction that writes it. */
export interface TransitionObserver {
  payout(change: PayoutStatusChange): void;
}

/**
 * The observer of one service instance or worker thread: each status change counts in
 * `payout_transitions_total` and logs one line (id, from, to, reason, tenant). A new payout's
 * first status is counted (from `none`) but not logged: the create request's own line says it,
 * and a second line per create would cost the hot path.
 */
export function transitionObserver(log: Logger, metrics: Metrics): TransitionObserver {
  return {
    payout(change) {
      metrics.payoutTransitions.inc({ from: change.from ?? 'none', to: change.to });
      if (change.from === null) return;
      log.info(
        {
          payout_id: change.payoutId,
          tenant_id: change.tenantId,
          from: change.from,
          to: change.to,
          reason: change.reason,
          triggered_by: change.triggeredBy,
        },
        'payout status changed',
      );
    },
  };
}

// Keyed by the ORM's configuration, which every EntityManager forked from one ORM shares: how the
// lifecycle, handed only an EntityManager or a Sql, finds the observer of its own instance.
const observers = new WeakMap<object, TransitionObserver>();

/** Makes `observer` the one told of the status changes written through this ORM (and its `Sql`). */
export function observeTransitions(orm: MikroORM, observer: TransitionObserver): void {
  observers.set(orm.config, observer);
}

// Work that is always rolled back (a money move rehearsed at its proposal, src/approvals) changes
// nothing that anyone should count or read in the logs.
const rehearsals = new AsyncLocalStorage<true>();

/** Runs `work`, which is always rolled back, with no observer told of the status changes it writes. */
export function unobserved<T>(work: () => Promise<T>): Promise<T> {
  return rehearsals.run(true, work);
}

/** The observer of the ORM behind an EntityManager, if one was set (none inside {@link unobserved}). */
export function observerOf(em: EntityManager): TransitionObserver | undefined {
  return rehearsals.getStore() ? undefined : observers.get(em.config);
}
