import { z } from 'zod';
import { columnsOf, type Sql, statement } from '#src/db/sql.ts';
import type { Deps } from '#src/deps.ts';
import { post } from '#src/ledger/ledger.ts';
import { arrivalTime } from '#src/lib/clock.ts';
import { newId } from '#src/lib/ids.ts';
import type { Logger } from '#src/lib/log.ts';
import { toDecimal } from '#src/lib/money.ts';
import type { BankCredit } from '#src/providers/rails.ts';
import { newInflow } from './lifecycle.ts';
import { inflowLedger } from './money.ts';

/**
 * Bank credits: the NGN bank notifies every credit to a virtual account (signed, verified by
 * `src/http/callbacks.ts` before this runs), and lists it in its statement, which the settlement
 * job pulls (`bank-statement.ts`) to find every credit whose notification never came. Either
 * way each credit is recorded once, by the bank's session id, as a CONFIRMED inflow: a bank
 * credit is final when made, there is nothing to wait for (the inflow machine's
 * `needsNoConfirmations`).
 */

/** The bank's credit notification, as `docs/sandbox.md` describes it. */
export const bankCreditBody = z.object({
  event: z.literal('credit'),
  session_id: z.string().trim().min(1).max(128),
  account_number: z.string().trim().min(1).max(128),
  // A decimal string, never a JSON number: the amount must arrive with exactly the bank's digits.
  amount: z
    .string()
    .regex(/^\d+(\.\d{1,2})?$/, 'must be a decimal string with at most 2 decimals')
    .refine((v) => toDecimal(v).gt(0), 'must be greater than zero'),
  currency: z.literal('NGN'),
  payer_name: z.string().max(200).nullish(),
  payer_account: z.string().max(128).nullish(),
  occurred_at: z.iso.datetime({ offset: true }),
});

/** The credit a notification reports, as the bank's statement would list it. */
export function creditOfNotice(body: z.output<typeof bankCreditBody>): BankCredit {
  return {
    sessionId: body.session_id,
    accountNumber: body.account_number,
    amount: toDecimal(body.amount),
    currency: body.currency,
    payerName: body.payer_name ?? null,
    payerAccount: body.payer_account ?? null,
    occurredAt: new Date(body.occurred_at),
  };
}

/**
 * Records a notified credit in a transaction of its own and returns its inflow's id (also for a
 * repeated notification, so that the caller can finish matching an earlier attempt that stopped
 * half-way), or null for a credit to an account no instruction owns.
 */
export async function recordBankCredit(
  deps: Deps,
  credit: BankCredit,
  log: Logger,
): Promise<{ id: string; tenantId: string } | null> {
  const recorded = await deps.sql.transaction((tx) => recordBankCredits(tx, [credit], deps.clock.now(), log));
  return recorded.ids.get(credit.sessionId) ?? null;
}

// The newest instruction of each account, should an account ever be reused.
const accountOwners = statement(
  'bank_credit_owners',
  `select distinct on (account_unique) account_unique, tenant_id, provider_name from payment_instructions
    where account_unique = any($1::text[]) and rail = 'BANK_TRANSFER'
    order by account_unique, created_at desc`,
);

const insertCredits = statement(
  'bank_credit_insert',
  `insert into inflows (id, tenant_id, rail, provider_name, network, amount, currency, external_ref,
       to_account, payer_name, payer_account, block_number, confirmations_received, confirmations_required,
       state, snapshot, is_matched, is_underpaid, overpayment_amount, arrived_at, created_at, updated_at)
   select t.id, t.tenant_id, 'BANK_TRANSFER', t.provider_name, null, t.amount, 'NGN', t.external_ref,
          t.to_account, t.payer_name, t.payer_account, null, 0, 0, $11, $12::jsonb, false, false, 0, t.arrived_at,
          $1, $1
     from unnest($2::uuid[], $3::uuid[], $4::text[], $5::numeric[], $6::text[], $7::text[], $8::text[],
                 $9::text[], $10::timestamptz[])
          as t(id, tenant_id, provider_name, amount, external_ref, to_account, payer_name, payer_account,
               arrived_at)
    order by t.id
   on conflict (rail, external_ref, tenant_id) do nothing
   returning id, external_ref`,
);

// `$2`: the tenants owning the credits' accounts (a rail's reference belongs to one account).
const recordedCredits = statement(
  'bank_credit_recorded',
  `select id, tenant_id, external_ref, amount, to_account from inflows
    where rail = 'BANK_TRANSFER' and external_ref = any($1::text[]) and tenant_id = any($2::uuid[])`,
);

