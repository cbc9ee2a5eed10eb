/**
 * `node -r ./src/node-guard.cjs bench/backfill.ts [PAYOUTS]` (default 20,000): how long the ledger's
 * backfill (migrations/Migration20261128160000_ledger_backfill.ts) takes on a database of the
 * release before the ledger. Creates a `bench_` database of its own on the local PostgreSQL
 * (BENCH_PG_URL), applies the migrations before the ledger, fills PAYOUTS payouts with their
 * inflows, outflows and refunds in a mix of states (written set-based, for that release's
 * schema), applies the migrations up to the backfill, then times the backfill migration alone
 * and checks what it wrote: every ledger transaction balanced, the deltas folded. Drops the
 * database at the end. The fill's shapes are those of test/ledger/backfill.test.ts.
 */
import { loadavg } from 'node:os';
import { MikroORM } from '@mikro-orm/postgresql';
import { startEmbeddedPostgres } from '#src/db/embedded.ts';
import { ormConfig } from '#src/db/orm.ts';
import { createBenchDatabase } from './lib/db.ts';

const LEDGER_MIGRATION = 'Migration20261128100000_ledger';
const BACKFILL_MIGRATION = 'Migration20261128160000_ledger_backfill';

const payouts = Number(process.argv.slice(2).find((a) => !a.startsWith('--')) ?? 20_000);
/** The embedded database (PGlite) the tests run on, instead of the local PostgreSQL. */
async function embedded(): Promise<{ url: string; drop(): Promise<void> }> {
  const pg = await startEmbeddedPostgres({});
  return { url: pg.url, drop: pg.stop };
}

const log = (message: string) => process.stderr.write(`[backfill] ${message}\n`);

/**
 * The fill, by `n % 10` of each payout: 0 awaiting payment; 1 expired; 2 payment received (its
 * inflow MATCHED, an outflow PENDING); 3 processing (an outflow PROCESSING); 4-6 successful (7: a
 * failed attempt before the paid one, overpaid); 8 failed and refunded (refund SUCCESSFUL); 9
 * failed, its refund on its way (PROCESSING). Plus one UNMATCHED inflow per ten payouts.
 */
