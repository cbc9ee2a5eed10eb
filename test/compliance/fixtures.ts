import { harness } from '../harness.ts';

/**
 * Rows written straight into the tables, for the counts and plans of the operators' queues: the
 * state columns and snapshots as their machines write them, with times chosen by the test.
 */

const em = () => harness().service.deps.orm.em.fork();

/**
 * `rows` payouts, inflows, refunds and webhook deliveries of `tenantId`. One in `every` rows (all
 * by default) waits for a person (held underpaid, unmatched, FAILED, DEAD, money held without a
 * refund), and each such payout received a short payment: HELD against it while it is held,
 * FOR_REFUND once it failed; the rest are SUCCESSFUL, MATCHED, SUCCEEDED: a history.
 */
export async function seedQueues(
  tenantId: string,
  options: { rows: number; at: Date; stepMs?: number; every?: number },
): Promise<void> {
  const { rows, at, stepMs = 3 * 3600_000, every = 1 } = options;
  const time = `(?::timestamptz + n * (? * interval '1 millisecond'))`;
  const waiting = `n % ${every} = 0`;
  const params = (...more: unknown[]) => [tenantId, ...more, at.toISOString(), stepMs];
  const x = em();
  // Payouts: a third of the waiting ones held underpaid, a third failed holding money, a third failed and refunded.
  await x.execute(
    `insert into payouts (id, tenant_id, status, snapshot, destination_type, destination_country,
        destination_currency, destination_amount, destination_account_unique, destination_provider_name,
        settlement_currency, settlement_amount, exchange_rate, mid_market_rate, platform_fee_amount,
        network_fee_amount, total_fee_amount, received_amount, is_refunded, created_at, updated_at)
     select gen_random_uuid(), ?, s.status, s.snapshot::jsonb, 'BANK_ACCOUNT', 'NG', 'NGN', 1000, '0123456789',
            'Guaranty Trust Bank', 'NGN', 1000, 1, 1, 0, 0, 0, s.received, s.refunded, s.at, s.at
       from (select n, ${time} as at,
                    case when not (${waiting}) then 'SUCCESSFUL' when n % 3 = 0 then 'PENDING_PAYMENT' else 'FAILED' end as status,
                    case when not (${waiting}) then '{"value":"SUCCESSFUL","status":"done"}'
                         when n % 3 = 0 then '{"value":{"PENDING_PAYMENT":"held"},"status":"active"}'
                         else '{"value":"FAILED","status":"done"}' end as snapshot,
                    case when ${waiting} then 400 else 1000 end as received,
                    (${waiting}) and n % 3 = 2 as refunded
               from generate_series(1, ${rows}) as n) s`,
    params(),
  );
  // Their timelines: a held payout's first underpaid settlement is when it started waiting.
  await x.execute(
    `insert into payout_status_timeline (id, tenant_id, payout_id, from_status, to_status, triggered_by, reason_code, created_at)
     select gen_random_uuid(), tenant_id, id, 'PENDING_PAYMENT', 'PENDING_PAYMENT', 'SYSTEM', 'SETTLEMENT_UNDERPAID', created_at
       from payouts where tenant_id = ? and status = 'PENDING_PAYMENT'`,
    [tenantId],
  );
  // Per payout, the money it was paid with: a history row's MATCHED to it; a waiting row's short
  // payment HELD against it while the payout is held (waiting for its decision), FOR_REFUND once it
  // failed (its refund returns the money), and an UNMATCHED inflow beside it, as late money.
  await x.execute(
    `insert into inflows (id, tenant_id, rail, provider_name, amount, currency, external_ref, to_account, state,
        snapshot, is_matched, is_underpaid, payout_id, overpayment_amount, arrived_at, created_at, updated_at)
     select gen_random_uuid(), p.tenant_id, 'BANK_TRANSFER', 'Sandbox Bank', i.amount, 'NGN', 'queue-' || gen_random_uuid(),
            '9000000000', i.state, i.snapshot::jsonb, i.state = 'MATCHED', i.state in ('HELD', 'FOR_REFUND'),
            case when i.state = 'UNMATCHED' then null else p.id end, 0, p.created_at, p.created_at, p.created_at
       from payouts p
       cross join lateral (
         select * from (values
           ('MATCHED', 1000, '{"value":"MATCHED","status":"done"}'),
           ('HELD', 400, '{"value":{"HELD":"attributed"},"status":"active"}'),
           ('FOR_REFUND', 400, '{"value":"FOR_REFUND","status":"done"}'),
           ('UNMATCHED', 1000, '{"value":"UNMATCHED","status":"active"}')) as v(state, amount, snapshot)
          where (v.state = 'MATCHED') = (p.received_amount = p.settlement_amount)
            and (v.state <> 'HELD' or p.status = 'PENDING_PAYMENT')
            and (v.state <> 'FOR_REFUND' or p.status = 'FAILED')) i
      where p.tenant_id = ?`,
    [tenantId],
  );
  // One refund per FAILED payout that was refunded or is a history row; a waiting one is FAILED.
  await x.execute(
    `insert into refunds (id, tenant_id, payout_id, status, snapshot, received_amount, received_currency,
        network_fee_amount, refund_amount, destination_id, destination_type, destination_provider_name,
        destination_masked, destination_account, created_at, updated_at)
     select gen_random_uuid(), p.tenant_id, p.id, case when p.is_refunded then 'FAILED' else 'SUCCESSFUL' end,
            case when p.is_refunded then '{"value":"FAILED","status":"active"}' else '{"value":"SUCCESSFUL","status":"done"}' end::jsonb,
            400, 'NGN', 0, 400, gen_random_uuid(), 'BANK_ACCOUNT', 'Guaranty Trust Bank', '******6789', 'sealed',
            p.updated_at, p.updated_at
       from payouts p where p.tenant_id = ? and (p.is_refunded or p.status = 'SUCCESSFUL')`,
    [tenantId],
  );
  // One event per delivery, as publishing makes them.
  await x.execute(
    `with events as (
       insert into outbox_events (id, tenant_id, event_type, payload, published_at, created_at)
       select gen_random_uuid(), ?, 'payout.created', '{}', now(), now() from generate_series(1, ${rows})
       returning id, created_at),
     numbered as (select id, created_at, row_number() over (order by id) as n from events)
     insert into webhook_deliveries (id, tenant_id, event_id, event_type, target_url, target_origin, status, snapshot,
        attempts, created_at, updated_at, event_created_at)
     select gen_random_uuid(), ?, numbered.id, 'payout.created', 'https://hooks.example/' || n, 'https://hooks.example:443',
            case when ${waiting} then 'DEAD' else 'SUCCEEDED' end,
            case when ${waiting} then '{"value":"DEAD","status":"done"}' else '{"value":"SUCCEEDED","status":"done"}' end::jsonb,
            5, ${time}, ${time}, numbered.created_at
       from numbered`,
    [tenantId, tenantId, at.toISOString(), stepMs, at.toISOString(), stepMs],
  );
  // Proposals: the waiting rows' payouts failed by operators, proposed at `at + n * step`; the rest decided.
  await x.execute(
    `insert into approvals (id, status, snapshot, action, args, target_ids, note, proposer_id, decider_id,
        expires_at, decided_at, created_at, updated_at)
     select gen_random_uuid(), s.status, jsonb_build_object('value', s.status, 'status', s.machine), 'payout.fail',
            jsonb_build_object('payout_id', p.id), array[p.id::text], 'seeded', gen_random_uuid(), s.decider,
            p.created_at + interval '1 day', s.decided, p.created_at, p.created_at
       from payouts p
       cross join lateral (
         select case when p.status = 'PENDING_PAYMENT' then 'PENDING' else 'APPROVED' end as status,
                case when p.status = 'PENDING_PAYMENT' then 'active' else 'done' end as machine,
                case when p.status = 'PENDING_PAYMENT' then null else gen_random_uuid() end as decider,
                case when p.status = 'PENDING_PAYMENT' then null else p.created_at end as decided) s
      where p.tenant_id = ?`,
    [tenantId],
  );
  await x.execute('analyze payouts, inflows, refunds, webhook_deliveries, payout_status_timeline, approvals');
}

/** Removes every row `seedQueues` (or anything else) wrote for `tenantId`. */
export async function removeQueues(tenantId: string): Promise<void> {
  const x = em();
  await x.execute(
    'delete from payout_status_timeline where payout_id in (select id from payouts where tenant_id = ?)',
    [tenantId],
  );
  await x.execute(
    'delete from approvals where target_ids[1] in (select id::text from payouts where tenant_id = ?)',
    [tenantId],
  );
  for (const table of ['webhook_deliveries', 'outbox_events', 'refunds', 'inflows', 'payouts']) {
    await x.execute(`delete from ${table} where tenant_id = ?`, [tenantId]);
  }
}
