import { type EntityManager, LockMode } from '@mikro-orm/postgresql';
import { paymentInstructionMachine } from '#machines/payment-instruction.machine.ts';
import type { Network, SettlementCurrency } from '#src/corridors/corridors.ts';
import { type Price, price } from '#src/corridors/pricing.ts';
import type { Deps } from '#src/deps.ts';
import { applyEvent, initialState } from '#src/engine/engine.ts';
import { newId } from '#src/lib/ids.ts';
import { currencyDecimals, type Decimal, toDecimal } from '#src/lib/money.ts';
import { Payout } from '#src/payouts/entities.ts';
import { applyPayoutEvent } from '#src/payouts/lifecycle.ts';
import { ProviderUnavailableError } from '#src/providers/providers.ts';
import { Quote } from '#src/quotes/entities.ts';
import { frozenPrice } from '#src/quotes/service.ts';
import { DepositAddress, PaymentInstruction } from './entities.ts';

/**
 * Instruction generation: lock the rate, compute what the merchant owes, obtain where they pay
 * (the tenant's shared address on the network, or a virtual account of its own), and move the
 * payout to PENDING_PAYMENT. Provider calls happen before the transaction; the transaction
 * re-checks that the payout is still CREATED, so two workers racing produce one instruction.
 */

/** A failure that retrying will not cure: the payout fails with INSTRUCTION_GENERATION_FAILED. */
export class PermanentGenerationError extends Error {
  override name = 'PermanentGenerationError';
}

/** Most distinct amounts tried for one shared address before giving up on this run. */
const MAX_OFFSET_STEPS = 10_000;

async function priceFor(deps: Deps, em: EntityManager, payout: Payout): Promise<Price & { source: string }> {
  if (payout.quoteId) {
    const quote = await em.findOne(Quote, payout.quoteId);
    if (!quote) throw new PermanentGenerationError(`quote ${payout.quoteId} vanished`);
    const frozen = frozenPrice(quote);
    return { ...frozen, source: frozen.provider };
  }
  const settlement = payout.settlementCurrency as SettlementCurrency;
  const corridor = deps.corridors.find(payout.destinationCountry, payout.destinationCurrency);
  const pricing = corridor && deps.corridors.pricing(corridor, settlement);
  if (!pricing) throw new PermanentGenerationError('the corridor is no longer offered');
  const mid = await deps.providers.rates.midMarket(settlement, payout.destinationCurrency);
  return {
    ...price({
      destinationAmount: payout.destinationAmount,
      settlementCurrency: settlement,
      midMarketRate: mid.rate,
      pricing,
      networkFee: deps.corridors.networkFee(settlement, (payout.settlementNetwork ?? null) as Network | null),
    }),
    source: mid.source,
  };
}

interface ReceivingAccount {
  accountUnique: string;
  providerName: string;
  network: string | null;
  chain: Network | null;
  shared: boolean;
}

async function receivingAccount(
  deps: Deps,
  em: EntityManager,
  payout: Payout,
  expiresAt: Date,
): Promise<ReceivingAccount> {
  if (payout.settlementCurrency === 'USDT') {
    const network = (payout.settlementNetwork ?? deps.corridors.defaultNetwork()) as Network;
    let address = (await em.findOne(DepositAddress, { tenant: payout.tenant.id, network }))?.address;
    if (!address) {
      // Idempotent per label at the chain gateway: a racing worker gets the same address.
      address = (await deps.rails.chains.createAddress(network, payout.tenant.id)).address;
      await em.execute(
        `insert into deposit_addresses (id, tenant_id, network, address, created_at, updated_at)
         values (?, ?, ?, ?, ?, ?) on conflict do nothing`,
        [newId(), payout.tenant.id, network, address, deps.clock.now(), deps.clock.now()],
      );
    }
    return {
      accountUnique: address,
      providerName: `USDT on ${network}`,
      network: deps.corridors.networkLabel(network),
      chain: network,
      shared: true,
    };
  }
  const account = await deps.rails.bank.createVirtualAccount({
    reference: payout.id,
    accountName: `${payout.tenant.name} payout ${payout.id.slice(-8)}`.slice(0, 100),
    callbackUrl: `${deps.callbackBaseUrl}/callbacks/bank`,
    expiresAt,
  });
  return {
    accountUnique: account.accountNumber,
    providerName: account.bankName,
    network: null,
    chain: null,
    shared: false,
  };
}

/**
 * The smallest amount ≥ `base`, in steps of the currency's last decimal, that no open
 * instruction on `account` expects. Runs with the account's row locked, so it cannot race.
 */
async function uniqueExpectedAmount(
  em: EntityManager,
  account: string,
  base: Decimal,
  currency: string,
): Promise<Decimal> {
  const step = toDecimal(1).shiftedBy(-currencyDecimals(currency));
  const ceiling = base.plus(step.times(MAX_OFFSET_STEPS));
  const taken = await em.execute<{ expected_amount: string }[]>(
    `select expected_amount from payment_instructions
      where account_unique = ? and status = 'UNPAID' and expected_amount >= ? and expected_amount < ?`,
    [account, base.toFixed(), ceiling.toFixed()],
  );
  const used = new Set(taken.map((r) => toDecimal(r.expected_amount).toFixed()));
  for (let candidate = base; candidate.lt(ceiling); candidate = candidate.plus(step)) {
    if (!used.has(candidate.toFixed())) return candidate;
  }
  throw new ProviderUnavailableError(
    'instructions',
    `no free amount near ${base.toFixed()} on a shared address`,
  );
}

