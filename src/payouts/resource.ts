import type BigNumber from 'bignumber.js';
import { z } from 'zod';
import { isoTimestamp, type Sql, type Statement, statement } from '#src/db/sql.ts';
import type { PageMeta } from '#src/http/pagination.ts';
import {
  currencyOut,
  destinationTypeSchema,
  documentedAs,
  iso,
  moneyJson,
  moneyOut,
  railSchema,
  timestampOut,
} from '#src/http/schemas.ts';
import type { PaymentInstruction } from '#src/instructions/entities.ts';
import { PAYEE_CHECKS, type PayeeCheck } from '#src/payees/name-match.ts';
import { PAYOUT_STATUSES, type PayoutStatus } from './entities.ts';
import { metadataOut, orderedMetadata, type PayoutMetadata } from './metadata.ts';

/** The Payout resource of the contract, the same in responses and in webhook payloads. */

export const payoutStatusSchema = z.enum(PAYOUT_STATUSES).meta({
  id: 'PayoutStatus',
  description:
    'CREATED → PENDING_PAYMENT (instruction generated) → PAYMENT_RECEIVED → PROCESSING → SUCCESSFUL; ' +
    'FAILED and EXPIRED are terminal too (see /docs/machines).',
});

const instructionFields = {
  id: z.string(),
  rail: railSchema,
  account_unique: z
    .string()
    .describe('Where to pay: the USDT address (CRYPTO) or the virtual account number (BANK_TRANSFER).'),
  provider_name: z.string(),
  network: z
    .string()
    .nullable()
    .describe('The USDT network of a crypto instruction; null for BANK_TRANSFER.'),
  expected_amount: moneyOut.describe('Pay exactly this amount, in expected_currency.'),
  expected_currency: currencyOut,
  payment_status: z.enum(['UNPAID', 'PAID', 'EXPIRED']).meta({ id: 'PaymentStatus' }),
  expires_at: timestampOut.describe('Pay before this time; afterwards the payout ends EXPIRED.'),
  paid_at: timestampOut.nullable(),
};

export const instructionSummaryOut = z.object(instructionFields).meta({
  id: 'PaymentInstructionSummary',
  description: 'What the merchant must pay, where and by when: the active instruction of a payout.',
});

export const instructionOut = z
  .object({ ...instructionFields, payout_id: z.string(), created_at: timestampOut })
  .meta({ id: 'PaymentInstruction', description: 'The payment instruction of one payout.' });

