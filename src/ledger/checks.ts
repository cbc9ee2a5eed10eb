import { type Sql, statement } from '#src/db/sql.ts';
import { newId } from '#src/lib/ids.ts';
import type { Logger } from '#src/lib/log.ts';

/**
 * The ledger's invariants, checked against the objects whose money it records: the `ledger` job
 * checks them on every pass, `admin.ledger.check` (CLI `ledger check`) on demand. A check reads
 * in one statement, so it sees the ledger and the objects as one committed moment. What it finds
 * is kept in `ledger_violations` until a later check no longer finds it: the "Out of balance"
 * exception queue (`OUT_OF_BALANCE`), a metric (`payout_ledger_out_of_balance`) and an error log
 * line for each new one. A check is added by adding it to {@link LEDGER_CHECKS}.
 */

/** One thing a check found out of balance. */
export interface LedgerViolation {
  check: string;
  /** What is out of balance: a payout's id, a tenant and currency, an account. */
  subject: string;
  tenantId: string | null;
  detail: Record<string, unknown>;
}

/** Which objects a check looks at: those changed since `since` (everything when null), and `subjects`. */
export interface CheckScope {
  since: Date | null;
  /** Subjects found out of balance before, looked at again whatever their age. */
  subjects: readonly string[];
}

export interface LedgerCheck {
  name: string;
  /** What must hold, in plain words. */
  description: string;
  find(sql: Sql, scope: CheckScope): Promise<LedgerViolation[]>;
}

/**
 * What each payout holds according to its state, against what its ledger entries say, per
 * currency: in all (its movements) and in transit (at the processor, or a refund on its way).
 * A payout holds nothing once it succeeded or expired (a successful one with a refund, of its
 * overpayment or after the processor returned it, holds what that refund has yet to return);
 * a failed one holds what its refund has yet to return (nothing once the refund arrived; the
 * refund amount while it is on its way);
 * before that it holds what it received, converted and with the processor while an attempt is.
 */
const payoutMoney = statement(
  'ledger_check_payout_money',
  `with p as (
     select p.id, p.tenant_id, p.status, p.settlement_currency, p.destination_currency,
            p.received_amount, p.settlement_amount - p.total_fee_amount as converted, p.destination_amount,
            p.status = 'PROCESSING' and (p.snapshot->'value'->>'PROCESSING') = 'inFlight' as in_flight,
            r.status as refund_status, r.refund_amount, r.received_amount as refund_received
       from payouts p left join refunds r on r.payout_id = p.id
      where $1::timestamptz is null or p.updated_at >= $1 or p.id = any($2::uuid[])
   ),
   expected as (
     select id, currency, sum(held) as held, sum(transit) as transit from (
       select id, settlement_currency as currency,
              case when status in ('CREATED', 'EXPIRED') then 0
                   -- A successful payout holds nothing, unless it has a refund: of its overpayment
                   -- (an operator's approved return), or of all it received when the processor
                   -- returned it and an approved reconciliation resolution refunds it. Then it holds
                   -- what a failed one would, of what its refund returns.
                   when status = 'SUCCESSFUL' and refund_status is null then 0
                   when status in ('FAILED', 'SUCCESSFUL') then
                     case refund_status when 'SUCCESSFUL' then 0 when 'PROCESSING' then refund_amount
                                        else coalesce(refund_received, received_amount) end
                   when in_flight then received_amount - converted
                   else received_amount end as held,
              case when status in ('FAILED', 'SUCCESSFUL') and refund_status = 'PROCESSING' then refund_amount
                   else 0 end as transit
         from p
       union all
       select id, destination_currency, case when in_flight then destination_amount else 0 end,
              case when in_flight then destination_amount else 0 end
         from p) e
      group by id, currency
   ),
   actual as (
     select e.payout_id as id, e.currency,
            coalesce(sum(e.amount) filter (where e.movement is not null), 0) as held,
            coalesce(sum(e.amount) filter (where e.account >= 'transit:' and e.account < 'transit;'), 0) as transit
       from ledger_entries e
      where e.payout_id in (select id from p)
      group by e.payout_id, e.currency
   )
   select p.id, p.tenant_id, p.status, coalesce(x.currency, a.currency) as currency,
          coalesce(x.held, 0)::text as expected_held, coalesce(a.held, 0)::text as ledger_held,
          coalesce(x.transit, 0)::text as expected_transit, coalesce(a.transit, 0)::text as ledger_transit
     from expected x full join actual a on a.id = x.id and a.currency = x.currency
     join p on p.id = coalesce(x.id, a.id)
    where coalesce(x.held, 0) <> coalesce(a.held, 0) or coalesce(x.transit, 0) <> coalesce(a.transit, 0)
    order by p.id, 4`,
  { replan: true },
);