/**
 * Generates the instruction of one payout. Returns false when there was nothing to do (the
 * payout is no longer CREATED). Throws ProviderUnavailableError for transient failures and
 * PermanentGenerationError for permanent ones; the caller decides about retries.
 */
export async function generateInstruction(deps: Deps, payoutId: string): Promise<boolean> {
  const em = deps.orm.em.fork();
  const payout = (await em.findOne(Payout, payoutId, { populate: ['tenant'] })) as Payout | null;
  if (payout?.status !== 'CREATED') return false;

  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + deps.config.PAYMENT_INSTRUCTION_TTL_MS);
  const priced = await priceFor(deps, em, payout);
  const account = await receivingAccount(deps, em, payout, expiresAt);

  return em.transactional(async (tx) => {
    const locked = await tx.findOne(Payout, payoutId, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (locked?.status !== 'CREATED') return false;
    if (account.shared) {
      // Serialises instruction creation per shared address, across instances.
      await tx.execute('select id from deposit_addresses where address = ? for update', [
        account.accountUnique,
      ]);
    }
    const currency = locked.settlementCurrency;
    const expected = account.shared
      ? await uniqueExpectedAmount(tx, account.accountUnique, priced.settlementAmount, currency)
      : priced.settlementAmount;

    const initial = initialState(paymentInstructionMachine, { expiresAt: expiresAt.toISOString() });
    tx.create(PaymentInstruction, {
      tenant: locked.tenant,
      payout: locked,
      status: initial.status as PaymentInstruction['status'],
      snapshot: initial.snapshot,
      rail: account.shared ? 'CRYPTO' : 'BANK_TRANSFER',
      accountUnique: account.accountUnique,
      providerName: account.providerName,
      network: account.network,
      chain: account.chain,
      expectedAmount: expected,
      expectedCurrency: currency,
      expiresAt,
      paidAt: null,
    });
    locked.exchangeRate = priced.exchangeRate;
    locked.midMarketRate = priced.midMarketRate;
    locked.platformFeeAmount = priced.platformFee;
    locked.networkFeeAmount = priced.networkFee;
    locked.totalFeeAmount = priced.totalFee;
    locked.settlementAmount = expected;
    await applyPayoutEvent(
      tx,
      payoutId,
      { type: 'INSTRUCTION_GENERATED', triggeredBy: 'SYSTEM', now },
      {
        reasonDetail: {
          rate_source: priced.source,
          mid_market_rate: priced.midMarketRate.toFixed(),
          spread_percent: priced.spreadPercent.toFixed(),
          ...(expected.eq(priced.settlementAmount)
            ? {}
            : { uniqueness_offset: expected.minus(priced.settlementAmount).toFixed() }),
          ...(locked.quoteId ? { quote_id: locked.quoteId } : {}),
        },
      },
    );
    return true;
  });
}

/** Fails a payout whose instruction cannot be generated (no money was received: no refund). */
export async function failGeneration(deps: Deps, payoutId: string, reason: string): Promise<void> {
  const now = deps.clock.now();
  await deps.orm.em
    .fork()
    .transactional((tx) =>
      applyPayoutEvent(
        tx,
        payoutId,
        { type: 'INSTRUCTION_GENERATION_FAILED', failureReason: reason, triggeredBy: 'SYSTEM', now },
        { reasonDetail: { reason } },
      ),
    );
}

/**
 * Ends every UNPAID instruction whose time is up, in batches: the instruction goes EXPIRED and
 * its payout EXPIRED (or stays held when money arrived short). Returns how many it ended.
 */
export async function expireInstructions(deps: Deps, limit = 200): Promise<number> {
  const now = deps.clock.now();
  const em = deps.orm.em.fork();
  return em.transactional(async (tx) => {
    // A crypto payment seen before the deadline but still gathering confirmations (or waiting to
    // be matched) keeps its instruction open: on-time money must not turn a payout EXPIRED.
    const due = await tx.execute<{ id: string; payout_id: string }[]>(
      `select i.id, i.payout_id from payment_instructions i
        where i.status = 'UNPAID' and i.expires_at <= ?
          and not (i.rail = 'CRYPTO' and exists (
                select 1 from inflows f
                 where f.to_account = i.account_unique and f.state in ('PENDING_CONFIRMATION', 'CONFIRMED')
                   and f.created_at <= i.expires_at))
        order by i.expires_at
        limit ?
        for update skip locked`,
      [now, limit],
    );
    for (const instruction of due) {
      await applyEvent(tx, {
        machine: paymentInstructionMachine,
        entity: PaymentInstruction,
        id: instruction.id,
        event: { type: 'EXPIRE', now },
      });
      await applyPayoutEvent(tx, instruction.payout_id, {
        type: 'INSTRUCTION_EXPIRED',
        triggeredBy: 'SYSTEM',
        now,
      });
    }
    return due.length;
  });
}
