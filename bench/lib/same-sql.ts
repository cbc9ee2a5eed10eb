import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { poolSql, type Sql, toDate } from '#src/db/sql.ts';
import { requestFingerprint, sealResponse } from '#src/idempotency/idempotency.ts';
import { decryptSecret } from '#src/lib/crypto.ts';
import { newId } from '#src/lib/ids.ts';
import { toDecimal } from '#src/lib/money.ts';
import { insertNewPayout, type NewPayout } from '#src/payouts/lifecycle.ts';
import { readPayoutPage, toPayoutResource } from '#src/payouts/resource.ts';
import { authenticateApiKey } from '#src/tenants/auth.ts';
import { PlainError, plainCursor } from './plain-sql.ts';

/**
 * The second baseline: the service's own statements (authentication with the stored response in
 * one query, the one-statement create, the one-statement page) and its own row-to-resource code,
 * as prepared statements through `pg`, with nothing of the service's framework around them: no
 * router, no tRPC, no input or output validation, no middleware. It is the physical limit of the
 * service's SQL on this machine; the service's ratio to it is what its framework costs.
 */

export interface SameSql {
  create(
    apiKey: string | undefined,
    idempotencyKey: string,
    rawBody: string,
  ): Promise<{ status: number; body: string }>;
  list(apiKey: string | undefined, limit: number, cursor: string | undefined): Promise<string>;
}

interface PayoutInput {
  destination_type: NewPayout['destinationType'];
  destination_country: string;
  destination_currency: string;
  destination_amount: number | string;
  destination_account_unique: string;
  destination_provider_name: string;
  destination_provider_code?: string;
  destination_account_name?: string;
  merchant_reference?: string;
  metadata?: Record<string, string>;
  notification_url?: string;
}

export function sameSql(pool: pg.Pool): SameSql {
  const sql: Sql = poolSql(pool);
  const responseKey = randomBytes(32);

  async function principalOf(apiKey: string | undefined, idempotencyKey: string | null) {
    const found = await authenticateApiKey(sql, apiKey, idempotencyKey);
    if (!found) throw new PlainError(401, 'UNAUTHENTICATED');
    return found;
  }

  return {
    async create(apiKey, idempotencyKey, rawBody) {
      const { principal, stored } = await principalOf(apiKey, idempotencyKey);
      const fingerprint = requestFingerprint('payouts.create', rawBody);
      if (stored) {
        if (stored.fingerprint !== fingerprint) throw new PlainError(422, 'IDEMPOTENCY_KEY_REUSED');
        return { status: stored.status, body: decryptSecret(responseKey, stored.sealedBody) };
      }
      if (!principal.tenant.payoutsApproved) throw new PlainError(403, 'TENANT_NOT_APPROVED');
      const input = JSON.parse(rawBody) as PayoutInput;
      const { json } = await insertNewPayout(
        sql,
        {
          id: newId(),
          tenantId: principal.tenant.id,
          merchantReference: input.merchant_reference ?? null,
          metadata: input.metadata ?? {},
          notificationUrl: input.notification_url ?? null,
          destinationType: input.destination_type,
          destinationCountry: input.destination_country,
          destinationCurrency: input.destination_currency,
          destinationAmount: toDecimal(input.destination_amount),
          destinationAccountUnique: input.destination_account_unique,
          destinationProviderName: input.destination_provider_name,
          destinationProviderCode: input.destination_provider_code ?? null,
          destinationAccountName: input.destination_account_name ?? null,
          settlementCurrency: 'USDT',
          settlementNetwork: 'TRON',
          quoteId: null,
          payee: null,
        },
        {
          now: new Date(),
          note: { metadata: { request_id: 'req_same_sql' } },
          idempotent: {
            tenantId: principal.tenant.id,
            key: idempotencyKey,
            fingerprint,
            status: 201,
            seal: (body) => sealResponse(responseKey, body),
          },
        },
      );
      return { status: 201, body: json };
    },

    async list(apiKey, limit, cursor) {
      const { principal } = await principalOf(apiKey, null);
      let after: { createdAt: Date; id: string } | null = null;
      if (cursor) {
        const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [
          string,
          string,
        ];
        after = { createdAt: toDate(createdAt), id };
      }
      const rows = await readPayoutPage(sql, { tenantId: principal.tenant.id, limit: limit + 1, after });
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      const hasMore = rows.length > limit;
      return JSON.stringify({
        data: page.map(toPayoutResource),
        meta: {
          next_cursor: hasMore && last ? plainCursor(toDate(last.created_at), last.id) : null,
          has_more: hasMore,
          limit,
        },
      });
    },
  };
}
