import { z } from 'zod';
import { NETWORKS, type Network } from '#src/corridors/corridors.ts';
import type { Logger } from '#src/lib/log.ts';
import { toDecimal } from '#src/lib/money.ts';
import { isChainAddress } from './addresses.ts';
import {
  createHttpClient,
  errorCode,
  type HttpClient,
  type ProviderCallMetrics,
  type ProviderResponse,
  parse,
  send,
  unavailable,
  unexpected,
} from './http-client.ts';
import type {
  BankCredit,
  BankDebit,
  BankGateway,
  BankReversal,
  ChainGateway,
  ChainSendLine,
  ChainTransfer,
  PayoutProcessor,
  ProcessorResult,
  Rails,
  RailTransfer,
  SettledPayout,
  SettlementChange,
} from './rails.ts';

/**
 * Adapters for the money-moving providers' HTTP API (the sandbox serves the same one): chains,
 * the NGN bank and the payout processor. They build requests and parse responses; the shared
 * client does the HTTP and never retries a POST, so a call that moves money is repeated only by
 * its caller, with the same reference. A 404 means "never heard of it" only when the provider
 * says so by its error code; an answer they cannot make sense of is a ProviderUnavailableError.
 */

const decimalString = z.string().regex(/^\d+(\.\d+)?$/, 'must be a decimal string');

const addressBody = z.object({ address: z.string() });

/** What a chain says of every transfer it lists, into the service's addresses or out of its hot wallet. */
const chainLine = z.object({
  tx_hash: z.string().min(1),
  network: z.enum(NETWORKS),
  to_address: z.string().min(1),
  amount: decimalString,
  currency: z.literal('USDT'),
  block_number: z.number().int().nonnegative(),
  block_time: z.iso.datetime({ offset: true }),
});

/** One page of a chain's listing: where the next page starts, and the chain's tip and its time. */
const chainPage = z.object({
  next_cursor: z.string().min(1).nullable(),
  tip: z.number().int().nonnegative(),
  tip_time: z.iso.datetime({ offset: true }),
});

const transfersBody = chainPage.extend({
  transfers: z.array(chainLine.extend({ from_address: z.string().min(1) })),
});

const sendsBody = chainPage.extend({
  sends: z.array(chainLine.extend({ reference: z.string().min(1) })),
});

const statementBody = z.object({
  credits: z.array(
    z.object({
      // A line without a type is a credit; REVERSAL takes back the credit it names; DEBIT is a
      // transfer the bank sent for the service, under the service's `reference`.
      type: z.enum(['CREDIT', 'REVERSAL', 'DEBIT']).default('CREDIT'),
      reverses_session_id: z.string().min(1).max(128).nullish(),
      reference: z.string().min(1).max(200).nullish(),
      session_id: z.string().min(1).max(128),
      account_number: z.string().min(1).max(128),
      // A decimal string, never a JSON number: the amount arrives with exactly the bank's digits.
      amount: z.string().regex(/^\d+(\.\d{1,2})?$/, 'must be a decimal string with at most 2 decimals'),
      currency: z.literal('NGN'),
      payer_name: z.string().max(200).nullable(),
      payer_account: z.string().max(128).nullable(),
      occurred_at: z.iso.datetime({ offset: true }),
    }),
  ),
  next_cursor: z.string().min(1).nullable(),
  as_of: z.iso.datetime({ offset: true }),
});

const settlementReportBody = z.object({
  date: z.string(),
  transfers: z.array(
    z.object({
      reference: z.string().min(1),
      processor_reference: z.string().min(1).nullable(),
      amount: decimalString,
      currency: z.string().min(3).max(8),
      status: z.enum(['SUCCESSFUL', 'FAILED', 'RETURNED']),
      failure_code: z.string().min(1).nullable(),
      settled_at: z.iso.datetime({ offset: true }),
      returned_at: z.iso.datetime({ offset: true }).nullable(),
    }),
  ),
  next_cursor: z.string().min(1).nullable(),
  complete: z.boolean(),
});

const reportLine = settlementReportBody.shape.transfers.element;

const settlementChangesBody = z.object({
  transfers: z.array(reportLine.extend({ changed_at: z.iso.datetime({ offset: true }) })),
  next_cursor: z.string().min(1).nullable(),
  as_of: z.iso.datetime({ offset: true }),
});

