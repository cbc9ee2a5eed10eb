import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { afterCommit } from '#src/db/after-commit.ts';
import type { Sql } from '#src/db/sql.ts';
import { flatLogger, type Logger } from '#src/lib/log.ts';
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

/** Told of every payout status change, once the transaction that writes it has committed. */
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
  // Its fields are plain values: the flat logger's redaction is enough, and far cheaper.
  const lines = flatLogger(log);
  return {
    payout(change) {
      metrics.payoutTransitions.inc({ from: change.from ?? 'none', to: change.to });
      if (change.from === null) return;
      lines.info(
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

// Keyed by the ORM's configuration, which every EntityManager forked from one ORM shares and
// every `Sql` opened on it names as its origin: how the lifecycle, handed only an EntityManager or
// a Sql, finds the observer of its own instance.
const observers = new WeakMap<object, TransitionObserver>();

/** Makes `observer` the one told of the status changes written through this ORM (and its `Sql`). */
export function observeTransitions(orm: MikroORM, observer: TransitionObserver): void {
  observers.set(orm.config, observer);
}

/**
 * Tells the observer of the ORM behind `via` (if one was set) of a status change once the
 * transaction that writes it has committed; a change rolled back is never told.
 */
export function tellTransition(via: EntityManager | Sql, change: PayoutStatusChange): void {
  const observer = observers.get('origin' in via ? via.origin : via.config);
  if (!observer) return;
  if ('origin' in via) via.afterCommit(() => observer.payout(change));
  else afterCommit(via, () => observer.payout(change));
}