export const statusLogOut = z
  .object({
    from_status: payoutStatusSchema.nullable(),
    to_status: payoutStatusSchema,
    triggered_by: z.enum(['SYSTEM', 'API', 'PROCESSOR_WEBHOOK', 'ADMIN']).meta({ id: 'TriggeredBy' }),
    reason_code: z.string().describe('Why, e.g. PAYOUT_CREATED, INSTRUCTION_GENERATED, ACCOUNT_CLOSED.'),
    reason_detail: z.record(z.string(), z.unknown()).nullable(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
    created_at: timestampOut,
  })
  .meta({
    id: 'StatusLog',
    description: 'One status change of a payout; the timeline is its authoritative history.',
  });

export const payeeNameCheckOut = z
  .object({
    result: z
      .enum(PAYEE_CHECKS)
      .meta({ id: 'PayeeNameCheckResult' })
      .describe(
        'MATCH, CLOSE_MATCH or NO_MATCH (as Confirmation of Payee and Verification of Payee answer); PENDING until the institution answers; UNAVAILABLE when it could not answer before the payment instruction was due.',
      ),
    institution_name: z
      .string()
      .nullable()
      .describe(
        'The name the institution holds for the account, given with CLOSE_MATCH only (null otherwise).',
      ),
    checked_at: timestampOut.nullable().describe('When the institution answered; null while PENDING.'),
  })
  .meta({
    id: 'PayeeNameCheck',
    description:
      "destination_account_name against the name the institution holds for the account (docs/payee-check.md). A NO_MATCH is paid, held for an operator's decision, or refused at creation, by your tenant's policy.",
  });

export const payoutOut = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    status: payoutStatusSchema,
    merchant_reference: z.string().nullable(),
    metadata: metadataOut,
    notification_url: z.string().nullable().describe('Per-payout webhook URL, if set.'),
    destination_type: destinationTypeSchema,
    destination_country: z.string(),
    destination_currency: currencyOut,
    destination_amount: moneyOut.describe('What the beneficiary receives.'),
    destination_account_unique: z.string(),
    destination_provider_name: z.string(),
    destination_provider_code: z.string().nullable(),
    destination_account_name: z.string().nullable(),
    payee_name_check: payeeNameCheckOut
      .nullable()
      .describe(
        'The payee name check; null where none applies (crypto wallets, payouts made before it existed).',
      ),
    settlement_currency: documentedAs('SettlementCurrency'),
    settlement_amount: moneyOut.describe('What the merchant owes; 0 until the instruction is generated.'),
    exchange_rate: moneyOut.describe(
      'Destination units per 1 settlement unit; 0 until the instruction is generated.',
    ),
    platform_fee_amount: moneyOut,
    platform_fee_currency: documentedAs('SettlementCurrency'),
    network_fee_amount: moneyOut,
    network_fee_currency: documentedAs('SettlementCurrency'),
    total_fee_amount: moneyOut,
    total_fee_currency: documentedAs('SettlementCurrency'),
    is_refunded: z.boolean().describe('True once a refund has been raised for the failed payout.'),
    refund_reference: z.string().nullable().describe('The id of the refund, once raised.'),
    payment_instruction: instructionSummaryOut
      .nullable()
      .describe('The active instruction; null until generated (status CREATED).'),
    status_timeline: z.array(statusLogOut).describe('Every status change, oldest first.'),
    created_at: timestampOut,
    updated_at: timestampOut,
  })
  .meta({ id: 'Payout', description: 'A payout with its active payment instruction and its full timeline.' });
export type PayoutResource = z.input<typeof payoutOut>;
export type StatusLogResource = z.input<typeof statusLogOut>;

type Money = BigNumber.Value;
/** A timestamp as read (PostgreSQL's text) or made in memory. */
type Timestamp = string | Date;

/**
 * A payout as its resource shows it: the columns (snake_case, as read), its current instruction
 * and its timeline, oldest first. Read with {@link readPayouts}; built in memory when a
 * transaction has just written it, so that a response or an event payload never reads back what
 * it wrote.
 */
export interface PayoutView {
  id: string;
  tenant_id: string;
  status: PayoutStatus;
  merchant_reference: string | null;
  metadata: PayoutMetadata;
  notification_url: string | null;
  destination_type: 'MOBILE_MONEY' | 'BANK_ACCOUNT' | 'CRYPTO_WALLET';
  destination_country: string;
  destination_currency: string;
  destination_amount: Money;
  destination_account_unique: string;
  destination_provider_name: string;
  destination_provider_code: string | null;
  destination_account_name: string | null;
  payee_check: PayeeCheck | null;
  payee_institution_name: string | null;
  payee_checked_at: Timestamp | null;
  settlement_currency: string;
  settlement_amount: Money;
  exchange_rate: Money;
  platform_fee_amount: Money;
  network_fee_amount: Money;
  total_fee_amount: Money;
  is_refunded: boolean;
  refund_reference: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  instruction: InstructionView | null;
  timeline: StatusLogView[];
}

export interface InstructionView {
  id: string;
  rail: 'CRYPTO' | 'BANK_TRANSFER';
  account_unique: string;
  provider_name: string;
  network: string | null;
  expected_amount: Money;
  expected_currency: string;
  status: 'UNPAID' | 'PAID' | 'EXPIRED';
  expires_at: Timestamp;
  paid_at: Timestamp | null;
  created_at: Timestamp;
}

export interface StatusLogView {
  from_status: PayoutStatus | null;
  to_status: PayoutStatus;
  triggered_by: 'SYSTEM' | 'API' | 'PROCESSOR_WEBHOOK' | 'ADMIN';
  reason_code: string;
  reason_detail: Record<string, unknown> | null;
  metadata: Record<string, unknown> | null;
  created_at: Timestamp;
}

/** ISO-8601 UTC of a timestamp as read or made. */
export function isoOf(value: Timestamp): string {
  return isoTimestamp(value);
}