/** A settlement report line as the service reads it. */
function settledPayout(t: z.infer<typeof reportLine>): SettledPayout {
  return {
    reference: t.reference,
    processorReference: t.processor_reference,
    amount: toDecimal(t.amount),
    currency: t.currency,
    status: t.status,
    failureCode: t.failure_code,
    settledAt: new Date(t.settled_at),
    returnedAt: t.returned_at === null ? null : new Date(t.returned_at),
  };
}

/** Report lines as read, refused when a returned payout does not say when it was returned. */
function withReturnTimes<T extends SettledPayout>(client: HttpClient, payouts: T[]): T[] {
  if (payouts.some((p) => p.status === 'RETURNED' && p.returnedAt === null)) {
    throw unavailable(client, 'a returned payout without its return time');
  }
  return payouts;
}

const railTransferBody = z.object({
  reference: z.string(),
  status: z.enum(['PENDING', 'SUCCESSFUL', 'FAILED']),
  provider_reference: z.string().min(1).nullable(),
  failure_reason: z.string().nullable(),
});

const virtualAccountBody = z.object({
  account_number: z.string().regex(/^\d{10}$/, 'must be 10 digits'),
  bank_name: z.string().min(1),
  bank_code: z.string().min(1),
});

const processorBody = z
  .object({
    reference: z.string(),
    status: z.enum(['ACCEPTED', 'SUCCESSFUL', 'FAILED']),
    processor_reference: z.string().min(1).nullable(),
    failure_code: z.string().min(1).nullable(),
    failure_reason: z.string().nullable(),
    retryable: z.boolean(),
  })
  // The outflow records why it failed; a failure without a code cannot be recorded honestly.
  .refine((b) => b.status !== 'FAILED' || b.failure_code !== null, {
    path: ['failure_code'],
    message: 'is required when status is FAILED',
  });

/** Which 404 error codes mean "no such transfer or payout" rather than "wrong URL". */
const UNKNOWN_REFERENCE_CODES: ReadonlySet<string> = new Set(['TRANSFER_NOT_FOUND', 'PAYOUT_NOT_FOUND']);

/** Chains (USDT on TRON and BSC) over HTTP. */
export function httpChainGateway(client: HttpClient): ChainGateway {
  return {
    async createAddress(network, label) {
      const response = await send(client, {
        method: 'POST',
        path: `chains/${network}/addresses`,
        json: { label },
      });
      if (response.status !== 200 && response.status !== 201) throw unexpected(client, response);
      const { address } = parse(client, addressBody, response.body);
      if (!isChainAddress(network, address)) throw unavailable(client, `not a ${network} address`);
      return { address };
    },

    async listTransfers(network, args) {
      const body = parse(client, transfersBody, await getChainPage(client, network, 'transfers', args));
      const transfers = body.transfers.map(
        (t): ChainTransfer => ({
          ...chainLineOf(client, network, body.tip, 'transfer', t),
          fromAddress: t.from_address,
        }),
      );
      return { transfers, nextCursor: body.next_cursor, tip: body.tip, tipTime: new Date(body.tip_time) };
    },

    async listSends(network, args) {
      const body = parse(client, sendsBody, await getChainPage(client, network, 'sends', args));
      const sends = body.sends.map(
        (t): ChainSendLine => ({
          reference: t.reference,
          ...chainLineOf(client, network, body.tip, 'send', t),
        }),
      );
      return { sends, nextCursor: body.next_cursor, tip: body.tip, tipTime: new Date(body.tip_time) };
    },

    async send(network, args) {
      const response = await send(client, {
        method: 'POST',
        path: `chains/${network}/sends`,
        json: { reference: args.reference, to_address: args.toAddress, amount: args.amount.toFixed() },
      });
      return railTransfer(client, response, args.reference);
    },

    async sendStatus(network, reference) {
      const response = await send(client, {
        method: 'GET',
        path: `chains/${network}/sends/${encodeURIComponent(reference)}`,
      });
      return isUnknownReference(response) ? null : railTransfer(client, response, reference);
    },
  };
}

/** The body of one page of a chain's `transfers` or `sends` listing after `cursor`. */
async function getChainPage(
  client: HttpClient,
  network: Network,
  listing: 'transfers' | 'sends',
  args: { cursor: string | null; limit: number },
): Promise<unknown> {
  const searchParams: Record<string, string> = { limit: String(args.limit) };
  if (args.cursor !== null) searchParams['cursor'] = args.cursor;
  const response = await send(client, { method: 'GET', path: `chains/${network}/${listing}`, searchParams });
  if (response.status !== 200) throw unexpected(client, response);
  return response.body;
}

