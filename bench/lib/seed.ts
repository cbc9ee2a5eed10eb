import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { type AnyStateMachine, transition } from 'xstate';
import { inflowMachine } from '#machines/inflow.machine.ts';
import { outflowMachine } from '#machines/outflow.machine.ts';
import { paymentInstructionMachine } from '#machines/payment-instruction.machine.ts';
import { payoutMachine } from '#machines/payout.machine.ts';
import { migrate, openOrm } from '#src/db/orm.ts';
import { initialState } from '#src/engine/engine.ts';
import { systemClock } from '#src/lib/clock.ts';
import { newId } from '#src/lib/ids.ts';
import { createTenant, issueApiKey } from '#src/tenants/service.ts';

/**
 * What the scenarios start from. Tenants and keys go through the service's own functions; the
 * large tables (100,000 payouts, 50,000 instructions and inflows) are written with plain SQL in
 * a few set-based statements, because seeding them through the API would take longer than the
 * benchmark itself. Rows written here carry the same machine snapshots the engine would write.
 */

export interface BenchTenant {
  id: string;
  apiKey: string;
}

/** Applies the migrations and creates `count` approved tenants, each with a key of every scope. */
export async function migrateAndCreateTenants(url: string, count: number): Promise<BenchTenant[]> {
  const orm = await openOrm({ url, poolSize: 2, clock: systemClock });
  try {
    await migrate(orm);
    const tenants: BenchTenant[] = [];
    for (let i = 0; i < count; i++) {
      const em = orm.em.fork();
      const tenant = await createTenant(em, {
        name: `Bench Tenant ${i} ${randomUUID().slice(0, 8)}`,
        approved: true,
      });
      const key = await issueApiKey(em, { tenantId: tenant.id });
      tenants.push({ id: tenant.id, apiKey: key.plaintext });
    }
    return tenants;
  } finally {
    await orm.close();
  }
}

