import { createHash, randomBytes, randomInt } from 'node:crypto';
import Router from '@koa/router';
import { z } from 'zod';
import type { Corridors } from '#src/corridors/corridors.ts';
import type { Clock } from '#src/lib/clock.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import type { CallbackDelivery, CallbackSender } from './callbacks.ts';
import { readJson, SandboxError, validate } from './http.ts';
import { accountHolderName } from './names.ts';
import {
  amountField,
  hasMagicSuffix,
  listQuery,
  pathParam,
  positionCursors,
  RailError,
  railErrors,
  referenceField,
} from './rail-http.ts';

/**
 * The NGN bank: dynamic virtual accounts for payment instructions (each credit notified to the
 * account's callback URL, signed, and listed in the statement the service pulls), and NIP
 * transfers out for refunds, settled at once as NIP does.
 */

export const SANDBOX_BANK = { name: 'Sandbox MFB', code: '090999' } as const;
const NGN_DECIMALS = 2;

/** Magic endings of a destination account number (product decisions §6). */
const CLOSED_SUFFIXES = ['9999'];
const MISSING_SUFFIXES = ['0000'];
/** Virtual account numbers avoid every magic ending, so that paying one never looks like a test case. */
const MAGIC_SUFFIXES = ['0000', '1001', '1002', '1003', '1004', '1005', '1006', '9999'];

// The payer's bank when the simulation names none: GTBank, by its NIP institution code.
const DEFAULT_PAYER_INSTITUTION = '000013';
const DEFAULT_PAYER_ACCOUNT = '0123456789';

export interface VirtualAccount {
  reference: string;
  accountNumber: string;
  accountName: string;
  callbackUrl: string;
  expiresAt: Date;
}

/** A credit to a virtual account and the notification it caused (null: the bank was told to stay silent). */
export interface BankCredit {
  sessionId: string;
  accountNumber: string;
  /** What the notification said. */
  amount: Decimal;
  /** What the statement lists: the amount, unless the credit was made to differ on purpose. */
  statementAmount: Decimal;
  /** The reversal of this credit, once the bank took it back. */
  reversal: BankReversal | null;
  payerName: string;
  payerAccount: string;
  occurredAt: Date;
  notification: CallbackDelivery | null;
}

/** The bank taking a credit back (a payer's bank recalled it, fraud): a debit of the virtual account. */
export interface BankReversal {
  sessionId: string;
  reversesSessionId: string;
  accountNumber: string;
  amount: Decimal;
  occurredAt: Date;
}

/** One line of the statement, in the order the bank booked them. */
type StatementEntry =
  | { type: 'CREDIT'; credit: BankCredit }
  | { type: 'REVERSAL'; reversal: BankReversal }
  | { type: 'DEBIT'; transfer: BankTransfer };

/** The service's own account at the sandbox bank, which refunds are sent from. */
export const SERVICE_ACCOUNT = '9900000001';

/** A transfer out of the bank (a refund), by the service's reference. */
export interface BankTransfer {
  reference: string;
  sessionId: string;
  bankCode: string;
  accountNumber: string;
  accountName: string;
  amount: Decimal;
  narration: string;
  status: 'SUCCESSFUL' | 'FAILED';
  failureReason: string | null;
  /** When the bank made it (a successful transfer is a debit on the statement at that time). */
  occurredAt: Date;
}

/** Programmatic access for tests and tools; the HTTP API offers the same. */
export interface SandboxBank {
  router: Router;
  /**
   * The merchant's side: credits a virtual account (404 ACCOUNT_NOT_FOUND when there is none).
   * With `callback: false` the bank never notifies the credit: only its statement shows it.
   */
  credit(args: {
    accountNumber: string;
    amount: Decimal | string;
    payerName?: string;
    payerAccount?: string;
    callback?: boolean;
    /** The amount the statement lists, when it is to differ from the notification's. */
    statementAmount?: Decimal | string;
  }): BankCredit;
  /** Takes a credit back: the statement lists a reversal (404 for an unknown session id, 409 when already reversed). */
  reverse(sessionId: string): BankReversal;
  virtualAccount(accountNumber: string): VirtualAccount | undefined;
  /** Credits so far, oldest first, of one account or of all. */
  credits(accountNumber?: string): readonly BankCredit[];
  /** Transfers out so far, oldest first. */
  transfers(): readonly BankTransfer[];
}