/**
 * A listed line's common fields; a line from another chain, or from a block the chain has not
 * reached, is not one we can count.
 */
function chainLineOf(
  client: HttpClient,
  network: Network,
  tip: number,
  noun: string,
  t: z.infer<typeof chainLine>,
) {
  if (t.network !== network) throw unavailable(client, `${noun} listed for ${t.network}`);
  if (t.block_number > tip) throw unavailable(client, `${noun} in a block beyond the tip`);
  return {
    txHash: t.tx_hash,
    network: t.network,
    toAddress: t.to_address,
    amount: toDecimal(t.amount),
    currency: t.currency,
    blockNumber: t.block_number,
    blockTime: new Date(t.block_time),
  };
}

/** The NGN bank (virtual accounts and transfers out) over HTTP. */
export function httpBankGateway(client: HttpClient): BankGateway {
  return {
    async createVirtualAccount(args) {
      const response = await send(client, {
        method: 'POST',
        path: 'bank/virtual-accounts',
        json: {
          reference: args.reference,
          account_name: args.accountName,
          callback_url: args.callbackUrl,
          expires_at: args.expiresAt.toISOString(),
        },
      });
      if (response.status !== 200 && response.status !== 201) throw unexpected(client, response);
      const body = parse(client, virtualAccountBody, response.body);
      return { accountNumber: body.account_number, bankName: body.bank_name, bankCode: body.bank_code };
    },

    async send(args) {
      const response = await send(client, {
        method: 'POST',
        path: 'bank/transfers',
        json: {
          reference: args.reference,
          bank_code: args.bankCode,
          account_number: args.accountNumber,
          account_name: args.accountName,
          amount: args.amount.toFixed(),
          narration: args.narration,
        },
      });
      return railTransfer(client, response, args.reference);
    },

    async sendStatus(reference) {
      const response = await send(client, {
        method: 'GET',
        path: `bank/transfers/${encodeURIComponent(reference)}`,
      });
      return isUnknownReference(response) ? null : railTransfer(client, response, reference);
    },

    async listCredits(args) {
      const searchParams: Record<string, string> = { limit: String(args.limit) };
      if (args.cursor !== null) searchParams['cursor'] = args.cursor;
      const response = await send(client, { method: 'GET', path: 'bank/statement', searchParams });
      if (response.status !== 200) throw unexpected(client, response);
      const body = parse(client, statementBody, response.body);
      const reversals: BankReversal[] = [];
      for (const r of body.credits) {
        if (r.type !== 'REVERSAL') continue;
        if (!r.reverses_session_id) throw unavailable(client, 'a reversal that names no credit');
        reversals.push({
          sessionId: r.session_id,
          reversesSessionId: r.reverses_session_id,
          accountNumber: r.account_number,
          amount: toDecimal(r.amount),
          currency: r.currency,
          occurredAt: new Date(r.occurred_at),
        });
      }
      const debits: BankDebit[] = [];
      for (const d of body.credits) {
        if (d.type !== 'DEBIT') continue;
        if (!d.reference) throw unavailable(client, 'a debit without the reference it was sent under');
        debits.push({
          sessionId: d.session_id,
          reference: d.reference,
          amount: toDecimal(d.amount),
          currency: d.currency,
          occurredAt: new Date(d.occurred_at),
        });
      }
      const credits = body.credits
        .filter((c) => c.type === 'CREDIT')
        .map(
          (c): BankCredit => ({
            sessionId: c.session_id,
            accountNumber: c.account_number,
            amount: toDecimal(c.amount),
            currency: c.currency,
            payerName: c.payer_name,
            payerAccount: c.payer_account,
            occurredAt: new Date(c.occurred_at),
          }),
        );
      if ([...credits, ...reversals, ...debits].some((c) => !c.amount.gt(0))) {
        throw unavailable(client, 'a statement line of no amount');
      }
      return {
        credits,
        reversals,
        debits,
        lines: body.credits.length,
        nextCursor: body.next_cursor,
        asOf: new Date(body.as_of),
      };
    },
  };
}

