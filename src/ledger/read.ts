import { type Sql, statement } from '#src/db/sql.ts';

/**
 * Reads of the ledger, for operators (balances, an account's entries) and merchants (a payout's
 * movements). None of them scans the entries: balances come from `ledger_balances` and its pending
 * deltas, entries through the account and payout indexes.
 */

/** One line of the balances: an account (or an account summing many, see the chart) in one currency. */
export interface BalanceRow {
  account: string;
  currency: string;
  /** Signed decimal string. */
  balance: string;
  entries: number;
}

/** An entry as the reads return it. */
export interface EntryRow {
  id: string;
  transaction_id: string;
  account: string;
  currency: string;
  /** Signed decimal string. */
  amount: string;
  tenant_id: string | null;
  payout_id: string | null;
  movement: string | null;
  cause_object: string;
  cause_id: string;
  transition: string;
  approval_id: string | null;
  created_at: string | Date;
}

const ENTRY_COLUMNS = `id, transaction_id, account, currency, amount::text as amount, tenant_id, payout_id, movement,
  cause_object, cause_id, transition, approval_id, created_at`;

/** The smallest string above every account name that starts with a prefix (names are ASCII, sorted bytewise). */
const AFTER_PREFIX = 'chr(127)';

export const balancesUnder = statement(
  'ledger_balances_under',
  `select account, currency, sum(amount)::text as balance, sum(entries)::bigint as entries
     from (select account, currency, balance as amount, entries from ledger_balances
            where account >= $1 and account < $1 || ${AFTER_PREFIX}
           union all
           select account, currency, amount, entries from ledger_balance_deltas
            where account >= $1 and account < $1 || ${AFTER_PREFIX}) b
    group by account, currency
    order by account, currency`,
);

/**
 * Balances by account and currency of every account whose name starts with `prefix` (all of them
 * for ''), as the balances table keeps them: per-payout and per-virtual-account balances are summed
 * into their parent line (`tenants:<tenant>:payouts`, `collection:bank`).
 */
export async function balances(sql: Sql, prefix = ''): Promise<BalanceRow[]> {
  const rows = await sql.rows<BalanceRow & { entries: string | number }>(balancesUnder, [prefix]);
  return rows.map((r) => ({ ...r, entries: Number(r.entries) }));
}

const accountBalance = statement(
  'ledger_account_balance',
  `select currency, sum(amount)::text as balance, count(*)::bigint as entries
     from ledger_entries where account = $1 group by currency order by currency`,
);

/** The balance of one account from its own entries (a payout's, a virtual account's). */
export async function accountBalances(sql: Sql, account: string): Promise<BalanceRow[]> {
  const rows = await sql.rows<{ currency: string; balance: string; entries: string | number }>(
    accountBalance,
    [account],
  );
  return rows.map((r) => ({ account, currency: r.currency, balance: r.balance, entries: Number(r.entries) }));
}

const entriesUnder = statement(
  'ledger_entries_under',
  `select ${ENTRY_COLUMNS} from ledger_entries
    where account >= $1 and account < $1 || ${AFTER_PREFIX}
      and created_at >= $2 and created_at < $3
      and (created_at, id) > ($4::timestamptz, $5::uuid)
    order by account, created_at, id
    limit $6`,
);

export const entriesOfAccount = statement(
  'ledger_entries_of_account',
  `select ${ENTRY_COLUMNS} from ledger_entries
    where account = $1 and created_at >= $2 and created_at < $3
      and (created_at, id) > ($4::timestamptz, $5::uuid)
    order by created_at, id
    limit $6`,
);

/** Where a page of entries starts: after this entry (of this account, for a prefix). */
export interface EntryPosition {
  account: string;
  created_at: Date;
  id: string;
}

const START = { at: new Date(0), id: '00000000-0000-0000-0000-000000000000' };

/**
 * Entries of one account (`exact`) or of every account under a prefix, created in [from, to),
 * oldest first per account, at most `limit`, after `after` (the last entry of the previous page).
 */
export async function entries(
  sql: Sql,
  args: {
    account: string;
    exact?: boolean;
    from: Date;
    to: Date;
    limit: number;
    after?: EntryPosition | null;
  },
): Promise<EntryRow[]> {
  const after = args.after;
  if (args.exact) {
    return sql.rows<EntryRow>(entriesOfAccount, [
      args.account,
      args.from,
      args.to,
      after?.created_at ?? START.at,
      after?.id ?? START.id,
      args.limit,
    ]);
  }
  // Within a prefix, pages go account by account: a position in another account starts after it.
  if (!after) {
    return sql.rows<EntryRow>(entriesUnder, [
      args.account,
      args.from,
      args.to,
      START.at,
      START.id,
      args.limit,
    ]);
  }
  const rest = await sql.rows<EntryRow>(entriesOfAccount, [
    after.account,
    args.from,
    args.to,
    after.created_at,
    after.id,
    args.limit,
  ]);
  if (rest.length >= args.limit) return rest;
  const next = await sql.rows<EntryRow>(entriesAfterAccount, [
    args.account,
    args.from,
    args.to,
    after.account,
    args.limit - rest.length,
  ]);
  return [...rest, ...next];
}

const entriesAfterAccount = statement(
  'ledger_entries_after_account',
  `select ${ENTRY_COLUMNS} from ledger_entries
    where account >= $1 and account < $1 || ${AFTER_PREFIX} and account > $4
      and created_at >= $2 and created_at < $3
    order by account, created_at, id
    limit $5`,
);

export const entriesOfPayout = statement(
  'ledger_entries_of_payout',
  `select ${ENTRY_COLUMNS} from ledger_entries where payout_id = $1 order by created_at, id`,
);

/** Every entry of a payout's money, oldest first: its movements and the legs between its own places. */
export async function payoutEntries(sql: Sql, payoutId: string): Promise<EntryRow[]> {
  return sql.rows<EntryRow>(entriesOfPayout, [payoutId]);
}

const compact = statement(
  'ledger_compact_balances',
  `with taken as (
     delete from ledger_balance_deltas
      where id in (select id from ledger_balance_deltas order by id limit $1 for update skip locked)
     returning account, currency, amount, entries
   )
   insert into ledger_balances as b (account, currency, balance, entries, updated_at)
   select account, currency, sum(amount), sum(entries), $2 from taken
    group by account, currency
    order by account, currency
   on conflict (account, currency)
   do update set balance = b.balance + excluded.balance, entries = b.entries + excluded.entries,
                 updated_at = excluded.updated_at
   returning 1`,
);

/**
 * Folds pending deltas into the balances, `batch` at a time until none is left; instances may
 * run it side by side (each takes deltas the others do not). Returns how many lines it updated.
 */
export async function compactBalances(sql: Sql, now: Date, batch = 10_000): Promise<number> {
  let lines = 0;
  // Bounded: under a steady stream of writes the next pass takes the rest.
  for (let round = 0; round < 100; round++) {
    const done = await sql.transaction((tx) => tx.rows(compact, [batch, now]));
    lines += done.length;
    if (done.length === 0) break;
  }
  return lines;
}