function isoOrNull(value: Timestamp | null): string | null {
  return value === null ? null : isoOf(value);
}

export function toInstructionSummary(i: InstructionView): z.input<typeof instructionSummaryOut> {
  return {
    id: i.id,
    rail: i.rail,
    account_unique: i.account_unique,
    provider_name: i.provider_name,
    network: i.network,
    expected_amount: moneyJson(i.expected_amount),
    expected_currency: i.expected_currency,
    payment_status: i.status,
    expires_at: isoOf(i.expires_at),
    paid_at: isoOrNull(i.paid_at),
  };
}

/** The standalone PaymentInstruction resource. */
export function toInstruction(i: PaymentInstruction, payoutId: string): z.input<typeof instructionOut> {
  return {
    id: i.id,
    rail: i.rail,
    account_unique: i.accountUnique,
    provider_name: i.providerName,
    network: i.network ?? null,
    expected_amount: moneyJson(i.expectedAmount),
    expected_currency: i.expectedCurrency,
    payment_status: i.status,
    expires_at: iso(i.expiresAt),
    paid_at: iso(i.paidAt ?? null),
    payout_id: payoutId,
    created_at: iso(i.createdAt),
  };
}

export function toStatusLog(log: StatusLogView): StatusLogResource {
  return {
    from_status: log.from_status,
    to_status: log.to_status,
    triggered_by: log.triggered_by,
    reason_code: log.reason_code,
    reason_detail: log.reason_detail,
    metadata: log.metadata,
    created_at: isoOf(log.created_at),
  };
}

/** The check as merchants see it: the institution's name only with a CLOSE_MATCH, as Confirmation of Payee gives it. */
function toPayeeNameCheck(p: PayoutView): PayoutResource['payee_name_check'] {
  if (p.payee_check === null) return null;
  return {
    result: p.payee_check,
    institution_name: p.payee_check === 'CLOSE_MATCH' ? p.payee_institution_name : null,
    checked_at: p.payee_checked_at === null ? null : isoOf(p.payee_checked_at),
  };
}

export function toPayoutResource(p: PayoutView): PayoutResource {
  const settlement = p.settlement_currency;
  return {
    id: p.id,
    tenant_id: p.tenant_id,
    status: p.status,
    merchant_reference: p.merchant_reference,
    metadata: orderedMetadata(p.metadata),
    notification_url: p.notification_url,
    destination_type: p.destination_type,
    destination_country: p.destination_country,
    destination_currency: p.destination_currency,
    destination_amount: moneyJson(p.destination_amount),
    destination_account_unique: p.destination_account_unique,
    destination_provider_name: p.destination_provider_name,
    destination_provider_code: p.destination_provider_code,
    destination_account_name: p.destination_account_name,
    payee_name_check: toPayeeNameCheck(p),
    settlement_currency: settlement,
    settlement_amount: moneyJson(p.settlement_amount),
    exchange_rate: moneyJson(p.exchange_rate),
    platform_fee_amount: moneyJson(p.platform_fee_amount),
    platform_fee_currency: settlement,
    network_fee_amount: moneyJson(p.network_fee_amount),
    network_fee_currency: settlement,
    total_fee_amount: moneyJson(p.total_fee_amount),
    total_fee_currency: settlement,
    is_refunded: p.is_refunded,
    refund_reference: p.refund_reference,
    payment_instruction: p.instruction ? toInstructionSummary(p.instruction) : null,
    status_timeline: p.timeline.map(toStatusLog),
    created_at: isoOf(p.created_at),
    updated_at: isoOf(p.updated_at),
  };
}

/** A page of payouts as `GET /v1/payouts` answers it: each row as its resource, with the page's meta. */
export function toPayoutPage(
  items: readonly PayoutView[],
  meta: PageMeta,
): { data: PayoutResource[]; meta: PageMeta } {
  return { data: items.map(toPayoutResource), meta };
}

