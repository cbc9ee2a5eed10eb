import { createHash } from 'node:crypto';
import type pg from 'pg';
import { v7 } from 'uuid';

/**
 * The baselines' SQL: what create-payout and list-payouts have to do, written plainly with the
 * `pg` driver (no ORM, no framework): the statements the service's own create and list write and
 * read, in one transaction for the create. The Koa + pg server and the bare-transaction runner
 * both call these functions, so the two baselines run exactly the same code.
 */

export interface PlainPrincipal {
  tenantId: string;
  approved: boolean;
}

export class PlainError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** The key's tenant by the key's SHA-256, as the service authenticates. */
export async function authenticate(db: pg.Pool, apiKey: string | undefined): Promise<PlainPrincipal> {
  if (!apiKey) throw new PlainError(401, 'UNAUTHENTICATED');
  const hash = createHash('sha256').update(apiKey).digest('hex');
  const { rows } = await db.query(
    `select t.id, t.payouts_approved from api_keys k join tenants t on t.id = k.tenant_id
      where k.hash = $1 and k.revoked_at is null`,
    [hash],
  );
  const row = rows[0] as { id: string; payouts_approved: boolean } | undefined;
  if (!row) throw new PlainError(401, 'UNAUTHENTICATED');
  return { tenantId: row.id, approved: row.payouts_approved };
}

interface PayoutInput {
  destination_type: string;
  destination_country: string;
  destination_currency: string;
  destination_amount: number;
  destination_account_unique: string;
  destination_provider_name: string;
  destination_provider_code?: string;
  destination_account_name?: string;
  merchant_reference?: string;
}

/**
 * Create-payout in one transaction: look up the idempotency key (a replay answers the stored
 * response), check the refund destination, insert the payout, its timeline row, its
 * payout.created event and its instruction task, and store the key with the response.
 */
