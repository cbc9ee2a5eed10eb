import { z } from 'zod';
import type { Deps } from '#src/deps.ts';
import { newId } from '#src/lib/ids.ts';
import type { Logger } from '#src/lib/log.ts';
import { toDecimal } from '#src/lib/money.ts';

/**
 * Bank credits: the NGN bank notifies every credit to a virtual account (signed, verified by
 * `src/http/callbacks.ts` before this runs). Each credit is recorded once, by the bank's session
 * id, as a CONFIRMED inflow: a bank credit is final when notified, there is nothing to wait for.
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

export type BankCredit = z.output<typeof bankCreditBody>;

/**
 * Records a credit as an inflow of the tenant whose instruction owns the virtual account, once
 * per session id, and returns the inflow's id (also for a repeated notification, so that the
 * caller can finish matching an earlier attempt that stopped half-way). Returns null for a credit
 * to an account no instruction owns, which is logged and not recorded: see docs/settlement.md.
 *
 * The inflow's time is when the bank says the credit happened (never later than now), not when
 * the notification arrived: a notification retried after an outage must not make money that
 * arrived in time look late.
 */
export async function recordBankCredit(deps: Deps, credit: BankCredit, log: Logger): Promise<string | null> {
  const em = deps.orm.em.fork();
  const [owner] = await em.execute<{ tenant_id: string; provider_name: string }[]>(
    `select tenant_id, provider_name from payment_instructions
      where account_unique = ? and rail = 'BANK_TRANSFER'
      order by created_at desc limit 1`,
    [credit.account_number],
  );
  if (!owner) {
    // Deliberately not an error answer: the bank retrying cannot make the account known. A virtual
    // account is shown to a merchant only after its instruction is committed, so this is not a
    // race with generation; the money is on the bank's statement for operations to reconcile.
    log.error(
      { session_id: credit.session_id, account_number: credit.account_number, amount: credit.amount },
      'bank credit to a virtual account no instruction owns; not recorded, reconcile from the bank statement',
    );
    return null;
  }
  const now = deps.clock.now();
  const occurredAt = new Date(credit.occurred_at);
  const at = occurredAt.getTime() < now.getTime() ? occurredAt : now;
  const inserted = await em.execute<{ id: string }[]>(
    `insert into inflows (id, tenant_id, rail, provider_name, network, amount, currency, external_ref,
       to_account, payer_name, payer_account, block_number, confirmations_received, confirmations_required,
       state, is_matched, is_underpaid, overpayment_amount, created_at, updated_at)
     values (?, ?, 'BANK_TRANSFER', ?, null, ?, ?, ?, ?, ?, ?, null, 0, 0, 'CONFIRMED', false, false, 0, ?, ?)
     on conflict (rail, external_ref) do nothing
     returning id`,
    [
      newId(),
      owner.tenant_id,
      owner.provider_name,
      toDecimal(credit.amount).toFixed(),
      credit.currency,
      credit.session_id,
      credit.account_number,
      credit.payer_name ?? null,
      credit.payer_account ?? null,
      at,
      now,
    ],
  );
  if (inserted[0]) return inserted[0].id;

  const [existing] = await em.execute<{ id: string; amount: string; to_account: string }[]>(
    `select id, amount, to_account from inflows where rail = 'BANK_TRANSFER' and external_ref = ?`,
    [credit.session_id],
  );
  if (!existing) throw new Error(`bank credit ${credit.session_id} neither inserted nor found`);
  if (!toDecimal(existing.amount).eq(credit.amount) || existing.to_account !== credit.account_number) {
    // The first notification is the record; a different one under the same session id is the
    // bank's error to investigate, never a second credit.
    log.error(
      { session_id: credit.session_id, inflow: existing.id },
      'bank credit repeated with different content; kept the first',
    );
  } else {
    log.info(
      { session_id: credit.session_id, inflow: existing.id },
      'bank credit notified again; already recorded',
    );
  }
  return existing.id;
}