// One statement reads payouts whole: the instruction and the timeline come aggregated with each
// row (money as text inside JSON, never as a JSON number that would be parsed into a float).
const selectView = (extra = '') => `
  select ${extra}p.id, p.tenant_id, p.status, p.merchant_reference, p.metadata, p.notification_url, p.destination_type,
         p.destination_country, p.destination_currency, p.destination_amount, p.destination_account_unique,
         p.destination_provider_name, p.destination_provider_code, p.destination_account_name,
         p.payee_check, p.payee_institution_name, p.payee_checked_at, p.settlement_currency, p.settlement_amount, p.exchange_rate, p.platform_fee_amount,
         p.network_fee_amount, p.total_fee_amount, p.is_refunded, p.refund_reference, p.created_at, p.updated_at,
         (select json_build_object('id', i.id, 'rail', i.rail, 'account_unique', i.account_unique,
                   'provider_name', i.provider_name, 'network', i.network, 'expected_amount', i.expected_amount::text,
                   'expected_currency', i.expected_currency, 'status', i.status, 'expires_at', i.expires_at,
                   'paid_at', i.paid_at, 'created_at', i.created_at)
            from payment_instructions i where i.payout_id = p.id and i.tenant_id = p.tenant_id) as instruction,
         coalesce((select json_agg(json_build_object('from_status', t.from_status, 'to_status', t.to_status,
                   'triggered_by', t.triggered_by, 'reason_code', t.reason_code, 'reason_detail', t.reason_detail,
                   'metadata', t.metadata, 'created_at', t.created_at) order by t.created_at, t.id)
            from payout_status_timeline t where t.payout_id = p.id and t.tenant_id = p.tenant_id), '[]') as timeline
    from payouts p`;
const SELECT_VIEW = selectView();

// The batch reads look up each payout's instruction and timeline through subqueries: planned for
// each batch (see `statement`), never with a plan made while those tables were nearly empty.
const byIds = statement('payouts_by_ids', `${SELECT_VIEW} where p.id = any($1::uuid[]) order by p.id`, {
  replan: true,
});
const byIdsLocked = statement(
  'payouts_by_ids_locked',
  `${selectView('p.snapshot, p.received_amount, ')} where p.id = any($1::uuid[]) order by p.id for update of p`,
  { replan: true },
);
// The same, `$2` holding the payouts' tenants: the same rows, by their primary key `(id, tenant_id)`,
// on those tenants' nodes alone once sharded.
const byIdsOfTenants = statement(
  'payouts_by_ids_of_tenants',
  `${SELECT_VIEW} where p.id = any($1::uuid[]) and p.tenant_id = any($2::uuid[]) order by p.id`,
  { replan: true },
);
const byIdsOfTenantsLocked = statement(
  'payouts_by_ids_of_tenants_locked',
  `${selectView('p.snapshot, p.received_amount, ')} where p.id = any($1::uuid[]) and p.tenant_id = any($2::uuid[])
    order by p.id for update of p`,
  { replan: true },
);
const oneOfTenant = statement('payout_of_tenant', `${SELECT_VIEW} where p.id = $1 and p.tenant_id = $2`);
const firstPage = statement(
  'payouts_first_page',
  `${SELECT_VIEW} where p.tenant_id = $1 order by p.created_at desc, p.id desc limit $2`,
);
// The row comparison is what lets the index on (tenant_id, created_at, id) start at the cursor.
const nextPage = statement(
  'payouts_next_page',
  `${SELECT_VIEW} where p.tenant_id = $1 and (p.created_at, p.id) < ($2::timestamptz, $3::uuid)
    order by p.created_at desc, p.id desc limit $4`,
);

/**
 * Payouts with their instruction and timeline by id, in id order; with `tenants` (the payouts'
 * tenants, when the caller knows them) by id and tenant.
 */
export function readPayouts(
  sql: Sql,
  ids: readonly string[],
  tenants?: readonly string[],
): Promise<PayoutView[]> {
  if (tenants) return sql.rows<PayoutView>(byIdsOfTenants, [ids, [...new Set(tenants)]]);
  return sql.rows<PayoutView>(byIds, [ids]);
}

/** A payout read to change its status: its view and its machine's persisted snapshot. */
export interface LockedPayout extends PayoutView {
  snapshot: Record<string, unknown>;
  /** Everything attributed to the payout so far. */
  received_amount: Money;
}

/**
 * Payouts by id with their rows locked FOR UPDATE until the caller's transaction ends, in id order
 * (the one lock order for payouts, so that two batches never wait on each other in a cycle); with
 * `tenants` (the payouts' tenants, when the caller knows them) by id and tenant.
 */