const FILL = [
  `insert into tenants (id, name, payouts_approved, created_at, updated_at)
   values ('00000000-0000-7000-8000-000000000001', 'Backfill bench merchant', true, now(), now())`,
  `insert into payouts (id, tenant_id, status, snapshot, destination_type, destination_country,
       destination_currency, destination_amount, destination_account_unique, destination_provider_name,
       settlement_currency, settlement_network, settlement_amount, exchange_rate, mid_market_rate,
       platform_fee_amount, network_fee_amount, total_fee_amount, received_amount, is_refunded, created_at, updated_at)
   select gen_random_uuid(), '00000000-0000-7000-8000-000000000001', s.status, '{"status":"done","value":"X","context":{}}',
          'MOBILE_MONEY', 'KE', 'KES', 12935.00, '+2547' || lpad(n::text, 8, '0'), 'M-Pesa', 'USDT', 'TRON', 101.50,
          129.35, 129.35, 1.00, 0.50, 1.50, case when n % 10 < 2 then 0 when n % 10 = 7 then 120.00 else 101.50 end,
          n % 10 >= 8, now() - interval '2 days' + n * interval '1 ms', now() - interval '1 day'
     from generate_series(1, $1) n
     cross join lateral (select (array['PENDING_PAYMENT', 'EXPIRED', 'PAYMENT_RECEIVED', 'PROCESSING', 'SUCCESSFUL',
                                       'SUCCESSFUL', 'SUCCESSFUL', 'SUCCESSFUL', 'FAILED', 'FAILED'])[n % 10 + 1] as status) s`,
  `insert into inflows (id, tenant_id, rail, provider_name, network, amount, currency, external_ref, to_account,
       confirmations_received, confirmations_required, state, is_matched, matched_at, payout_id, is_underpaid,
       overpayment_amount, created_at, updated_at, arrived_at, snapshot)
   select gen_random_uuid(), p.tenant_id, 'CRYPTO', 'sandbox', 'TRON', p.received_amount, 'USDT', md5(p.id::text),
          'TXbackfillDepositAddress0000000001', 20, 19, 'MATCHED', true, p.created_at + interval '2 minutes', p.id,
          false, p.received_amount - p.settlement_amount, p.created_at + interval '1 minute',
          p.created_at + interval '2 minutes', p.created_at + interval '1 minute', '{"status":"active","value":"MATCHED","context":{}}'
     from payouts p where p.received_amount > 0`,
  `insert into inflows (id, tenant_id, rail, provider_name, network, amount, currency, external_ref, to_account,
       confirmations_received, confirmations_required, state, is_matched, is_underpaid, overpayment_amount,
       created_at, updated_at, arrived_at, snapshot)
   select gen_random_uuid(), '00000000-0000-7000-8000-000000000001', 'CRYPTO', 'sandbox', 'TRON', 7.00, 'USDT',
          md5('unmatched' || n), 'TXbackfillDepositAddress0000000001', 20, 19, 'UNMATCHED', false, false, 0,
          now() - interval '1 day', now() - interval '1 day', now() - interval '1 day',
          '{"status":"active","value":"UNMATCHED","context":{}}'
     from generate_series(1, $1 / 10) n`,
  // Every payout that got as far as dispatch: its last attempt, and a failed first one for some.
  `insert into outflows (id, tenant_id, payout_id, status, snapshot, processor, attempt_number, destination_amount,
       destination_currency, retryable, dispatched_at, settled_at, created_at, updated_at)
   select gen_random_uuid(), p.tenant_id, p.id, o.status, '{"status":"active","value":"X","context":{}}', 'sandbox',
          o.attempt, 12935.00, 'KES', false, case when o.status = 'PENDING' then null else p.created_at + interval '3 minutes' end,
          case when o.status = 'SUCCESSFUL' then p.created_at + interval '4 minutes' end,
          p.created_at + interval '3 minutes', p.created_at + interval '4 minutes'
     from payouts p
     cross join lateral (values
       (1, case p.status when 'PAYMENT_RECEIVED' then 'PENDING' when 'PROCESSING' then 'PROCESSING'
                         when 'FAILED' then 'FAILED' else case when p.received_amount > 101.50 then 'FAILED' else 'SUCCESSFUL' end end),
       (2, case when p.status = 'SUCCESSFUL' and p.received_amount > 101.50 then 'SUCCESSFUL' end)) as o(attempt, status)
    where p.received_amount > 0 and o.status is not null`,
  `insert into refunds (id, tenant_id, payout_id, status, snapshot, received_amount, received_currency,
       network_fee_amount, refund_amount, destination_id, destination_type, destination_provider_name,
       destination_masked, destination_network, destination_account, attempt_number, dispatched_at, settled_at,
       created_at, updated_at)
   select gen_random_uuid(), p.tenant_id, p.id, case when p.destination_account_unique like '%8' then 'SUCCESSFUL' else 'PROCESSING' end,
          '{"status":"active","value":"X","context":{}}', p.received_amount, 'USDT', 1.00, 100.50, gen_random_uuid(),
          'CRYPTO_ADDRESS', 'TRON', 'TX…0001', 'TRON', 'TXbackfillRefundAddress00000000001', 1,
          p.created_at + interval '5 minutes',
          case when p.destination_account_unique like '%8' then p.created_at + interval '6 minutes' end,
          p.created_at + interval '5 minutes', p.created_at + interval '6 minutes'
     from payouts p where p.status = 'FAILED'`,
  `update payouts p set refund_reference = r.id from refunds r where r.payout_id = p.id`,
];

const db = process.argv.includes('--embedded') ? await embedded() : await createBenchDatabase();
const orm = await MikroORM.init(ormConfig({ url: db.url, poolSize: 2 }));
try {
  const pendingBefore = async (name: string) => {
    const names = (await orm.migrator.getPending()).map((m) => m.name).filter((n) => n < name);
    return names.at(-1)!;
  };
  await orm.migrator.up({ to: await pendingBefore(LEDGER_MIGRATION) });
  const em = orm.em.fork();
  const fillStarted = performance.now();
  for (const statement of FILL) {
    await em.execute(statement.replaceAll('$1', String(payouts)));
  }
  await em.execute('vacuum analyze');
  log(`filled ${payouts} payouts in ${((performance.now() - fillStarted) / 1000).toFixed(1)} s`);
  await orm.migrator.up({ to: await pendingBefore(BACKFILL_MIGRATION) });
  await em.execute('checkpoint');
  const started = performance.now();
  await orm.migrator.up({ to: BACKFILL_MIGRATION });
  const seconds = (performance.now() - started) / 1000;
  const [counts] = await em.execute<
    { entries: string; transactions: string; unbalanced: string; deltas: string }[]
  >(
    `select (select count(*) from ledger_entries) as entries,
            (select count(distinct transaction_id) from ledger_entries) as transactions,
            (select count(*) from (select 1 from ledger_entries group by transaction_id, currency
                                    having sum(amount) <> 0) u) as unbalanced,
            (select count(*) from ledger_balance_deltas) as deltas`,
  );
  const result = {
    payouts,
    seconds: Number(seconds.toFixed(2)),
    entries: Number(counts!.entries),
    transactions: Number(counts!.transactions),
    unbalanced: Number(counts!.unbalanced),
    pendingDeltas: Number(counts!.deltas),
    loadAverage: Number(loadavg()[0]!.toFixed(1)),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
  if (result.unbalanced !== 0 || result.pendingDeltas !== 0) process.exitCode = 1;
} finally {
  await orm.close();
  await db.drop();
}