export async function createPayoutPlain(
  db: pg.Pool,
  principal: PlainPrincipal,
  idempotencyKey: string,
  rawBody: string,
): Promise<{ status: number; body: string }> {
  if (!principal.approved) throw new PlainError(403, 'TENANT_NOT_APPROVED');
  const input = JSON.parse(rawBody) as PayoutInput;
  const fingerprint = createHash('sha256').update(`payouts.create\n${rawBody}`).digest('hex');
  const now = new Date();
  const client = await db.connect();
  try {
    await client.query('begin');
    const { rows: stored } = await client.query(
      'select response_status, response_body from idempotency_keys where tenant_id = $1 and key = $2',
      [principal.tenantId, idempotencyKey],
    );
    const replay = stored[0] as { response_status: number; response_body: string } | undefined;
    if (replay) {
      await client.query('commit');
      return { status: replay.response_status, body: replay.response_body };
    }
    const destination = await client.query(
      `select id from refund_destinations where tenant_id = $1 and currency = 'USDT' and is_active limit 1`,
      [principal.tenantId],
    );
    if (destination.rowCount === 0) throw new PlainError(422, 'REFUND_DESTINATION_REQUIRED');
    const payoutId = v7();
    const snapshot = { status: 'active', value: 'CREATED', historyValue: {}, context: {}, children: {} };
    await client.query(
      `insert into payouts (id, tenant_id, status, snapshot, merchant_reference, destination_type,
          destination_country, destination_currency, destination_amount, destination_account_unique,
          destination_provider_name, destination_provider_code, destination_account_name,
          settlement_currency, settlement_network, settlement_amount, exchange_rate, mid_market_rate,
          platform_fee_amount, network_fee_amount, total_fee_amount, received_amount, created_at, updated_at)
       values ($1, $2, 'CREATED', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'USDT', 'TRON', 0, 0, 0, 0, 0, 0, 0, $13, $13)`,
      [
        payoutId,
        principal.tenantId,
        snapshot,
        input.merchant_reference ?? null,
        input.destination_type,
        input.destination_country,
        input.destination_currency,
        input.destination_amount,
        input.destination_account_unique,
        input.destination_provider_name,
        input.destination_provider_code ?? null,
        input.destination_account_name ?? null,
        now,
      ],
    );
    const timeline = {
      from_status: null,
      to_status: 'CREATED',
      triggered_by: 'SYSTEM',
      reason_code: 'PAYOUT_CREATED',
      reason_detail: null,
      metadata: { request_id: 'req_plain' },
      created_at: now.toISOString(),
    };
    await client.query(
      `insert into payout_status_timeline (id, tenant_id, payout_id, from_status, to_status, triggered_by, reason_code, metadata, created_at)
       values ($1, $5, $2, null, 'CREATED', 'SYSTEM', 'PAYOUT_CREATED', $3, $4)`,
      [v7(), payoutId, timeline.metadata, now, principal.tenantId],
    );
    const resource = {
      id: payoutId,
      tenant_id: principal.tenantId,
      status: 'CREATED',
      merchant_reference: input.merchant_reference ?? null,
      notification_url: null,
      ...input,
      settlement_currency: 'USDT',
      settlement_amount: 0,
      exchange_rate: 0,
      platform_fee_amount: 0,
      platform_fee_currency: 'USDT',
      network_fee_amount: 0,
      network_fee_currency: 'USDT',
      total_fee_amount: 0,
      total_fee_currency: 'USDT',
      is_refunded: false,
      refund_reference: null,
      payment_instruction: null,
      status_timeline: [timeline],
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
    };
    const eventId = v7();
    await client.query(
      `insert into outbox_events (id, tenant_id, payout_id, event_type, payload, created_at)
       values ($1, $2, $3, 'payout.created', $4, $5)`,
      [
        eventId,
        principal.tenantId,
        payoutId,
        {
          event_id: eventId,
          event_type: 'payout.created',
          created_at: now.toISOString(),
          status: 'CREATED',
          data: { object: 'payout', ...resource },
        },
        now,
      ],
    );
    await client.query(
      `insert into tasks (id, kind, subject_id, due_at, attempts, created_at, updated_at)
       values ($1, 'GENERATE_INSTRUCTION', $2, $3, 0, $3, $3)
       on conflict (kind, subject_id) where done_at is null
       do update set generation = tasks.generation + 1, updated_at = excluded.updated_at`,
      [v7(), payoutId, now],
    );
    const body = JSON.stringify(resource);
    await client.query(
      `insert into idempotency_keys (id, tenant_id, key, fingerprint, response_status, response_body, created_at, updated_at)
       values ($1, $2, $3, $4, 201, $5, $6, $6)`,
      [v7(), principal.tenantId, idempotencyKey, fingerprint, body, now],
    );
    await client.query('commit');
    return { status: 201, body };
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** A plain cursor: the position of the last row, base64url JSON (the baseline signs nothing). */
export function plainCursor(createdAt: Date | string, id: string): string {
  return Buffer.from(JSON.stringify([new Date(createdAt).toISOString(), id])).toString('base64url');
}

/**
 * One page of a tenant's payouts, newest first, with the same three queries the service runs
 * (the page, the instructions of its payouts, their timelines) and the same keyset predicate.
 */
export async function listPayoutsPlain(
  db: pg.Pool,
  principal: PlainPrincipal,
  limit: number,
  cursor: string | undefined,
): Promise<string> {
  const params: unknown[] = [principal.tenantId];
  let after = '';
  if (cursor) {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string];
    params.push(createdAt, id);
    // The service's keyset predicate: a row comparison, which the index can start at.
    after = ' and (created_at, id) < ($2::timestamptz, $3::uuid)';
  }
  params.push(limit + 1);
  const page = await db.query(
    `select * from payouts where tenant_id = $1${after} order by created_at desc, id desc limit $${params.length}`,
    params,
  );
  const rows = page.rows.slice(0, limit) as Record<string, any>[];
  const ids = rows.map((r) => r.id as string);
  // One after the other, as the service does (one connection per request).
  const instructions = await db.query('select * from payment_instructions where payout_id = any($1)', [ids]);
  const timelines = await db.query(
    'select * from payout_status_timeline where payout_id = any($1) order by created_at, id',
    [ids],
  );
  const instructionOf = new Map(instructions.rows.map((i: any) => [i.payout_id as string, i]));
  const timelineOf = new Map<string, unknown[]>();
  for (const t of timelines.rows as any[]) {
    const list = timelineOf.get(t.payout_id) ?? [];
    list.push({
      from_status: t.from_status,
      to_status: t.to_status,
      triggered_by: t.triggered_by,
      reason_code: t.reason_code,
      reason_detail: t.reason_detail,
      metadata: t.metadata,
      created_at: t.created_at,
    });
    timelineOf.set(t.payout_id, list);
  }
  const last = rows.at(-1);
  const hasMore = page.rows.length > limit;
  return JSON.stringify({
    data: rows.map((r) => {
      const { snapshot: _snapshot, mid_market_rate: _mid, received_amount: _received, ...fields } = r;
      return {
        ...fields,
        payment_instruction: instructionOf.get(r.id) ?? null,
        status_timeline: timelineOf.get(r.id) ?? [],
      };
    }),
    meta: {
      next_cursor: hasMore && last ? plainCursor(last.created_at, last.id) : null,
      has_more: hasMore,
      limit,
    },
  });
}