/**
 * Suspense per tenant and currency against the money no payout has: confirmed inflows matching has
 * not judged yet, UNMATCHED ones, and HELD ones attributed to no payout.
 */
const suspense = statement(
  'ledger_check_suspense',
  `with ledger as (
     select substring(account from 9 for 36) as tenant_id, currency, sum(amount) as amount
       from (select account, currency, balance as amount from ledger_balances
              where account >= 'tenants:' and account < 'tenants;'
             union all
             select account, currency, amount from ledger_balance_deltas
              where account >= 'tenants:' and account < 'tenants;') b
      where account like 'tenants:%:suspense'
      group by 1, 2
   ),
   money as (
     select tenant_id::text as tenant_id, currency, sum(amount) as amount from inflows
      where state in ('CONFIRMED', 'UNMATCHED') or (state = 'HELD' and payout_id is null)
      group by 1, 2
   )
   select coalesce(l.tenant_id, m.tenant_id) as tenant_id, coalesce(l.currency, m.currency) as currency,
          coalesce(m.amount, 0)::text as inflows, coalesce(l.amount, 0)::text as suspense
     from ledger l full join money m on m.tenant_id = l.tenant_id and m.currency = l.currency
    where coalesce(l.amount, 0) <> coalesce(m.amount, 0)
    order by 1, 2`,
);

/**
 * Collection accounts whose ledger balance differed from what their rail shows, as the last
 * reconciliation run of each rail read both (`src/reconciliation/`): everything the bank's
 * statement or the chain ever showed arriving on the account, against the ledger's balance.
 */
const collectionsOffRail = statement(
  'ledger_check_collections_off_rail',
  `with latest as (
     select distinct on (rail) id, rail, day from recon_runs
      where state = 'DONE' and rail in ('BANK_TRANSFER', 'CRYPTO')
      order by rail, finished_at desc
   )
   select a.account, a.currency, a.rail_balance::text as rail_balance,
          a.ledger_balance::text as ledger_balance, r.id as run_id, r.day
     from recon_accounts a join latest r on r.id = a.run_id
    where a.rail_balance is not null and a.rail_balance <> a.ledger_balance
    order by a.account, a.currency`,
);

export const LEDGER_CHECKS: readonly LedgerCheck[] = [
  {
    name: 'PAYOUT_MONEY',
    description:
      "A payout's money in the ledger is what its state says it holds: nothing once it succeeded or expired, nothing left in transit once it is final, what its refund has yet to return once it failed.",
    async find(sql, scope) {
      const rows = await sql.rows<{
        id: string;
        tenant_id: string;
        status: string;
        currency: string;
        expected_held: string;
        ledger_held: string;
        expected_transit: string;
        ledger_transit: string;
      }>(payoutMoney, [scope.since, scope.subjects]);
      // One violation per payout, naming each currency it is off in: a payout in flight whose
      // money the ledger lacks is off in its settlement and its destination currency at once.
      const byPayout = new Map<string, LedgerViolation & { detail: { currencies: unknown[] } }>();
      for (const r of rows) {
        const violation = byPayout.get(r.id) ?? {
          check: 'PAYOUT_MONEY',
          subject: r.id,
          tenantId: r.tenant_id,
          detail: { status: r.status, currencies: [] },
        };
        violation.detail.currencies.push({
          currency: r.currency,
          expected_held: r.expected_held,
          ledger_held: r.ledger_held,
          expected_in_transit: r.expected_transit,
          ledger_in_transit: r.ledger_transit,
        });
        byPayout.set(r.id, violation);
      }
      return [...byPayout.values()];
    },
  },
  {
    name: 'SUSPENSE',
    description:
      "Each tenant's suspense equals, unit for unit, its confirmed inflows not yet matched, its UNMATCHED inflows and its HELD inflows attributed to no payout.",
    async find(sql) {
      const rows = await sql.rows<{ tenant_id: string; currency: string; inflows: string; suspense: string }>(
        suspense,
      );
      return rows.map((r) => ({
        check: 'SUSPENSE',
        subject: `${r.tenant_id}:${r.currency}`,
        tenantId: r.tenant_id,
        detail: { currency: r.currency, inflows: r.inflows, suspense: r.suspense },
      }));
    },
  },
  {
    name: 'COLLECTION_MATCHES_RAIL',
    description:
      "Each collection account's balance equals what its rail shows (all the bank's statement or the chain ever showed arriving on it), as the last reconciliation run of its rail found them.",
    async find(sql) {
      const rows = await sql.rows<{
        account: string;
        currency: string;
        rail_balance: string;
        ledger_balance: string;
        run_id: string;
        day: string;
      }>(collectionsOffRail);
      return rows.map((r) => ({
        check: 'COLLECTION_MATCHES_RAIL',
        subject: `${r.account}:${r.currency}`,
        tenantId: null,
        detail: {
          currency: r.currency,
          rail_shows: r.rail_balance,
          ledger_shows: r.ledger_balance,
          reconciliation_run: r.run_id,
          day: r.day,
        },
      }));
    },
  },
];

