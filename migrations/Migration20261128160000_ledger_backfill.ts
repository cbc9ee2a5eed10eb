import { Migration } from '@mikro-orm/migrations';

/**
 * Backfills the ledger (src/ledger, docs/ledger.md) for the inflows, outflows, refunds and payouts
 * that existed before it, so that a deployment upgrading from a release without the ledger has a
 * complete ledger from its first start: every object gets the entries its machine would have
 * posted on its way to the state it is in, and the `ledger` job's invariants hold at once.
 *
 * What each state implies (the flows of src/settlement/money.ts, src/dispatch/money.ts,
 * src/payouts/money.ts and src/refunds/money.ts, with the same accounts and amounts):
 * - an inflow that counted (any state but PENDING_CONFIRMATION): RECEIVED; MATCHED, HELD against a
 *   payout or FOR_REFUND: ATTRIBUTED to its payout too; RETURNED: RETURNED too;
 * - an outflow PROCESSING: SENT (converted at its payout's locked rate); SUCCESSFUL: SENT and PAID;
 *   FAILED: nothing (refused, or sent and come back: the same money, net);
 * - a payout SUCCESSFUL: SETTLED (platform and network fees, any overpayment set aside);
 * - a refund PROCESSING: SENT (its fee kept); SUCCESSFUL: SENT and DELIVERED; PENDING or FAILED:
 *   nothing (never sent, or bounced back: net nothing).
 * Each flow is one balanced ledger transaction, dated when the object reached that point as far as
 * its row tells (recorded, matched, dispatched, settled; else its last update), whose entries name
 * the object as their cause and `BACKFILLED (→ <state>)` as their transition. No new cause object
 * is needed, so the cause check constraint is unchanged, and the merchant's money movements name
 * the same sources as live ones.
 *
 * Idempotent with respect to what is already posted: an object with no entries gets its flows; an
 * object with some (a deployment that ran the ledger without this backfill: an outflow sent before
 * it and paid after) gets one transaction with only what is missing, its state's entries minus
 * those already posted per account, currency and movement, and nothing when they agree. So no
 * object is ever posted twice, and running this again would write nothing.
 *
 * Written in SQL, set-based, as one INSERT into ledger_entries whose balance is checked once, by
 * one aggregate over what it wrote, instead of per entry (see BACKFILL); its statement trigger adds
 * the balance deltas. On PostgreSQL and the embedded PGlite alike. It restates
 * the flows rather than importing them so that the migration stays the history of what they were
 * when it was written; test/ledger/backfill.test.ts checks it against the TypeScript flows. The
 * deltas are then folded into `ledger_balances` as the `ledger` job's compaction does.
 */
export class Migration20261128160000_ledger_backfill extends Migration {
  override name = 'Migration20261128160000_ledger_backfill';

  override up(): void | Promise<void> {
    this.addSql(BACKFILL);
    this.addSql(FOLD_BALANCES);
  }

  override down(): void | Promise<void> {
    // Entries are immutable (a trigger refuses DELETE): the backfill is part of the ledger's history.
  }
}

/** A payout's account, `tenants:<tenant>:payouts:<payout>`. */
const payoutAccount = (tenant: string, payout: string) =>
  `'tenants:' || ${tenant} || ':payouts:' || ${payout}`;

/**
 * A time-ordered id (UUID v7 layout) at `at`, with `ord` after the milliseconds: the flow's rank in
 * an object's life, then its entry, so that entries of the same moment read in the order the
 * machines would have written them (flow after flow, leg after leg), as live ids (src/lib/ids.ts) do.
 */
const v7 = (at: string, ord: string) =>
  `(lpad(to_hex(floor(extract(epoch from ${at}) * 1000)::bigint), 12, '0') || '7' || lpad(to_hex(${ord}), 3, '0')
    || '8' || lpad(to_hex((random() * 1152921504606846975)::bigint), 15, '0'))::uuid`;

