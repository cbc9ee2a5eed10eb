import { type QueryKey, useInfiniteQuery, useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useState } from 'react';
import { hasRole, type Role } from '../../operators/roles.ts';
import { failureOf, inWords } from './api.ts';
import { consoleStore, navigate, useConsole } from './store.ts';

/** A page of any list of the API: the same cursors as the merchant API and the CLI. */
export interface Page<T> {
  data: T[];
  meta: { next_cursor?: string | null; has_more: boolean };
}

/** A cursor-paginated list read page by page ("Show more" asks for the next cursor). */
export function usePages<T>(key: QueryKey, fetchPage: (cursor: string | undefined) => Promise<Page<T>>) {
  const query = useInfiniteQuery({
    queryKey: key,
    queryFn: ({ pageParam }) => fetchPage(pageParam),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => (last.meta.has_more ? (last.meta.next_cursor ?? undefined) : undefined),
  });
  const rows = query.data?.pages.flatMap((p) => p.data) ?? [];
  return { ...query, rows };
}

/** Whether the signed-in operator's role reaches `wanted`: what decides which buttons appear. */
export function useCan(wanted: Role): boolean {
  const role = useConsole((c) => c.operator?.role ?? null);
  return role !== null && hasRole(role, wanted);
}

/** The signed-in operator's id (to tell their own proposals apart). */
export function useOperatorId(): string | null {
  return useConsole((c) => c.operator?.id ?? null);
}

/**
 * An operator's action: recorded in the store while it runs and with its outcome (what the
 * service answered, by its error code), and every list refreshed once it succeeds.
 */
export function useAction<I, O>(key: string, label: string, run: (input: I) => Promise<O>) {
  const queryClient = useQueryClient();
  const pending = useConsole((c) => c.pending[key] ?? null);
  const mutation = useMutation({
    mutationFn: run,
    onMutate: () => consoleStore.trigger.actionStarted({ key, label }),
    onSuccess: async () => {
      consoleStore.trigger.actionEnded({ key, ok: true, message: null });
      await queryClient.invalidateQueries();
    },
    onError: async (error) => {
      consoleStore.trigger.actionEnded({ key, ok: false, message: inWords(failureOf(error)) });
      // A refusal can change what the lists show (an approval that failed leaves its proposal FAILED).
      await queryClient.invalidateQueries();
    },
  });
  return { ...mutation, pending };
}

export function Outcome({
  pending,
  done,
}: {
  pending: { state: string; message: string | null } | null;
  done?: string;
}) {
  if (!pending) return null;
  if (pending.state === 'running') return <span className="outcome running">Working…</span>;
  if (pending.state === 'failed')
    return (
      <span className="outcome failed" role="alert">
        {pending.message}
      </span>
    );
  return <span className="outcome done">{done ?? 'Done'}</span>;
}

/** A button that asks for a note first (a note is required on every money move). */
export function NoteAction(props: {
  actionKey: string;
  label: string;
  done?: string;
  placeholder?: string;
  /** What the action does with the note (and, with `field`, `runWith` with both). */
  run?: (note: string) => Promise<unknown>;
  testId?: string;
  /** The note may be left empty (an approval's); otherwise it is required. */
  optional?: boolean;
  /** A second value the action needs besides the note (the payout to attribute money to), required. */
  field?: { label: string; placeholder: string; testId?: string };
  runWith?: (note: string, value: string) => Promise<unknown>;
}) {
  const [open, setOpen] = useState(false);
  const [note, setNote] = useState('');
  const [value, setValue] = useState('');
  const action = useAction(props.actionKey, props.label, (n: string) =>
    props.runWith ? props.runWith(n, value.trim()) : (props.run?.(n) ?? Promise.resolve()),
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (note.trim() === '' && !props.optional) return;
    if (props.field && value.trim() === '') return;
    action.mutate(note.trim());
  };
  if (action.pending?.state === 'done') return <Outcome pending={action.pending} done={props.done} />;
  if (!open)
    return (
      <button type="button" className="action" data-testid={props.testId} onClick={() => setOpen(true)}>
        {props.label}
      </button>
    );
  return (
    <form className="note-action" onSubmit={submit}>
      {props.field ? (
        <input
          aria-label={props.field.label}
          placeholder={props.field.placeholder}
          data-testid={props.field.testId}
          value={value}
          onChange={(e) => setValue(e.target.value)}
          required
        />
      ) : null}
      <input
        aria-label={`Note for: ${props.label}`}
        placeholder={props.placeholder ?? 'Note (required): why'}
        value={note}
        onChange={(e) => setNote(e.target.value)}
        required={!props.optional}
      />
      <button type="submit" className="action primary" disabled={action.isPending}>
        {props.label}
      </button>
      <button type="button" className="link" onClick={() => setOpen(false)}>
        Cancel
      </button>
      <Outcome pending={action.pending} />
    </form>
  );
}

/**
 * A one-click action (no note), such as a redelivery or a tenant's approval. With `confirm`, the
 * click first asks (irreversible actions: revoking a key); the action runs on the second button.
 */