export function lockPayouts(
  tx: Sql,
  ids: readonly string[],
  tenants?: readonly string[],
): Promise<LockedPayout[]> {
  const sorted = [...new Set(ids)].sort();
  if (tenants) return tx.rows<LockedPayout>(byIdsOfTenantsLocked, [sorted, [...new Set(tenants)]]);
  return tx.rows<LockedPayout>(byIdsLocked, [sorted]);
}

/** One payout of one tenant, or null (another tenant's payout does not exist for this one). */
export async function readTenantPayout(sql: Sql, tenantId: string, id: string): Promise<PayoutView | null> {
  const [row] = await sql.rows<PayoutView>(oneOfTenant, [id, tenantId]);
  return row ?? null;
}

/** What `GET /v1/payouts` can be narrowed to; every filter given must hold. */
export interface PayoutFilters {
  status?: PayoutStatus;
  merchantReference?: string;
  /** Created at or after this time. */
  createdAfter?: Date;
  /** Created strictly before this time: consecutive windows neither overlap nor leave gaps. */
  createdBefore?: Date;
}

// Each filter is one condition on a bound value; the conditions of the filters given make one
// statement per combination, declared when first used. Every combination has an index that reads
// its rows in page order (tenant_id, then status or merchant_reference, then created_at and id),
// so a page of a filtered list is as cheap as a page of the whole list: see the migration
// `list_filters` and test/db/list-plans.test.ts.
const FILTER_CONDITIONS: { [K in keyof Required<PayoutFilters>]: string } = {
  status: 'p.status = $',
  merchantReference: 'p.merchant_reference = $',
  createdAfter: 'p.created_at >= $::timestamptz',
  createdBefore: 'p.created_at < $::timestamptz',
};
const FILTER_NAMES = Object.keys(FILTER_CONDITIONS) as (keyof PayoutFilters)[];
const filteredPages = new Map<string, Statement>();

function filteredPage(filters: readonly (keyof PayoutFilters)[], after: boolean): Statement {
  const key = `${filters.map((f) => FILTER_NAMES.indexOf(f)).join('')}${after ? 'c' : ''}`;
  let found = filteredPages.get(key);
  if (!found) {
    let n = 1;
    const conditions = ['p.tenant_id = $1'];
    for (const filter of filters) conditions.push(FILTER_CONDITIONS[filter].replace('$', `$${++n}`));
    if (after) conditions.push(`(p.created_at, p.id) < ($${++n}::timestamptz, $${++n}::uuid)`);
    found = statement(
      `payouts_page_${key}`,
      `${SELECT_VIEW} where ${conditions.join(' and ')} order by p.created_at desc, p.id desc limit $${++n}`,
    );
    filteredPages.set(key, found);
  }
  return found;
}

/**
 * The statement and values of a page of a tenant's payouts, newest first: those matching
 * `filters`, after the position `after` when given.
 */
export function payoutPageQuery(args: {
  tenantId: string;
  limit: number;
  after: { createdAt: Date; id: string } | null;
  filters?: PayoutFilters;
}): { statement: Statement; values: unknown[] } {
  const filters = FILTER_NAMES.filter((name) => args.filters?.[name] !== undefined);
  const position = args.after ? [args.after.createdAt, args.after.id] : [];
  if (filters.length === 0) {
    return args.after
      ? { statement: nextPage, values: [args.tenantId, ...position, args.limit] }
      : { statement: firstPage, values: [args.tenantId, args.limit] };
  }
  return {
    statement: filteredPage(filters, args.after !== null),
    values: [args.tenantId, ...filters.map((name) => args.filters?.[name]), ...position, args.limit],
  };
}

/** Up to `limit` payouts of a tenant matching `filters`, newest first, after the position `after` when given. */
export function readPayoutPage(
  sql: Sql,
  args: {
    tenantId: string;
    limit: number;
    after: { createdAt: Date; id: string } | null;
    filters?: PayoutFilters;
  },
): Promise<PayoutView[]> {
  const { statement: page, values } = payoutPageQuery(args);
  return sql.rows<PayoutView>(page, values);
}