/**
 * The backfill itself, one DO block: exported for the test that runs it again and sees it write
 * nothing.
 *
 * Set-based for millions of payouts: one INSERT writes every entry, and what the triggers on the
 * entries do per entry or per statement is done once for the whole insert, inside this transaction:
 * - balance: the deferred constraint trigger `ledger_entries_balanced` would run one query per
 *   entry at commit and hold one queued event per entry in memory until then. It is disabled, the
 *   insert returns what it wrote (each entry in a new ledger transaction), and one aggregate by
 *   transaction and currency must find nothing, else the migration fails and rolls back;
 * - balance deltas: what `ledger_entries_balances` adds, summed per account before the parent
 *   account is worked out;
 * - secondary indexes: dropped, and built again from their own definitions after the insert
 *   (a sorted build instead of one insertion per entry in each).
 * Disabling a trigger is transactional and takes a lock that keeps every other writer of the
 * entries waiting until commit, so no other session ever writes without the checks; both triggers
 * are enabled again before commit, and the immutability triggers are never touched. For this
 * transaction only, a larger work_mem keeps its sorts and hashes in memory, and JIT is off (it
 * compiled 180 functions for one statement that runs once).
 */
export const BACKFILL = `
do $backfill$
declare
  salt constant text := gen_random_uuid()::text;
  unbalanced bigint;
  indexes text[];
  ix text;
begin
  perform set_config('work_mem', '256MB', true);
  perform set_config('maintenance_work_mem', '512MB', true);
  perform set_config('jit', 'off', true);
  alter table ledger_entries disable trigger ledger_entries_balanced;
  alter table ledger_entries disable trigger ledger_entries_balances;
  -- The secondary indexes, dropped and built again from their own definitions after the insert;
  -- on a plain table only (a later migration partitions it, whose index definitions are per level).
  select coalesce(array_agg(pg_get_indexdef(i.indexrelid)), '{}'::text[]) into indexes
    from pg_index i
   where i.indrelid = 'ledger_entries'::regclass
     and not exists (select 1 from pg_constraint c where c.conindid = i.indexrelid)
     and (select relkind from pg_class where oid = 'ledger_entries'::regclass) = 'r';
  for ix in
    select i.indexrelid::regclass::text from pg_index i
     where i.indrelid = 'ledger_entries'::regclass
       and not exists (select 1 from pg_constraint c where c.conindid = i.indexrelid)
       and (select relkind from pg_class where oid = 'ledger_entries'::regclass) = 'r'
  loop
    execute 'drop index ' || ix;
  end loop;
with legs as (
  -- Inflow RECEIVED: the money counted on its rail, into the tenant's suspense.
  select 'inflow' as cause_object, f.id as cause_id, f.state as state, 'RECEIVED' as flow, 1 as rank, f.tenant_id,
         null::uuid as payout_id, f.created_at as at, 1 as leg,
         case when f.rail = 'CRYPTO' then 'collection:crypto:' || coalesce(f.network, 'UNKNOWN') || ':' || f.to_account
              else 'collection:bank:' || f.to_account end as from_account,
         'tenants:' || f.tenant_id || ':suspense' as to_account,
         f.amount, f.currency::text as currency, null::text as from_movement, null::text as to_movement
    from inflows f where f.state <> 'PENDING_CONFIRMATION'
  union all
  -- Inflow ATTRIBUTED: the payout's money (matched, held against it, or handed to its refund).
  select 'inflow', f.id, f.state, 'ATTRIBUTED', 2, f.tenant_id, f.payout_id,
         greatest(f.created_at, coalesce(f.matched_at, f.updated_at)), 1,
         'tenants:' || f.tenant_id || ':suspense', ${payoutAccount('f.tenant_id', 'f.payout_id')},
         f.amount, f.currency::text, null, 'money_received'
    from inflows f where f.state in ('MATCHED', 'HELD', 'FOR_REFUND') and f.payout_id is not null
  union all
  -- Inflow RETURNED: an operator recorded it sent back to the merchant.
  select 'inflow', f.id, f.state, 'RETURNED', 3, f.tenant_id, null, f.updated_at, 1,
         'tenants:' || f.tenant_id || ':suspense', 'world:merchants:' || f.tenant_id,
         f.amount, f.currency::text, null, null
    from inflows f where f.state = 'RETURNED'
  union all
  -- Outflow SENT: converted at the payout's locked rate, the destination amount with the processor.
  select 'outflow', o.id, o.status, 'SENT', 4, p.tenant_id, p.id, coalesce(o.dispatched_at, o.created_at), l.leg,
         l.from_account, l.to_account, l.amount, l.currency, l.from_movement, l.to_movement
    from outflows o join payouts p on p.id = o.payout_id
    cross join lateral (values
      (1, ${payoutAccount('p.tenant_id', 'p.id')}, 'conversion', p.settlement_amount - p.total_fee_amount,
          p.settlement_currency::text, 'conversion', null),
      (2, 'conversion', ${payoutAccount('p.tenant_id', 'p.id')}, o.destination_amount,
          o.destination_currency::text, null, 'conversion'),
      (3, ${payoutAccount('p.tenant_id', 'p.id')}, 'transit:processor:' || o.processor, o.destination_amount,
          o.destination_currency::text, null, null)
    ) as l(leg, from_account, to_account, amount, currency, from_movement, to_movement)
   where o.status in ('PROCESSING', 'SUCCESSFUL')
  union all
  -- Outflow PAID: the processor paid the beneficiary.
  select 'outflow', o.id, o.status, 'PAID', 5, p.tenant_id, p.id,
         greatest(coalesce(o.dispatched_at, o.created_at), coalesce(o.settled_at, o.updated_at)), 1,
         'transit:processor:' || o.processor, 'world:beneficiaries', o.destination_amount,
         o.destination_currency::text, 'paid_out', null
    from outflows o join payouts p on p.id = o.payout_id
   where o.status = 'SUCCESSFUL'
  union all
  -- Payout SETTLED: the fees are the service's, an overpayment is set aside for the merchant.
  select 'payout', p.id, p.status, 'SETTLED', 6, p.tenant_id, p.id, p.updated_at, l.leg,
         ${payoutAccount('p.tenant_id', 'p.id')}, l.to_account, l.amount, p.settlement_currency::text,
         l.from_movement, null
    from payouts p
    cross join lateral (values
      (1, 'fees:platform', p.platform_fee_amount, 'platform_fee'),
      (2, 'fees:network', p.network_fee_amount, 'network_fee'),
      (3, 'tenants:' || p.tenant_id || ':to_return:overpayments',
          greatest(0, p.received_amount - p.settlement_amount), 'overpayment_set_aside')
    ) as l(leg, to_account, amount, from_movement)
   where p.status = 'SUCCESSFUL'
  union all
  -- Refund SENT: its network fee kept, the rest on its way to the merchant.
  select 'refund', r.id, r.status, 'SENT', 7, r.tenant_id, r.payout_id, coalesce(r.dispatched_at, r.created_at), l.leg,
         ${payoutAccount('r.tenant_id', 'r.payout_id')}, l.to_account, l.amount, r.received_currency::text,
         l.from_movement, null
    from refunds r
    cross join lateral (values
      (1, 'fees:refund', r.network_fee_amount, 'refund_fee'),
      (2, 'transit:refunds:' || case when r.destination_type = 'CRYPTO_ADDRESS'
                                      then coalesce(r.destination_network, 'CHAIN') else 'BANK' end,
          r.refund_amount, null)
    ) as l(leg, to_account, amount, from_movement)
   where r.status in ('PROCESSING', 'SUCCESSFUL')
  union all
  -- Refund DELIVERED: it reached the merchant.
  select 'refund', r.id, r.status, 'DELIVERED', 8, r.tenant_id, r.payout_id,
         greatest(coalesce(r.dispatched_at, r.created_at), coalesce(r.settled_at, r.updated_at)), 1,
         'transit:refunds:' || case when r.destination_type = 'CRYPTO_ADDRESS'
                                     then coalesce(r.destination_network, 'CHAIN') else 'BANK' end,
         'world:merchants:' || r.tenant_id, r.refund_amount, r.received_currency::text, 'refunded', null
    from refunds r where r.status = 'SUCCESSFUL'
),
-- Each leg is two entries; a leg that moves nothing is left out, as postingsOf does.
wanted as (
  select cause_object, cause_id, state, flow, tenant_id, payout_id, at, rank * 16 + leg * 2 - 1 as ord,
         from_account as account, currency, -amount as amount, from_movement as movement
    from legs where amount <> 0
  union all
  select cause_object, cause_id, state, flow, tenant_id, payout_id, at, rank * 16 + leg * 2,
         to_account, currency, amount, to_movement
    from legs where amount <> 0
),
-- What the ledger already holds for these objects (written by their machines since it exists).
posted as materialized (
  select e.cause_id, e.account, e.currency, e.movement, e.payout_id, sum(e.amount) as amount
    from ledger_entries e
   where e.cause_object in ('inflow', 'outflow', 'refund', 'payout')
   group by 1, 2, 3, 4, 5
),
-- Objects with nothing posted: their flows, one transaction each, its id a random UUID drawn from
-- the object, the flow and this run's salt (the same for every entry of the flow, with no join).
fresh as (
  select overlay(overlay(md5(salt || w.cause_id::text || w.flow) placing '4' from 13) placing '8' from 17)::uuid
           as transaction_id,
         w.ord, w.account, w.currency, w.amount, w.tenant_id, w.payout_id, w.movement,
         w.cause_object, w.cause_id, 'BACKFILLED (→ ' || w.state || ')' as transition, w.at
    from wanted w where not exists (select 1 from posted x where x.cause_id = w.cause_id)
),
-- The state of each object already posted to, for what it still misses.
objects as (
  select 'inflow' as cause_object, id, tenant_id, state, updated_at from inflows
  union all select 'outflow', id, tenant_id, status, updated_at from outflows
  union all select 'refund', id, tenant_id, status, updated_at from refunds
  union all select 'payout', id, tenant_id, status, updated_at from payouts
),
missing_lines as (
  select cause_id, account, currency, movement, payout_id, sum(amount) as amount
    from (select cause_id, account, currency, movement, payout_id, amount
            from wanted w where exists (select 1 from posted x where x.cause_id = w.cause_id)
          union all
          select cause_id, account, currency, movement, payout_id, -amount from posted) d
   group by 1, 2, 3, 4, 5
  having sum(amount) <> 0
),
missing_objects as materialized (
  select cause_id, gen_random_uuid() as transaction_id from (select distinct cause_id from missing_lines) m
),
missing as (
  select t.transaction_id,
         row_number() over (partition by m.cause_id order by m.account, m.currency, m.movement) as ord,
         m.account, m.currency, m.amount, o.tenant_id, m.payout_id, m.movement,
         o.cause_object, m.cause_id, 'BACKFILLED (→ ' || o.state || ')' as transition, o.updated_at as at
    from missing_lines m join missing_objects t on t.cause_id = m.cause_id
    join objects o on o.id = m.cause_id
),
written as (
  insert into ledger_entries (id, transaction_id, account, currency, amount, tenant_id, payout_id, movement,
      cause_object, cause_id, transition, approval_id, created_at)
  select ${v7('b.at', 'b.ord')}, b.transaction_id, b.account, b.currency, trim_scale(b.amount), b.tenant_id, b.payout_id,
         b.movement, b.cause_object, b.cause_id, b.transition, null, b.at
    from (select * from fresh union all select * from missing) b
   order by b.at, b.transaction_id, b.ord
  returning transaction_id, account, currency, amount
),
-- What the trigger ledger_entries_balances adds for a statement (one payout's account and one
-- virtual account summed into their parent), summed per account first.
deltas as (
  insert into ledger_balance_deltas (account, currency, amount, entries)
  select regexp_replace(account, '^(tenants:[^:]+:payouts|collection:bank):[^:]+$', '\\1'), currency,
         sum(amount), sum(entries)::int
    from (select account, currency, sum(amount) as amount, count(*) as entries from written group by 1, 2) a
   group by 1, 2
)
select count(*) into unbalanced
  from (select 1 from written group by transaction_id, currency having sum(amount) <> 0) u;
  if unbalanced > 0 then
    raise exception 'ledger backfill: % ledger transactions do not balance in every currency', unbalanced
      using errcode = 'check_violation';
  end if;
  foreach ix in array indexes loop
    execute ix;
  end loop;
  alter table ledger_entries enable trigger ledger_entries_balances;
  alter table ledger_entries enable trigger ledger_entries_balanced;
end
$backfill$;`;

/** What `compactBalances` (src/ledger/read.ts) does on each pass of the `ledger` job, for every pending delta. */
const FOLD_BALANCES = `
with taken as (
  delete from ledger_balance_deltas
   where id in (select id from ledger_balance_deltas order by id for update skip locked)
  returning account, currency, amount, entries
)
insert into ledger_balances as b (account, currency, balance, entries, updated_at)
select account, currency, sum(amount), sum(entries), now() from taken
 group by account, currency
 order by account, currency
on conflict (account, currency)
do update set balance = b.balance + excluded.balance, entries = b.entries + excluded.entries,
              updated_at = excluded.updated_at;`;