export function ClickAction(props: {
  actionKey: string;
  label: string;
  done?: string;
  run: () => Promise<unknown>;
  confirm?: { question: string; yes: string };
}) {
  const [asking, setAsking] = useState(false);
  const action = useAction(props.actionKey, props.label, () => props.run());
  if (action.pending?.state === 'done') return <Outcome pending={action.pending} done={props.done} />;
  if (asking && props.confirm)
    return (
      <span className="click-action confirm">
        <span className="question">{props.confirm.question}</span>{' '}
        <button
          type="button"
          className="action danger"
          disabled={action.isPending}
          onClick={() => {
            setAsking(false);
            action.mutate(undefined);
          }}
        >
          {props.confirm.yes}
        </button>{' '}
        <button type="button" className="link" onClick={() => setAsking(false)}>
          Cancel
        </button>
      </span>
    );
  return (
    <span className="click-action">
      <button
        type="button"
        className="action"
        disabled={action.isPending}
        onClick={() => (props.confirm ? setAsking(true) : action.mutate(undefined))}
      >
        {props.label}
      </button>
      <Outcome pending={action.pending} />
    </span>
  );
}

/** A link inside the console: navigates without reloading (and keeps the token out of any URL). */
export function Link({ to, children, className }: { to: string; children: ReactNode; className?: string }) {
  return (
    <a
      href={to}
      className={className}
      onClick={(event) => {
        if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
        event.preventDefault();
        navigate(to);
      }}
    >
      {children}
    </a>
  );
}

/** How long ago, for a queue's age: "3 d 4 h", "2 h 5 min", "40 s". */
export function age(since: string | null | undefined, now = Date.now()): string {
  if (!since) return '—';
  const seconds = Math.max(0, Math.floor((now - Date.parse(since)) / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

/** A time as operators read it: UTC, to the second, saying so. */
export function Time({ at }: { at: string | null | undefined }) {
  if (!at) return <span className="muted">—</span>;
  return (
    <time dateTime={at} title="Coordinated Universal Time">
      {at.replace('T', ' ').replace(/(\.\d+)?Z$/, '')} UTC
    </time>
  );
}

/** The browser's time zone, named for the fields that take a local time (datetime-local). */
export function localZone(): string {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'local time';
  const minutes = -new Date().getTimezoneOffset();
  const sign = minutes < 0 ? '-' : '+';
  const hh = String(Math.floor(Math.abs(minutes) / 60)).padStart(2, '0');
  const mm = String(Math.abs(minutes) % 60).padStart(2, '0');
  return `${zone}, UTC${sign}${hh}:${mm}`;
}

/** An amount as the API gives it (a decimal string or an exact JSON number) with its currency. */
export function Money({ amount, currency }: { amount: unknown; currency?: string | null }) {
  if (amount === null || amount === undefined) return <span className="muted">—</span>;
  return (
    <span className="money">
      {String(amount)} {currency ?? ''}
    </span>
  );
}

/**
 * An id shortened for a table, never broken across lines; whole in its title, and whole when
 * copied (selecting it and copying gives the full id). Ids are UUID v7, whose first characters are
 * their creation time (alike for everything made the same minute): the end tells them apart.
 */
export function Id({ id }: { id: string | null | undefined }) {
  if (!id) return <span className="muted">—</span>;
  return (
    <code
      className="id"
      title={id}
      data-id={id}
      onCopy={(event) => {
        event.clipboardData.setData('text/plain', id);
        event.preventDefault();
      }}
    >
      …{id.slice(-8)}
    </code>
  );
}

/**
 * Text that may hold the light markdown of the machine texts and notices: `code`, **bold** and
 * [links](url) are rendered, never shown raw; everything else is plain text (React escapes it).
 * Links that are not absolute paths or http(s) URLs keep their text only.
 */
export function Prose({ text }: { text: string | null | undefined }) {
  if (!text) return null;
  const parts: ReactNode[] = [];
  const pattern = /`([^`]+)`|\*\*([^*]+)\*\*|\[([^\]]+)\]\(([^)\s]+)\)/g;
  let last = 0;
  for (const m of text.matchAll(pattern)) {
    if (m.index > last) parts.push(text.slice(last, m.index));
    const key = parts.length;
    if (m[1] !== undefined) parts.push(<code key={key}>{m[1]}</code>);
    else if (m[2] !== undefined) parts.push(<strong key={key}>{m[2]}</strong>);
    else {
      const label = m[3]!.replace(/^`(.*)`$/, '$1');
      const href = m[4]!;
      parts.push(
        /^(https?:\/\/|\/)/.test(href) ? (
          <a key={key} href={href}>
            {label}
          </a>
        ) : (
          <span key={key}>{label}</span>
        ),
      );
    }
    last = m.index + m[0].length;
  }
  if (last < text.length) parts.push(text.slice(last));
  return <>{parts}</>;
}

export function MoreButton(props: {
  hasNextPage: boolean;
  isFetchingNextPage: boolean;
  fetchNextPage: () => unknown;
}) {
  if (!props.hasNextPage) return null;
  return (
    <button
      type="button"
      className="more"
      disabled={props.isFetchingNextPage}
      onClick={() => props.fetchNextPage()}
    >
      {props.isFetchingNextPage ? 'Loading…' : 'Show more'}
    </button>
  );
}

export function Failure({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p className="error" role="alert">
      {inWords(failureOf(error))}
    </p>
  );
}
