import { MutationCache, QueryCache, QueryClient } from '@tanstack/react-query';
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import type { AppRouter } from '../../router.ts';
import { consoleStore } from './store.ts';

/**
 * The vanilla tRPC client over the service's own /trpc, typed by the router itself. The bearer
 * token is read from the store at each call, so signing out takes effect at once.
 */
export const api = createTRPCClient<AppRouter>({
  links: [
    httpLink({
      url: '/trpc',
      headers: () => {
        const { token } = consoleStore.getSnapshot().context;
        return token ? { authorization: `Bearer ${token}` } : {};
      },
    }),
  ],
});

/** The client with an explicit token: the sign-in form checks a token before keeping it. */
export function clientWithToken(token: string) {
  return createTRPCClient<AppRouter>({
    links: [httpLink({ url: '/trpc', headers: () => ({ authorization: `Bearer ${token}` }) })],
  });
}

/** The service's error code (`app_code`), HTTP status and what was wrong, field by field, of a failed call. */
export function failureOf(error: unknown): {
  status: number | null;
  code: string | null;
  message: string;
  details: { field: string; issue: string }[];
} {
  if (error instanceof TRPCClientError) {
    const data = error.data as
      | { httpStatus?: number; app_code?: string; details?: { field: string; issue: string }[] }
      | undefined;
    return {
      status: data?.httpStatus ?? null,
      code: data?.app_code ?? null,
      message: error.message,
      details: Array.isArray(data?.details) ? data.details : [],
    };
  }
  return {
    status: null,
    code: null,
    message: error instanceof Error ? error.message : String(error),
    details: [],
  };
}

/** A refusal in words for a person: the service's sentence and what it found wrong, without its code. */
export function inWords(f: ReturnType<typeof failureOf>): string {
  const issues = f.details.map((d) => `${d.field.replaceAll('_', ' ')} ${d.issue}`).join('; ');
  return issues && !f.message.includes(issues) ? `${f.message} (${issues})` : f.message;
}

/** A 401 means the token is not (or no longer) valid: revoked, or the operator was. Sign out. */
function signOutOn401(error: unknown): void {
  if (failureOf(error).status === 401 && consoleStore.getSnapshot().context.token !== null) {
    consoleStore.trigger.signedOut({ because: 'Your token is no longer valid (revoked?). Sign in again.' });
  }
}

export const queryClient = new QueryClient({
  queryCache: new QueryCache({ onError: signOutOn401 }),
  mutationCache: new MutationCache({ onError: signOutOn401 }),
  defaultOptions: {
    queries: {
      // A refusal (4xx) will not change by asking again; a lost connection might.
      retry: (count, error) => {
        const status = failureOf(error).status;
        return (status === null || status >= 500) && count < 2;
      },
      staleTime: 5_000,
      refetchOnWindowFocus: true,
    },
  },
});