/**
 * Records credits as inflows of the tenants whose instructions own their virtual accounts, once
 * per session id, inside `tx`: one statement for the whole list, however many were seen before.
 * Returns the inflow id of every credit (new or recorded earlier) and how many were new.
 *
 * The inflow arrived when the bank made the credit (never later than now), not when the service
 * heard of it: a notification retried, or a statement read, after an outage must not make money
 * that arrived in time look late.
 *
 * A credit to an account no instruction owns is logged at error level and not recorded: an
 * inflow needs a tenant and nothing names one. A virtual account is shown to a merchant only
 * after its instruction is committed, so this is not a race with generation; operations
 * reconcile such a credit from the bank's statement.
 */
export async function recordBankCredits(
  tx: Sql,
  credits: readonly BankCredit[],
  now: Date,
  log: Logger,
): Promise<{ ids: Map<string, { id: string; tenantId: string }>; recorded: number }> {
  const ids = new Map<string, { id: string; tenantId: string }>();
  if (credits.length === 0) return { ids, recorded: 0 };
  const owners = new Map(
    (
      await tx.rows<{ account_unique: string; tenant_id: string; provider_name: string }>(accountOwners, [
        [...new Set(credits.map((c) => c.accountNumber))],
      ])
    ).map((o) => [o.account_unique, o]),
  );
  const rows: unknown[][] = [];
  const listed = new Map<string, BankCredit>();
  for (const credit of credits) {
    const owner = owners.get(credit.accountNumber);
    if (!owner) {
      log.error(
        {
          session_id: credit.sessionId,
          account_number: credit.accountNumber,
          amount: credit.amount.toFixed(),
        },
        'bank credit to a virtual account no instruction owns; not recorded, reconcile from the bank statement',
      );
      continue;
    }
    // A credit listed twice is one credit.
    if (listed.has(credit.sessionId)) continue;
    listed.set(credit.sessionId, credit);
    rows.push([
      newId(),
      owner.tenant_id,
      owner.provider_name,
      credit.amount.toFixed(),
      credit.sessionId,
      credit.accountNumber,
      credit.payerName,
      credit.payerAccount,
      arrivalTime(credit.occurredAt, now),
    ]);
  }
  if (listed.size === 0) return { ids, recorded: 0 };
  // A bank credit needs no confirmations: the machine starts it CONFIRMED.
  const start = newInflow({ confirmationsRequired: 0 });
  const inserted = await tx.rows<{ id: string; external_ref: string }>(insertCredits, [
    now,
    ...columnsOf(rows, 9),
    start.state,
    JSON.stringify(start.snapshot),
  ]);
  for (const row of inserted) {
    const credit = listed.get(row.external_ref)!;
    ids.set(row.external_ref, { id: row.id, tenantId: owners.get(credit.accountNumber)!.tenant_id });
  }
  // The money counts as it is recorded: one ledger transaction per new credit, in one statement.
  await post(
    tx,
    inserted.flatMap((row) => {
      const credit = listed.get(row.external_ref)!;
      return inflowLedger(
        {
          id: row.id,
          tenantId: owners.get(credit.accountNumber)!.tenant_id,
          rail: 'BANK_TRANSFER',
          network: null,
          toAccount: credit.accountNumber,
          amount: credit.amount,
          currency: credit.currency,
          payoutId: null,
        },
        { actions: start.actions, from: '(new)', to: start.state },
        'RECORDED',
        now,
      );
    }),
  );
  const known = [...listed.keys()].filter((sessionId) => !ids.has(sessionId));
  if (known.length > 0) {
    const existing = await tx.rows<{
      id: string;
      tenant_id: string;
      external_ref: string;
      amount: string;
      to_account: string;
    }>(recordedCredits, [
      known,
      [...new Set(known.map((s) => owners.get(listed.get(s)!.accountNumber)!.tenant_id))],
    ]);
    for (const row of existing) {
      ids.set(row.external_ref, { id: row.id, tenantId: row.tenant_id });
      const credit = listed.get(row.external_ref)!;
      if (!toDecimal(row.amount).eq(credit.amount) || row.to_account !== credit.accountNumber) {
        // The first report is the record; a different one under the same session id is the
        // bank's error to investigate, never a second credit.
        log.error(
          { session_id: row.external_ref, inflow: row.id },
          'bank credit reported again with different content; kept the first',
        );
      } else {
        log.debug(
          { session_id: row.external_ref, inflow: row.id },
          'bank credit reported again; already recorded',
        );
      }
    }
  }
  return { ids, recorded: inserted.length };
}