/** The payout processor over HTTP; `name` is what outflows record as their processor. */
export function httpPayoutProcessor(client: HttpClient, name: string): PayoutProcessor {
  return {
    name,

    async submit(args) {
      const response = await send(client, {
        method: 'POST',
        path: 'processor/payouts',
        json: {
          reference: args.reference,
          attempt: args.attempt,
          destination_type: args.destinationType,
          country: args.country,
          currency: args.currency,
          amount: args.amount.toFixed(),
          account_unique: args.accountUnique,
          provider_code: args.providerCode,
          provider_name: args.providerName,
          account_name: args.accountName,
          callback_url: args.callbackUrl,
        },
      });
      return processorResult(client, response, args.reference);
    },

    async query(reference) {
      const response = await send(client, {
        method: 'GET',
        path: `processor/payouts/${encodeURIComponent(reference)}`,
      });
      return isUnknownReference(response) ? null : processorResult(client, response, reference);
    },

    async settlementReport(day, args) {
      const searchParams: Record<string, string> = { date: day, limit: String(args.limit) };
      if (args.cursor !== null) searchParams['cursor'] = args.cursor;
      const response = await send(client, { method: 'GET', path: 'processor/settlements', searchParams });
      if (response.status !== 200) throw unexpected(client, response);
      const body = parse(client, settlementReportBody, response.body);
      if (body.date !== day) throw unavailable(client, 'a settlement report of another day');
      const payouts = withReturnTimes(client, body.transfers.map(settledPayout));
      return { payouts, nextCursor: body.next_cursor, complete: body.complete };
    },

    async settlementChanges(args) {
      const searchParams: Record<string, string> = { limit: String(args.limit) };
      if (args.cursor !== null) searchParams['cursor'] = args.cursor;
      const response = await send(client, {
        method: 'GET',
        path: 'processor/settlements/changes',
        searchParams,
      });
      if (response.status !== 200) throw unexpected(client, response);
      const body = parse(client, settlementChangesBody, response.body);
      const payouts = withReturnTimes(
        client,
        body.transfers.map(
          (t): SettlementChange => ({ ...settledPayout(t), changedAt: new Date(t.changed_at) }),
        ),
      );
      return { payouts, nextCursor: body.next_cursor, asOf: new Date(body.as_of) };
    },
  };
}

/** The processor's name when none is configured. */
export const DEFAULT_PROCESSOR_NAME = 'payout-processor';

/** Every money-moving provider, talking to one provider base URL (the sandbox's, or a real gateway's). */
export function httpRails(options: {
  baseUrl: string;
  timeoutMs: number;
  log: Logger;
  metrics?: ProviderCallMetrics;
  retryBaseMs?: number;
  processorName?: string;
}): Rails {
  const client = (name: string) => createHttpClient({ ...options, name });
  return {
    chains: httpChainGateway(client('chains')),
    bank: httpBankGateway(client('bank')),
    processor: httpPayoutProcessor(client('processor'), options.processorName ?? DEFAULT_PROCESSOR_NAME),
  };
}

function railTransfer(client: HttpClient, response: ProviderResponse, reference: string): RailTransfer {
  if (response.status !== 200 && response.status !== 201) throw unexpected(client, response);
  const body = parse(client, railTransferBody, response.body);
  if (body.reference !== reference) throw unavailable(client, 'answered for a different reference');
  return {
    reference: body.reference,
    status: body.status,
    providerReference: body.provider_reference,
    failureReason: body.failure_reason,
  };
}

function processorResult(client: HttpClient, response: ProviderResponse, reference: string): ProcessorResult {
  if (response.status !== 200 && response.status !== 201) throw unexpected(client, response);
  const body = parse(client, processorBody, response.body);
  if (body.reference !== reference) throw unavailable(client, 'answered for a different reference');
  return {
    reference: body.reference,
    status: body.status,
    processorReference: body.processor_reference,
    failureCode: body.failure_code,
    failureReason: body.failure_reason,
    retryable: body.status === 'FAILED' && body.retryable,
  };
}

function isUnknownReference(response: ProviderResponse): boolean {
  return response.status === 404 && UNKNOWN_REFERENCE_CODES.has(errorCode(response) ?? '');
}

// The four helpers below repeat the private ones of http-providers.ts; they belong in
// http-client.ts once its owner exports them (see the report of this change).
