/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
import { createStore } from '@xstate/store';
import { useSyncExternalStore } from 'react';
import type { Role } from '../../operators/roles.ts';

/**
 * The console's client state, in one @xstate/store: who is signed in, where the operator is, the
 * filters of the lists, the key just issued and the actions under way. Server data is not here: it
 * is TanStack Query's cache, read through the tRPC client.
 *
 * The token lives in this store and in sessionStorage (so that a reload keeps the session of this
 * tab, and closing the tab ends it); never in a URL, never in a log line.
 */

export interface SignedInOperator {
  id: string;
  name: string;
  role: Role;
}

export interface AuditFilter {
  operator_id: string;
  target_id: string;
  /** datetime-local values as typed; turned into ISO times when the list is read. */
  from: string;
  to: string;
}

/** An action an operator started and its outcome, keyed by what it acts on (`fail:<payout id>`). */
export interface PendingAction {
  label: string;
  state: 'running' | 'done' | 'failed';
  message: string | null;
}

/** A new operator's token, and the role it waits for when raising it needs another admin. */
export interface IssuedToken {
  id: string;
  name: string;
  role: string;
  token: string;
  raisedTo: string | null;
}

const TOKEN_KEY = 'payout-console.token';

function storedToken(): string | null {
  try {
    return globalThis.sessionStorage?.getItem(TOKEN_KEY) ?? null;
  } catch {
    return null;
  }
}

function keepToken(token: string | null): void {
  try {
    if (token === null) globalThis.sessionStorage?.removeItem(TOKEN_KEY);
    else globalThis.sessionStorage?.setItem(TOKEN_KEY, token);
  } catch {
    // Storage refused (private mode): the session lasts as long as the page.
  }
}

export const consoleStore = createStore({
  context: {
    token: storedToken(),
    operator: null as SignedInOperator | null,
    /** Why the last session ended, shown on the sign-in form. */
    signedOutBecause: null as string | null,
    path: globalThis.location?.pathname ?? '/console',
    auditFilter: { operator_id: '', target_id: '', from: '', to: '' } as AuditFilter,
    approvalsTab: 'pending' as 'pending' | 'mine' | 'decided',
    /** A key just issued: shown once, then forgotten. */
    issuedKey: null as { tenant_id: string; id: string; api_key: string } | null,
    /** A new operator's token: shown once, then forgotten. */
    issuedToken: null as IssuedToken | null,
    pending: {} as Record<string, PendingAction>,
  },
  on: {
    signedIn: (context, event: { token: string; operator: SignedInOperator }, enq) => {
      enq.effect(() => keepToken(event.token));
      return { ...context, token: event.token, operator: event.operator, signedOutBecause: null };
    },
    /** The operator behind a token kept from before a reload. */
    identified: (context, event: { operator: SignedInOperator }) => ({
      ...context,
      operator: event.operator,
    }),
    signedOut: (context, event: { because: string | null }, enq) => {
      enq.effect(() => keepToken(null));
      return {
        ...context,
        token: null,
        operator: null,
        signedOutBecause: event.because,
        issuedKey: null,
        issuedToken: null,
        pending: {},
      };
    },
    /**
     * Another page: the outcomes of finished actions ("Approved", a refusal) and a key shown
     * once belong to the page they were on, and go (actions still running keep theirs).
     */
    navigated: (context, event: { path: string }) =>
      event.path === context.path
        ? context
        : {
            ...context,
            path: event.path,
            pending: running(context.pending),
            issuedKey: null,
            issuedToken: null,
          },
    auditFiltered: (context, event: { filter: Partial<AuditFilter> }) => ({
      ...context,
      auditFilter: { ...context.auditFilter, ...event.filter },
    }),
    approvalsTabChosen: (context, event: { tab: 'pending' | 'mine' | 'decided' }) => ({
      ...context,
      approvalsTab: event.tab,
    }),
    keyIssued: (context, event: { key: { tenant_id: string; id: string; api_key: string } }) => ({
      ...context,
      issuedKey: event.key,
    }),
    keyDismissed: (context) => ({ ...context, issuedKey: null }),
    tokenIssued: (context, event: { token: IssuedToken }) => ({ ...context, issuedToken: event.token }),
    tokenDismissed: (context) => ({ ...context, issuedToken: null }),
    /** A key revoked: if it is the one shown once, it is no longer worth copying. */
    keyRevoked: (context, event: { id: string }) =>
      context.issuedKey?.id === event.id ? { ...context, issuedKey: null } : context,
    /** A new action: the outcomes of earlier, finished ones are stale and go. */
    actionStarted: (context, event: { key: string; label: string }) => ({
      ...context,
      pending: {
        ...running(context.pending),
        [event.key]: { label: event.label, state: 'running', message: null },
      },
    }),
    actionEnded: (context, event: { key: string; ok: boolean; message: string | null }) => {
      const before = context.pending[event.key];
      if (!before) return context;
      return {
        ...context,
        pending: {
          ...context.pending,
          [event.key]: { ...before, state: event.ok ? 'done' : 'failed', message: event.message },
        },
      };
    },
  },
});

/** The actions still running, without the outcomes of finished ones. */
function running(pending: Record<string, PendingAction>): Record<string, PendingAction> {
  return Object.fromEntries(Object.entries(pending).filter(([, p]) => p.state === 'running'));
}

export type ConsoleContext = ReturnType<typeof consoleStore.getSnapshot>['context'];

/** A slice of the store, re-rendering its component when (and only when) the slice changes. */
export function useConsole<T>(select: (context: ConsoleContext) => T): T {
  return useSyncExternalStore(
    (onChange) => {
      const subscription = consoleStore.subscribe(onChange);
      return () => subscription.unsubscribe();
    },
    () => select(consoleStore.getSnapshot().context),
  );
}

/** Moves to another page of the console without reloading it. */
export function navigate(path: string): void {
  if (globalThis.location.pathname !== path) globalThis.history.pushState(null, '', path);
  consoleStore.trigger.navigated({ path });
}