const virtualAccountBody = z.object({
  reference: referenceField,
  account_name: z.string().trim().min(1).max(100),
  callback_url: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }),
  expires_at: z.iso.datetime({ offset: true }),
});

const transferBody = z.object({
  reference: referenceField,
  bank_code: z.string().regex(/^\d{3,6}$/, 'must be a 3- to 6-digit bank code'),
  account_number: z.string().regex(/^\d{10}$/, 'must be a 10-digit NUBAN'),
  account_name: z.string().trim().min(1).max(100),
  amount: amountField(NGN_DECIMALS),
  narration: z.string().max(100).default(''),
});

const creditBody = z.object({
  account_number: z.string().regex(/^\d{10}$/, 'must be a 10-digit account number'),
  amount: amountField(NGN_DECIMALS),
  currency: z.literal('NGN'),
  payer_name: z.string().trim().min(1).max(100).optional(),
  payer_account: z
    .string()
    .regex(/^\d{10}$/, 'must be a 10-digit account number')
    .optional(),
  // false: the credit is made and the bank never calls back (a lost notification, on purpose).
  callback: z.boolean().default(true),
  // The amount the statement lists, when it is to differ from the notification's (a break, on purpose).
  statement_amount: amountField(NGN_DECIMALS).optional(),
});

const MAX_STATEMENT_PAGE = 500;
const statementQuery = listQuery({ maxPage: MAX_STATEMENT_PAGE, defaultPage: 100 });

/** A credit as the notification describes it (the statement: with the amount it lists, and its type). */
function creditJson(
  c: Pick<BankCredit, 'sessionId' | 'accountNumber' | 'payerName' | 'payerAccount' | 'occurredAt'>,
  amount: Decimal,
) {
  return {
    session_id: c.sessionId,
    account_number: c.accountNumber,
    amount: amount.toFixed(NGN_DECIMALS),
    currency: 'NGN',
    payer_name: c.payerName,
    payer_account: c.payerAccount,
    occurred_at: c.occurredAt.toISOString(),
  };
}

function entryJson(entry: StatementEntry) {
  if (entry.type === 'DEBIT') {
    const t = entry.transfer;
    return {
      type: 'DEBIT',
      session_id: t.sessionId,
      account_number: SERVICE_ACCOUNT,
      amount: t.amount.toFixed(NGN_DECIMALS),
      currency: 'NGN',
      payer_name: null,
      payer_account: null,
      occurred_at: t.occurredAt.toISOString(),
      reverses_session_id: null,
      reference: t.reference,
    };
  }
  if (entry.type === 'CREDIT') {
    return {
      type: 'CREDIT',
      ...creditJson(entry.credit, entry.credit.statementAmount),
      reverses_session_id: null,
    };
  }
  const r = entry.reversal;
  return {
    type: 'REVERSAL',
    session_id: r.sessionId,
    account_number: r.accountNumber,
    amount: r.amount.toFixed(NGN_DECIMALS),
    currency: 'NGN',
    payer_name: null,
    payer_account: null,
    occurred_at: r.occurredAt.toISOString(),
    reverses_session_id: r.reversesSessionId,
  };
}

function transferJson(t: BankTransfer) {
  return {
    reference: t.reference,
    status: t.status,
    provider_reference: t.sessionId,
    failure_reason: t.failureReason,
    amount: t.amount.toFixed(NGN_DECIMALS),
    currency: 'NGN',
  };
}

function virtualAccountJson(va: VirtualAccount) {
  return {
    reference: va.reference,
    account_number: va.accountNumber,
    account_name: va.accountName,
    bank_name: SANDBOX_BANK.name,
    bank_code: SANDBOX_BANK.code,
    expires_at: va.expiresAt.toISOString(),
  };
}

