import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import { money } from '#src/db/columns.ts';

/**
 * The ledger's tables. Entries are written by `post` (`./ledger.ts`) in one statement per call;
 * their migration (Migration20261128100000_ledger) adds what the entities cannot say: the
 * deferred constraint trigger that refuses an unbalanced ledger transaction at commit, the
 * triggers that refuse UPDATE, DELETE and TRUNCATE, and the trigger that keeps the balances.
 * The account column sorts bytewise (collation "C"), so that an account prefix is an index range.
 * Entries are partitioned by month of `created_at` (Migration20261129050000_partitioned_ledger_audit),
 * so their key is (id, created_at); no month is ever dropped.
 */

/** One signed amount on one account; the entries of one `transaction_id` sum to zero per currency. */
export const LedgerEntry = defineEntity({
  name: 'LedgerEntry',
  tableName: 'ledger_entries',
  indexes: [
    { name: 'ledger_entries_transaction_idx', properties: ['transactionId'] },
    // Entries of an account, or of every account under a prefix, in a period.
    { name: 'ledger_entries_account_idx', properties: ['account', 'createdAt', 'id'] },
    {
      // A payout's statement and its invariants.
      name: 'ledger_entries_payout_idx',
      expression:
        'create index "ledger_entries_payout_idx" on "ledger_entries" ("payout_id", "created_at", "id") where "payout_id" is not null',
    },
    {
      // The merchants' list of movements, newest first.
      name: 'ledger_entries_movements_idx',
      expression:
        'create index "ledger_entries_movements_idx" on "ledger_entries" ("tenant_id", "created_at", "id") where "movement" is not null',
    },
    { name: 'ledger_entries_cause_idx', properties: ['causeId'] },
  ],
  checks: [
    { name: 'ledger_entries_amount_check', expression: 'amount <> 0' },
    {
      name: 'ledger_entries_cause_object_check',
      expression: "cause_object in ('inflow', 'outflow', 'refund', 'payout', 'approval')",
    },
  ],
  triggers: [
    {
      name: 'ledger_entries_balanced',
      timing: 'after',
      events: ['insert'],
      expression:
        'create constraint trigger "ledger_entries_balanced" after insert on "ledger_entries" deferrable initially deferred for each row execute function "ledger_entries_balanced_fn"()',
    },
    {
      name: 'ledger_entries_immutable',
      timing: 'before',
      events: ['update', 'delete'],
      expression:
        'create trigger "ledger_entries_immutable" before update or delete on "ledger_entries" for each row execute function "ledger_entries_immutable_fn"()',
    },
    {
      name: 'ledger_entries_balances',
      timing: 'after',
      events: ['insert'],
      forEach: 'statement',
      expression:
        'create trigger "ledger_entries_balances" after insert on "ledger_entries" referencing new table as added for each statement execute function "ledger_entries_balances_fn"()',
    },
  ],
  properties: {
    id: p.uuid().primary(),
    transactionId: p.uuid(),
    account: p.string().length(300).collation('C'),
    currency: p.string().length(8),
    amount: money(),
    tenantId: p.uuid().nullable(),
    payoutId: p.uuid().nullable(),
    /** The merchant's movement type of the entry, when it is one (`MOVEMENT_TYPES`). */
    movement: p.string().length(32).nullable(),
    causeObject: p.string().length(16),
    causeId: p.uuid(),
    /** The machine's transition: `EVENT (FROM → TO)`. */
    transition: p.string().length(200),
    approvalId: p.uuid().nullable(),
    // Part of the key: the table is partitioned by month of created_at (src/db/partitions.ts).
    createdAt: p.datetime().primary(),
  },
});
export type LedgerEntry = InferEntity<typeof LedgerEntry>;

/**
 * Balances by account and currency, as of the last compaction: the `ledger` job folds the deltas
 * into it (`compactBalances`). A balance is this row plus its pending deltas.
 */
export const LedgerBalance = defineEntity({
  name: 'LedgerBalance',
  tableName: 'ledger_balances',
  properties: {
    account: p.string().length(300).collation('C').primary(),
    currency: p.string().length(8).primary(),
    balance: money(),
    entries: p.bigint('number'),
    updatedAt: p.datetime(),
  },
});
export type LedgerBalance = InferEntity<typeof LedgerBalance>;

/**
 * What each statement of entries adds to the balances, one row per account and currency: written
 * by a trigger without touching any shared row, so concurrent transactions never wait on each
 * other for a balance.
 */
export const LedgerBalanceDelta = defineEntity({
  name: 'LedgerBalanceDelta',
  tableName: 'ledger_balance_deltas',
  properties: {
    id: p.bigint('number').primary().autoincrement(),
    account: p.string().length(300).collation('C'),
    currency: p.string().length(8),
    amount: money(),
    entries: p.integer(),
  },
});
export type LedgerBalanceDelta = InferEntity<typeof LedgerBalanceDelta>;