const openSubjects = statement(
  'ledger_open_violations',
  `select "check", subject from ledger_violations where resolved_at is null`,
);

const upsertViolations = statement(
  'ledger_upsert_violations',
  `insert into ledger_violations (id, "check", subject, tenant_id, detail, first_seen_at, last_seen_at, resolved_at)
   select v.id, v."check", v.subject, v.tenant_id, v.detail::jsonb, $7, $7, null
     from unnest($1::uuid[], $2::text[], $3::text[], $4::uuid[], $5::text[]) as v(id, "check", subject, tenant_id, detail)
    where v."check" = any($6::text[])
   on conflict ("check", subject) where resolved_at is null
   do update set detail = excluded.detail, last_seen_at = excluded.last_seen_at
   returning id, "check", subject, xmax = 0 as new`,
);

const resolveViolations = statement(
  'ledger_resolve_violations',
  `update ledger_violations set resolved_at = $3
    where resolved_at is null and "check" = any($1::text[]) and ("check" || ' ' || subject) <> all($2::text[])
   returning 1`,
);

/** What one check of the ledger found. */
export interface CheckRun {
  checked: string[];
  violations: LedgerViolation[];
  /** Violations not open before this run. */
  found: number;
  /** Open violations this run no longer found. */
  resolved: number;
}

/**
 * Runs the checks over `since` (everything when null) plus every subject still open, records what
 * they find (new ones logged at error level) and resolves what they no longer find, in one
 * transaction. Two instances never record at once: the second waits for the first's lock.
 */
export async function checkLedger(
  sql: Sql,
  args: { since: Date | null; now: Date; log: Logger; checks?: readonly LedgerCheck[] },
): Promise<CheckRun> {
  const checks = args.checks ?? LEDGER_CHECKS;
  return sql.transaction(async (tx) => {
    await tx.rows(lockChecks);
    const open = await tx.rows<{ check: string; subject: string }>(openSubjects);
    const violations: LedgerViolation[] = [];
    for (const check of checks) {
      const subjects = open.filter((o) => o.check === check.name).map((o) => o.subject);
      violations.push(...(await check.find(tx, { since: args.since, subjects })));
    }
    const names = checks.map((c) => c.name);
    const recorded = await tx.rows<{ id: string; check: string; subject: string; new: boolean }>(
      upsertViolations,
      [
        violations.map(() => newId()),
        violations.map((v) => v.check),
        violations.map((v) => v.subject),
        violations.map((v) => v.tenantId),
        violations.map((v) => JSON.stringify(v.detail)),
        names,
        args.now,
      ],
    );
    const fresh = new Set(recorded.filter((r) => r.new).map((r) => `${r.check} ${r.subject}`));
    for (const v of violations) {
      if (fresh.has(`${v.check} ${v.subject}`)) {
        args.log.error(
          { check: v.check, subject: v.subject, tenant: v.tenantId, ...v.detail },
          'ledger out of balance',
        );
      }
    }
    // Every open subject was looked at again, so what is no longer found is resolved.
    const resolved = await tx.rows(resolveViolations, [
      names,
      violations.map((v) => `${v.check} ${v.subject}`),
      args.now,
    ]);
    return { checked: names, violations, found: fresh.size, resolved: resolved.length };
  });
}

// One checker at a time across instances: a transaction-scoped advisory lock.
const lockChecks = statement('ledger_lock_checks', `select pg_advisory_xact_lock(hashtext('ledger_checks'))`);

const openCounts = statement(
  'ledger_open_violation_counts',
  `select "check", count(*)::int as n from ledger_violations where resolved_at is null group by "check"`,
);

/** Open violations per check, for the metric. */
export async function openViolationCounts(sql: Sql): Promise<Map<string, number>> {
  const rows = await sql.rows<{ check: string; n: number }>(openCounts);
  return new Map(rows.map((r) => [r.check, r.n]));
}