/** The NGN bank with virtual accounts. */
export function bankParty(options: {
  corridors: Corridors;
  clock: Clock;
  callbacks: CallbackSender;
  callbackDelayMs: number;
}): SandboxBank {
  const { clock, callbacks } = options;
  const byReference = new Map<string, VirtualAccount>();
  const byNumber = new Map<string, VirtualAccount>();
  const credits: BankCredit[] = [];
  const entries: StatementEntry[] = [];
  const statement = positionCursors(randomBytes(4).toString('hex'), () => entries.length);
  const transfers = new Map<string, BankTransfer>();
  const knownBanks = new Set([
    SANDBOX_BANK.code,
    ...options.corridors.data.corridors
      .filter((c) => c.currency === 'NGN')
      .flatMap((c) => c.institutions.map((i) => i.provider_code)),
  ]);
  // NIP session ids end in a 12-digit serial; a random start keeps them unique across restarts.
  let serial = randomInt(0, 2 ** 40);

  /** A NIP session id: sending institution, yymmddHHMMss, serial (30 digits). */
  function sessionId(institution: string): string {
    const stamp = clock.now().toISOString().replace(/\D/g, '').slice(2, 14);
    serial = (serial + 1) % 1e12;
    return `${institution.padStart(6, '0')}${stamp}${String(serial).padStart(12, '0')}`;
  }

  /** Ten digits derived from the reference: the same instruction gets the same account on every run. */
  function accountNumberFor(reference: string): string {
    for (let n = 0; ; n++) {
      const digest = createHash('sha256').update(`${reference}:${n}`).digest();
      const candidate = `9${String(digest.readUInt32BE(0) % 1_000_000_000).padStart(9, '0')}`;
      if (!byNumber.has(candidate) && !hasMagicSuffix(candidate, MAGIC_SUFFIXES)) return candidate;
    }
  }

  const credit: SandboxBank['credit'] = (args) => {
    const account = byNumber.get(args.accountNumber);
    if (!account) throw new SandboxError('ACCOUNT_NOT_FOUND', 'No virtual account with that number.');
    const payerAccount = args.payerAccount ?? DEFAULT_PAYER_ACCOUNT;
    const occurredAt = clock.now();
    const amount = toDecimal(args.amount);
    const record = {
      sessionId: sessionId(DEFAULT_PAYER_INSTITUTION),
      accountNumber: account.accountNumber,
      amount,
      statementAmount: args.statementAmount === undefined ? amount : toDecimal(args.statementAmount),
      reversal: null,
      payerName: args.payerName ?? accountHolderName('NG', '058', payerAccount),
      payerAccount,
      occurredAt,
    };
    // Credits after expires_at are notified too: the bank does not know about instructions, and
    // late money must reach the service to be held, not vanish.
    const notification =
      args.callback === false
        ? null
        : callbacks.deliver(
            account.callbackUrl,
            { event: 'credit', ...creditJson(record, amount) },
            options.callbackDelayMs,
          );
    const done: BankCredit = { ...record, notification };
    credits.push(done);
    entries.push({ type: 'CREDIT', credit: done });
    return done;
  };

  const reverse: SandboxBank['reverse'] = (session) => {
    const original = credits.find((c) => c.sessionId === session);
    if (!original) throw new RailError(404, 'TRANSFER_NOT_FOUND', 'No credit with that session id.');
    if (original.reversal) throw new RailError(409, 'ALREADY_REVERSED', 'That credit was reversed already.');
    const reversal: BankReversal = {
      sessionId: sessionId(SANDBOX_BANK.code),
      reversesSessionId: original.sessionId,
      accountNumber: original.accountNumber,
      amount: original.statementAmount,
      occurredAt: clock.now(),
    };
    original.reversal = reversal;
    entries.push({ type: 'REVERSAL', reversal });
    return reversal;
  };

  const router = new Router();
  router.use(railErrors);

  router.post('/bank/virtual-accounts', async (ctx) => {
    const body = validate(virtualAccountBody, await readJson(ctx));
    const existing = byReference.get(body.reference);
    if (existing) {
      ctx.body = virtualAccountJson(existing);
      return;
    }
    const account: VirtualAccount = {
      reference: body.reference,
      accountNumber: accountNumberFor(body.reference),
      accountName: body.account_name,
      callbackUrl: body.callback_url,
      expiresAt: new Date(body.expires_at),
    };
    byReference.set(account.reference, account);
    byNumber.set(account.accountNumber, account);
    ctx.status = 201;
    ctx.body = virtualAccountJson(account);
  });

  router.post('/bank/transfers', async (ctx) => {
    const body = validate(transferBody, await readJson(ctx));
    const existing = transfers.get(body.reference);
    if (existing) {
      ctx.body = transferJson(existing);
      return;
    }
    let failureReason: string | null = null;
    if (!knownBanks.has(body.bank_code)) failureReason = 'no such bank';
    else if (hasMagicSuffix(body.account_number, MISSING_SUFFIXES)) failureReason = 'no such account';
    else if (hasMagicSuffix(body.account_number, CLOSED_SUFFIXES)) failureReason = 'account closed';
    const transfer: BankTransfer = {
      reference: body.reference,
      sessionId: sessionId(SANDBOX_BANK.code),
      bankCode: body.bank_code,
      accountNumber: body.account_number,
      accountName: body.account_name,
      amount: body.amount,
      narration: body.narration,
      status: failureReason ? 'FAILED' : 'SUCCESSFUL',
      failureReason,
      occurredAt: clock.now(),
    };
    transfers.set(transfer.reference, transfer);
    // NIP settles at once: the money leaves the service's account, and its statement says so.
    if (transfer.status === 'SUCCESSFUL') entries.push({ type: 'DEBIT', transfer });
    ctx.status = 201;
    ctx.body = transferJson(transfer);
  });

  router.get('/bank/transfers/:reference', (ctx) => {
    const transfer = transfers.get(pathParam(ctx.params, 'reference'));
    if (!transfer) throw new RailError(404, 'TRANSFER_NOT_FOUND', 'No transfer with that reference.');
    ctx.body = transferJson(transfer);
  });

  // The statement: every credit to a virtual account, in the order the bank made them. `as_of` is
  // the bank's time when it answered: a page that comes back short lists every credit before it.
  router.get('/bank/statement', (ctx) => {
    const query = validate(statementQuery, ctx.query);
    const after = statement.after(query.cursor);
    const asOf = clock.now();
    const page = entries.slice(after, after + query.limit);
    const end = after + page.length;
    ctx.body = {
      credits: page.map(entryJson),
      next_cursor: end > 0 ? statement.encode(end) : null,
      as_of: asOf.toISOString(),
    };
  });

  router.post('/sandbox/bank/transfers', async (ctx) => {
    const body = validate(creditBody, await readJson(ctx));
    const done = credit({
      accountNumber: body.account_number,
      amount: body.amount,
      payerName: body.payer_name,
      payerAccount: body.payer_account,
      callback: body.callback,
      statementAmount: body.statement_amount,
    });
    ctx.status = 201;
    ctx.body = {
      ...creditJson(done, done.amount),
      statement_amount: done.statementAmount.toFixed(NGN_DECIMALS),
      status: 'SUCCESSFUL',
      callback: body.callback,
    };
  });

  router.post('/sandbox/bank/credits/:sessionId/reversal', (ctx) => {
    const reversal = reverse(pathParam(ctx.params, 'sessionId'));
    ctx.status = 201;
    ctx.body = entryJson({ type: 'REVERSAL', reversal });
  });

  return {
    router,
    credit,
    reverse,
    virtualAccount: (accountNumber) => byNumber.get(accountNumber),
    credits: (accountNumber) =>
      accountNumber === undefined ? credits : credits.filter((c) => c.accountNumber === accountNumber),
    transfers: () => [...transfers.values()],
  };
}