/** Sends one JSON request to the service as `tenant` and fails loudly on anything but 2xx. */
export async function api(
  baseUrl: string,
  tenant: BenchTenant,
  method: string,
  path: string,
  body?: unknown,
): Promise<any> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      'x-api-key': tenant.apiKey,
      ...(body === undefined ? {} : { 'content-type': 'application/json', 'idempotency-key': randomUUID() }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

/** A USDT refund destination per tenant, through the API (payout creation requires one). */
export async function setRefundDestinations(baseUrl: string, tenants: readonly BenchTenant[]): Promise<void> {
  for (const tenant of tenants) {
    await api(baseUrl, tenant, 'PUT', '/v1/refund-destinations', {
      currency: 'USDT',
      type: 'CRYPTO_ADDRESS',
      network: 'TRON',
      address: 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy',
    });
  }
}

/** The body of a valid bank payout; `n` varies the amount so that no two are alike. */
export function payoutBody(n: number): string {
  return JSON.stringify({
    destination_type: 'BANK_ACCOUNT',
    destination_country: 'NG',
    destination_currency: 'NGN',
    destination_amount: 50_000 + (n % 100_000),
    destination_account_unique: '0123456789',
    destination_provider_name: 'Guaranty Trust Bank',
    destination_provider_code: '058',
    destination_account_name: 'ADAEZE OKONKWO',
  });
}

/** The persisted snapshot after `events`, as the engine stores it (plain JSON). */
function snapshotAfter(machine: AnyStateMachine, input: unknown, events: unknown[]): Record<string, unknown> {
  let snapshot = machine.resolveState(initialState(machine, input as never).snapshot as never);
  for (const event of events) [snapshot] = transition(machine, snapshot, event as never);
  return JSON.parse(JSON.stringify(machine.getPersistedSnapshot(snapshot))) as Record<string, unknown>;
}

/** Payout snapshots of the states the seeds need; `settled` carries a typical received total. */
export function payoutSnapshots(now: Date) {
  const created = { type: 'INSTRUCTION_GENERATED', triggeredBy: 'SYSTEM', now };
  const settled = {
    type: 'SETTLEMENT_CONFIRMED',
    receivedTotal: '100.5',
    expected: '100.5',
    triggeredBy: 'SYSTEM',
    now,
  };
  const accepted = { type: 'DISPATCH_ACCEPTED', triggeredBy: 'SYSTEM', now };
  return {
    CREATED: snapshotAfter(payoutMachine, {}, []),
    PENDING_PAYMENT: snapshotAfter(payoutMachine, {}, [created]),
    PAYMENT_RECEIVED: snapshotAfter(payoutMachine, {}, [created, settled]),
    PROCESSING: snapshotAfter(payoutMachine, {}, [created, settled, accepted]),
  };
}

/** Outflow snapshots: an attempt just committed, and one the processor accepted (its reference set per row). */
export function outflowSnapshots(now: Date) {
  return {
    PENDING: snapshotAfter(outflowMachine, {}, []),
    PROCESSING: snapshotAfter(outflowMachine, {}, [{ type: 'ACCEPTED', processorReference: null, now }]),
  };
}

export function instructionSnapshots(expiresAt: Date) {
  const input = { expiresAt: expiresAt.toISOString() };
  return {
    UNPAID: snapshotAfter(paymentInstructionMachine, input, []),
    PAID: snapshotAfter(paymentInstructionMachine, input, [{ type: 'PAYMENT_MATCHED', now: new Date() }]),
  };
}

/** Inflow snapshots: a USDT transfer on TRON with its 19 confirmations, and one matched to `payoutId`. */
export function inflowSnapshots(payoutId = '') {
  const input = { confirmationsRequired: 19 };
  const confirmed = { type: 'CONFIRMATIONS', received: 19, now: new Date() };
  return {
    CONFIRMED: snapshotAfter(inflowMachine, input, [confirmed]),
    MATCHED: snapshotAfter(inflowMachine, input, [
      confirmed,
      { type: 'ATTRIBUTED', payoutId, covers: true, now: new Date() },
    ]),
  };
}

export interface SeedPayouts {
  tenantIds: readonly string[];
  count: number;
  status: 'CREATED' | 'PENDING_PAYMENT';
  /** Marks the rows so that checks can find exactly them. */
  reference: string;
  /** One GENERATE_INSTRUCTION task per payout, due now (what a create leaves behind). */
  withTasks?: boolean;
  /** Milliseconds between consecutive created_at values, newest last. */
  spacingMs?: number;
  /**
   * Spreads created_at evenly over this many days before now instead (the list's seed: rows in
   * several months' partitions of the timeline where those exist); overrides `spacingMs`.
   */
  spreadDays?: number;
}

/**
 * Inserts `count` payouts round-robin over the tenants, each with its first timeline row, in
 * one statement per table (server-side generate_series). Ids are UUID v4 here: keyset
 * pagination orders by (created_at, id) and does not care which version an id is.
 */
export async function seedPayouts(db: pg.Pool, seed: SeedPayouts): Promise<void> {
  const now = new Date();
  const snapshot = payoutSnapshots(now)[seed.status];
  const spacing = seed.spreadDays ? (seed.spreadDays * 86_400_000) / seed.count : (seed.spacingMs ?? 1);
  const start = new Date(now.getTime() - seed.count * spacing - 60_000);
  await db.query(
    `insert into payouts (id, tenant_id, status, snapshot, merchant_reference, destination_type,
        destination_country, destination_currency, destination_amount, destination_account_unique,
        destination_provider_name, destination_provider_code, destination_account_name,
        settlement_currency, settlement_network, settlement_amount, exchange_rate, mid_market_rate,
        platform_fee_amount, network_fee_amount, total_fee_amount, received_amount, created_at, updated_at)
     select gen_random_uuid(), ($1::uuid[])[1 + (n % array_length($1::uuid[], 1))], $2, $3::jsonb,
            $4 || '-' || n, 'BANK_ACCOUNT', 'NG', 'NGN', 50000 + n, '0123456789',
            'Guaranty Trust Bank', '058', 'ADAEZE OKONKWO', 'USDT', 'TRON', 0, 0, 0, 0, 0, 0, 0,
            $5::timestamptz + n * ($6 || ' milliseconds')::interval,
            $5::timestamptz + n * ($6 || ' milliseconds')::interval
       from generate_series(1, $7::int) as n`,
    [seed.tenantIds, seed.status, snapshot, seed.reference, start, String(spacing), seed.count],
  );
  await db.query(
    `insert into payout_status_timeline (id, tenant_id, payout_id, from_status, to_status, triggered_by, reason_code, metadata, created_at)
     select gen_random_uuid(), tenant_id, id, null, 'CREATED', 'SYSTEM', 'PAYOUT_CREATED',
            jsonb_build_object('request_id', 'req_seed'), created_at
       from payouts where merchant_reference like $1 || '-%'`,
    [seed.reference],
  );
  if (seed.withTasks) {
    await db.query(
      `insert into tasks (id, kind, subject_id, due_at, attempts, created_at, updated_at)
       select gen_random_uuid(), 'GENERATE_INSTRUCTION', id, created_at, 0, created_at, created_at
         from payouts where merchant_reference like $1 || '-%'`,
      [seed.reference],
    );
  }
  await db.query('analyze');
}

/** A deposit address per tenant on TRON (instruction generation creates them on first use). */
export async function seedDepositAddresses(
  db: pg.Pool,
  tenantIds: readonly string[],
): Promise<Map<string, string>> {
  const addresses = new Map<string, string>();
  for (const tenantId of tenantIds) {
    const address = `T${tenantId.replaceAll('-', '').slice(0, 33)}`;
    await db.query(
      `insert into deposit_addresses (id, tenant_id, network, address, created_at, updated_at)
       values ($1, $2, 'TRON', $3, now(), now()) on conflict do nothing`,
      [newId(), tenantId, address],
    );
    const { rows } = await db.query(
      'select address from deposit_addresses where tenant_id = $1 and network = $2',
      [tenantId, 'TRON'],
    );
    addresses.set(tenantId, (rows[0] as { address: string }).address);
  }
  return addresses;
}

/**
 * Turns the seeded PENDING_PAYMENT payouts marked `reference` into payouts waiting for their
 * money: an UNPAID crypto instruction each on its tenant's shared address, with a unique
 * expected amount per address, and one CONFIRMED inflow of exactly that amount per instruction.
 */
export async function seedSettlement(db: pg.Pool, reference: string): Promise<void> {
  const expiresAt = new Date(Date.now() + 3_600_000);
  const snapshot = instructionSnapshots(expiresAt).UNPAID;
  await db.query(
    `insert into payment_instructions (id, tenant_id, payout_id, status, snapshot, rail, account_unique,
        provider_name, network, chain, expected_amount, expected_currency, expires_at, created_at, updated_at)
     select gen_random_uuid(), p.tenant_id, p.id, 'UNPAID', $2::jsonb, 'CRYPTO', a.address, 'USDT on TRON',
            'TRC20', 'TRON', 30 + (row_number() over (partition by p.tenant_id order by p.id))::numeric / 100,
            'USDT', $3, p.created_at, p.created_at
       from payouts p join deposit_addresses a on a.tenant_id = p.tenant_id and a.network = 'TRON'
      where p.merchant_reference like $1 || '-%'`,
    [reference, snapshot, expiresAt],
  );
  await db.query(
    `update payouts p set settlement_amount = i.expected_amount
       from payment_instructions i where i.payout_id = p.id and p.merchant_reference like $1 || '-%'`,
    [reference],
  );
  await db.query(
    `insert into inflows (id, tenant_id, rail, provider_name, network, amount, currency, external_ref, to_account,
        block_number, confirmations_received, confirmations_required, state, snapshot, overpayment_amount,
        arrived_at, created_at, updated_at)
     select gen_random_uuid(), i.tenant_id, 'CRYPTO', 'TRON', 'TRON', i.expected_amount, 'USDT',
            'bench-' || i.id, i.account_unique, 1, 19, 19, 'CONFIRMED', $2::jsonb, 0, i.at, i.at, now()
       from (select i.*, now() - interval '1 minute'
                    + (row_number() over (order by i.created_at, i.id)) * interval '1 microsecond' as at
               from payment_instructions i join payouts p on p.id = i.payout_id
              where p.merchant_reference like $1 || '-%') i`,
    [reference, inflowSnapshots().CONFIRMED],
  );
  await db.query('analyze');
}

export interface PartitionSpan {
  /** Partitions of `table` that hold the rows counted. */
  spanned: number;
  /** Partitions attached to `table`, its default one included. */
  attached: number;
  /** Rows counted that sit in the default partition (none, when the partitions were made first). */
  inDefault: number;
}

/** How many of `table`'s partitions the rows matching `where` sit in (by each row's tableoid). */
export async function partitionSpan(
  db: pg.Pool,
  table: string,
  where = 'true',
  params: unknown[] = [],
): Promise<PartitionSpan> {
  const { rows } = await db.query(
    `select count(distinct tableoid)::int as spanned,
            count(*) filter (where tableoid::regclass::text = '${table}_default')::int as "inDefault",
            (select count(*)::int from pg_inherits where inhparent = '${table}'::regclass) as attached
       from ${table} where ${where}`,
    params,
  );
  return rows[0] as PartitionSpan;
}

/**
 * Gives `payout_status_timeline` a partition of its own for each month from `days` ago on, as a
 * database migrated long before has: the migration attached everything before its next month as
 * one partition (from minvalue), which on the freshly migrated bench database holds no row and is
 * replaced here by `partition_maintain()`'s monthly ones. False, and nothing changed, when that
 * partition holds rows.
 */
export async function timelineMonthsBack(db: pg.Pool, days: number): Promise<boolean> {
  const client = await db.connect();
  try {
    await client.query('begin');
    const { rows } = await client.query(
      `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
        where i.inhparent = 'payout_status_timeline'::regclass
          and pg_get_expr(c.relpartbound, c.oid) like '%MINVALUE%'`,
    );
    const catchAll = (rows[0] as { name: string } | undefined)?.name;
    if (catchAll) {
      const held = await client.query(`select 1 from "${catchAll}" limit 1`);
      if (held.rows.length > 0) {
        await client.query('rollback');
        return false;
      }
      await client.query(`alter table payout_status_timeline detach partition "${catchAll}"`);
      await client.query(`drop table "${catchAll}"`);
    }
    // From the month `days` (and a day) ago to three months ahead of this one.
    await client.query(
      `select partition_maintain('payout_status_timeline', 'month',
                (12 * (extract(year from now_utc) - extract(year from first_utc))
                   + extract(month from now_utc) - extract(month from first_utc))::int + 3,
                null, first_utc at time zone 'UTC')
         from (select now() at time zone 'UTC' as now_utc,
                      (now() - ($1::int + 1) * interval '1 day') at time zone 'UTC' as first_utc) t`,
      [days],
    );
    await client.query('commit');
    return true;
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
