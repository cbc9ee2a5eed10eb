import type { EntityManager, EventSubscriber, TransactionEventArgs } from '@mikro-orm/postgresql';

/**
 * Work to do once a transaction has committed (telling observers of what it changed), on the
 * EntityManager path: buffered on the transaction it was asked for in, run when that transaction
 * commits, dropped when it rolls back. A savepoint (a nested `em.transactional`) hands what it
 * buffered to its parent when it is released, and drops it when it is rolled back to, so only
 * the outermost commit runs anything. `Sql.afterCommit` (`./sql.ts`) is the same for plain SQL.
 */

type Transaction = object;

/** Callbacks waiting for the commit of each open transaction or savepoint. */
const pending = new WeakMap<Transaction, (() => void)[]>();
/** The transaction (or savepoint) each open savepoint was made in. */
const parents = new WeakMap<Transaction, Transaction>();
/**
 * The transaction a savepoint is being opened in, between its start events. Every
 * `em.transactional` runs on a fork of its own, which opens one transaction at a time.
 */
const opening = new WeakMap<EntityManager, Transaction>();

/**
 * Calls `callback` once the transaction `em` is in has committed; never if it rolls back. Outside
 * a transaction, at once.
 */
export function afterCommit(em: EntityManager, callback: () => void): void {
  const tx = em.getTransactionContext<Transaction>();
  if (!tx) {
    tellNow(callback);
    return;
  }
  const list = pending.get(tx);
  if (list) list.push(callback);
  else pending.set(tx, [callback]);
}

/**
 * Calls a callback of what has committed. Its failure is reported as a process warning, never
 * thrown: the caller's write has committed, and must not be answered as if it had failed.
 */
export function tellNow(callback: () => void): void {
  try {
    callback();
  } catch (err) {
    process.emitWarning(err as Error);
  }
}

/** The ORM's side of {@link afterCommit}: registered on every ORM the service opens (`./orm.ts`). */
export const afterCommitSubscriber: EventSubscriber = {
  beforeTransactionStart({ em, transaction }: TransactionEventArgs) {
    // Given for a savepoint only: the transaction it is opened in.
    if (transaction) opening.set(em as EntityManager, transaction);
  },
  afterTransactionStart({ em, transaction }: TransactionEventArgs) {
    const parent = opening.get(em as EntityManager);
    opening.delete(em as EntityManager);
    if (parent && transaction) parents.set(transaction, parent);
  },
  afterTransactionCommit({ transaction }: TransactionEventArgs) {
    if (!transaction) return;
    const list = pending.get(transaction);
    pending.delete(transaction);
    if (!list) return;
    const parent = parents.get(transaction);
    if (!parent) {
      for (const callback of list) tellNow(callback);
      return;
    }
    const into = pending.get(parent);
    if (into) into.push(...list);
    else pending.set(parent, list);
  },
  afterTransactionRollback({ transaction }: TransactionEventArgs) {
    if (transaction) pending.delete(transaction);
  },
};
