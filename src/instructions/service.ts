import { paymentInstructionMachine } from '#machines/payment-instruction.machine.ts';
import type { DestinationType, Network, SettlementCurrency } from '#src/corridors/corridors.ts';
import { type Price, pricer } from '#src/corridors/pricing.ts';
import { type Sql, statement } from '#src/db/sql.ts';
import type { Deps } from '#src/deps.ts';
import { initialState, step } from '#src/engine/engine.ts';
import { type ClaimedTask, completeTasks, retryTasks, taskBackoffMs } from '#src/jobs/tasks.ts';
import { newId } from '#src/lib/ids.ts';
import { currencyDecimals, type Decimal, toDecimal } from '#src/lib/money.ts';
import { checkPayeeLater, payeeDecision } from '#src/payees/check.ts';
import type { PayeeCheck, PayeePolicy } from '#src/payees/name-match.ts';
import { applyPayoutSteps, type PayoutStep } from '#src/payouts/lifecycle.ts';
import type { InstructionView } from '#src/payouts/resource.ts';
import { lockPayouts } from '#src/payouts/resource.ts';
import { ProviderUnavailableError } from '#src/providers/providers.ts';
import { Quote } from '#src/quotes/entities.ts';
import { frozenPrice } from '#src/quotes/service.ts';

/**
 * Instruction generation, a batch of claimed tasks at a time: lock the rate, compute what the
 * merchant owes, obtain where they pay (the tenant's shared address on the network, or a virtual
 * account of its own), and move the payouts to PENDING_PAYMENT. Every provider call happens
 * before the transaction; the one transaction of the batch re-checks under the payouts' row
 * locks that each is still CREATED, so two workers racing produce one instruction per payout.
 */

/** A failure that retrying will not cure: the payout fails with INSTRUCTION_GENERATION_FAILED. */
export class PermanentGenerationError extends Error {
  override name = 'PermanentGenerationError';
}

/** Transient failures tolerated before a payout's instruction generation fails for good. */
export const MAX_GENERATION_ATTEMPTS = 8;

/** Most distinct amounts tried for one shared address before giving up on this run. */
const MAX_OFFSET_STEPS = 10_000;

/** Virtual accounts opened at once: one provider call per NGN payout, bounded so a batch cannot flood the bank. */
const VIRTUAL_ACCOUNT_CONCURRENCY = 8;

/** A payout as generation reads it: what prices it and where it is paid. */
interface PayoutToPrice {
  id: string;
  tenant_id: string;
  tenant_name: string;
  settlement_currency: string;
  settlement_network: Network | null;
  destination_country: string;
  destination_currency: string;
  destination_amount: string;
  quote_id: string | null;
  destination_type: DestinationType;
  destination_account_unique: string;
  destination_provider_code: string | null;
  destination_account_name: string | null;
  payee_check: PayeeCheck | null;
  payee_name_policy: PayeePolicy;
  /** An operator accepted the payee's name once (four eyes): the check holds it no more. */
  payee_accepted: boolean;
}

// A payout held by the payee name check (CREATED.payeeHeld) waits for an operator, not for this job.
// With `$2`, the payouts' tenants as their tasks name them: the same rows, by their primary key.
const createdPayouts = (ofTenants: boolean) =>
  `select p.id, p.tenant_id, t.name as tenant_name, p.settlement_currency, p.settlement_network,
          p.destination_country, p.destination_currency, p.destination_amount::text as destination_amount, p.quote_id,
          p.destination_type, p.destination_account_unique, p.destination_provider_code, p.destination_account_name,
          p.payee_check, t.payee_name_policy,
          exists (select 1 from payout_status_timeline l
                   where l.payout_id = p.id and l.reason_code = 'PAYEE_NAME_ACCEPTED') as payee_accepted
     from payouts p join tenants t on t.id = p.tenant_id
    where p.id = any($1::uuid[])${ofTenants ? ' and p.tenant_id = any($2::uuid[])' : ''} and p.status = 'CREATED'
      and coalesce(p.snapshot->'value'->>'CREATED', '') <> 'payeeHeld'`;
const readCreatedPayouts = statement('instructions_created_payouts', createdPayouts(false));
const readCreatedPayoutsOfTenants = statement(
  'instructions_created_payouts_of_tenants',
  createdPayouts(true),
);

/**
 * The tenants of the tasks' subjects, or undefined when a task (scheduled before tasks carried
 * the tenant) names none: the subjects are then read by id alone.
 */
function tenantsOf(tasks: readonly ClaimedTask[]): string[] | undefined {
  const tenants = tasks.map((t) => t.tenantId);
  return tenants.every((t) => t !== null) ? [...new Set(tenants)] : undefined;
}

// The check completed by the job is a fact about the payout, written as soon as it is known (each
// payout with its tenant).
const recordPayeeChecks = statement(
  'instructions_payee_checks',
  `update payouts p set payee_check = c.verdict, payee_institution_name = c.name, payee_checked_at = c.at
     from unnest($1::uuid[], $2::text[], $3::text[], $4::timestamptz[], $5::uuid[])
          as c(id, verdict, name, at, tenant_id)
    where p.id = c.id and p.tenant_id = c.tenant_id and p.payee_check = 'PENDING'`,
);

const readDepositAddresses = statement(
  'instructions_deposit_addresses',
  'select tenant_id, network, address from deposit_addresses where tenant_id = any($1::uuid[])',
);

const insertDepositAddresses = statement(
  'instructions_deposit_addresses_insert',
  `insert into deposit_addresses (id, tenant_id, network, address, created_at, updated_at)
   select a.id, a.tenant_id, a.network, a.address, $5, $5
     from unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[]) as a(id, tenant_id, network, address)
   on conflict do nothing`,
);

const lockDepositAddresses = statement(
  'instructions_deposit_addresses_lock',
  'select id from deposit_addresses where address = any($1::text[]) order by address for update',
);

// The open amounts in each window: one range scan of the partial unique index of open amounts per
// window (OFFSET 0 keeps the planner from flattening the lateral subquery into one join over
// every open instruction).
const takenAmounts = statement(
  'instructions_taken_amounts',
  `select w.account as account_unique, i.expected_amount::text as expected_amount
     from unnest($1::text[], $2::numeric[], $3::numeric[], $4::uuid[]) as w(account, low, high, tenant_id)
     cross join lateral (
       select o.expected_amount from payment_instructions o
        where o.account_unique = w.account and o.tenant_id = w.tenant_id and o.status = 'UNPAID'
          and o.expected_amount >= w.low and o.expected_amount < w.high
       offset 0) as i`,
  // A range scan per window: planned for each batch (see `statement`).
  { replan: true },
);

// The partial unique index of open amounts is the arbiter: a row whose amount an open instruction
// on its address already expects is left out, and missing from what the statement returns.
const insertInstructions = statement(
  'instructions_insert_many',
  `insert into payment_instructions (id, tenant_id, payout_id, status, snapshot, rail, account_unique, provider_name,
       network, chain, expected_amount, expected_currency, expires_at, paid_at, created_at, updated_at)
   select i.id, i.tenant_id, i.payout_id, $11, $12::jsonb, i.rail, i.account_unique, i.provider_name, i.network,
          i.chain, i.expected_amount, i.expected_currency, $13, null, $14, $14
     from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                 $9::numeric[], $10::text[])
          as i(id, tenant_id, payout_id, rail, account_unique, provider_name, network, chain, expected_amount,
               expected_currency)
   on conflict (account_unique, expected_amount, tenant_id) where status = 'UNPAID' do nothing
   returning payout_id`,
);

/** Where a new instruction starts: the payment-instruction machine's first state (its input only sets the deadline). */
const INITIAL_INSTRUCTION_STATUS = initialState(paymentInstructionMachine, {
  expiresAt: new Date(0).toISOString(),
}).status as InstructionView['status'];

type Priced = Price & { source: string };

interface ReceivingAccount {
  accountUnique: string;
  providerName: string;
  network: string | null;
  chain: Network | null;
  shared: boolean;
}

/** What became of one claimed task before the transaction. */
type Prepared =
  | { task: ClaimedTask; kind: 'ready'; payout: PayoutToPrice; priced: Priced; account: ReceivingAccount }
  | { task: ClaimedTask; kind: 'fail'; reason: string }
  | { task: ClaimedTask; kind: 'retry'; error: string }
  /** The payee name check holds the payout for an operator, or refuses it, by its tenant's policy. */
  | { task: ClaimedTask; kind: 'payee'; decision: 'hold' | 'refuse'; check: PayeeCheck }
  /** Nothing to do: the payout is no longer CREATED. */
  | { task: ClaimedTask; kind: 'done' };
type Ready = Extract<Prepared, { kind: 'ready' }>;
type Failed = Extract<Prepared, { kind: 'fail' }>;
type Retry = Extract<Prepared, { kind: 'retry' }>;
type PayeeStop = Extract<Prepared, { kind: 'payee' }>;

/**
 * Today's rules for a task whose attempt threw: a permanent error fails the payout, so does any
 * error once MAX_GENERATION_ATTEMPTS are spent; anything else is tried again later.
 */
function afterError(task: ClaimedTask, err: unknown): Failed | Retry {
  const error = err instanceof Error ? err : new Error(String(err));
  if (error instanceof PermanentGenerationError) return { task, kind: 'fail', reason: error.message };
  if (task.attempts >= MAX_GENERATION_ATTEMPTS) {
    return { task, kind: 'fail', reason: `gave up after ${task.attempts} attempts: ${error.message}` };
  }
  return {
    task,
    kind: 'retry',
    error: error instanceof ProviderUnavailableError ? error.message : `${error.name}: ${error.message}`,
  };
}

/** Runs `work` on every item, at most `limit` at once; results in input order. */
async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < items.length; i = next++) results[i] = await work(items[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}

/**
 * Prices every payout of the batch: a quote's frozen price when it has one (all quotes in one
 * query), else the corridor's pricing on the mid-market rate, fetched once per currency pair for
 * the whole batch (the batch is generated at one instant, so one rate is what one-at-a-time
 * generation within that instant would have locked too), with the customer rate and the network
 * fee worked out once per set of terms.
 */
async function priceAll(deps: Deps, payouts: readonly PayoutToPrice[]): Promise<(Priced | Error)[]> {
  const quoteIds = [...new Set(payouts.flatMap((p) => (p.quote_id ? [p.quote_id] : [])))];
  const quotes =
    quoteIds.length === 0
      ? new Map<string, Quote>()
      : new Map((await deps.orm.em.fork().find(Quote, { id: { $in: quoteIds } })).map((q) => [q.id, q]));
  const rates = new Map<string, ReturnType<Deps['providers']['rates']['midMarket']>>();
  const rateOf = (settlement: SettlementCurrency, destination: string) => {
    const pair = `${settlement}:${destination}`;
    let rate = rates.get(pair);
    if (!rate) {
      rate = deps.providers.rates.midMarket(settlement, destination);
      rates.set(pair, rate);
    }
    return rate;
  };
  // One pricer per corridor, settlement currency and network: the terms every payout of the
  // batch on them shares (the pair's one rate, the corridor's pricing, the network's fee).
  const pricers = new Map<string, Promise<{ priceOf: (amount: Decimal) => Price; source: string }>>();
  const pricerOf = (payout: PayoutToPrice) => {
    const settlement = payout.settlement_currency as SettlementCurrency;
    const terms = `${settlement}:${payout.destination_country}:${payout.destination_currency}:${payout.settlement_network}`;
    let found = pricers.get(terms);
    if (!found) {
      const corridor = deps.corridors.find(payout.destination_country, payout.destination_currency);
      const pricing = corridor && deps.corridors.pricing(corridor, settlement);
      found = !pricing
        ? Promise.reject(new PermanentGenerationError('the corridor is no longer offered'))
        : rateOf(settlement, payout.destination_currency).then((mid) => ({
            priceOf: pricer({
              settlementCurrency: settlement,
              midMarketRate: mid.rate,
              pricing,
              networkFee: deps.corridors.networkFee(settlement, payout.settlement_network),
            }),
            source: mid.source,
          }));
      pricers.set(terms, found);
    }
    return found;
  };
  return Promise.all(
    payouts.map(async (payout): Promise<Priced | Error> => {
      try {
        if (payout.quote_id) {
          const quote = quotes.get(payout.quote_id);
          if (!quote) throw new PermanentGenerationError(`quote ${payout.quote_id} vanished`);
          const frozen = frozenPrice(quote);
          return { ...frozen, source: frozen.provider };
        }
        const { priceOf, source } = await pricerOf(payout);
        return { ...priceOf(toDecimal(payout.destination_amount)), source };
      } catch (err) {
        return err as Error;
      }
    }),
  );
}

/**
 * The tenants' shared addresses on each network the batch pays into, in one query; those that do
 * not exist yet are created through the chain gateway (idempotent per label, so a racing worker
 * gets the same address) and stored. Keyed by `tenant:network`; a failed creation maps to its error.
 */
async function depositAddresses(
  deps: Deps,
  wanted: readonly { tenantId: string; network: Network }[],
): Promise<Map<string, string | Error>> {
  const found = new Map<string, string | Error>();
  if (wanted.length === 0) return found;
  const rows = await deps.sql.rows<{ tenant_id: string; network: string; address: string }>(
    readDepositAddresses,
    [[...new Set(wanted.map((w) => w.tenantId))]],
  );
  for (const row of rows) found.set(`${row.tenant_id}:${row.network}`, row.address);
  const missing = [...new Map(wanted.map((w) => [`${w.tenantId}:${w.network}`, w])).values()].filter(
    (w) => !found.has(`${w.tenantId}:${w.network}`),
  );
  if (missing.length === 0) return found;
  const created = await mapBounded(missing, VIRTUAL_ACCOUNT_CONCURRENCY, (w) =>
    deps.rails.chains.createAddress(w.network, w.tenantId).then(
      (a) => a.address,
      (err: Error) => err,
    ),
  );
  const stored = missing.flatMap((w, i) => {
    const address = created[i]!;
    found.set(`${w.tenantId}:${w.network}`, address);
    return typeof address === 'string' ? [{ ...w, address }] : [];
  });
  if (stored.length > 0) {
    await deps.sql.rows(insertDepositAddresses, [
      stored.map(() => newId()),
      stored.map((s) => s.tenantId),
      stored.map((s) => s.network),
      stored.map((s) => s.address),
      deps.clock.now(),
    ]);
  }
  return found;
}

/** Where each priced payout is paid: its tenant's shared address, or a virtual account of its own. */
async function receivingAccounts(
  deps: Deps,
  payouts: readonly PayoutToPrice[],
  expiresAt: Date,
): Promise<(ReceivingAccount | Error)[]> {
  const networkOf = (p: PayoutToPrice) => p.settlement_network ?? deps.corridors.defaultNetwork();
  const crypto = payouts.filter((p) => p.settlement_currency === 'USDT');
  const addresses = await depositAddresses(
    deps,
    crypto.map((p) => ({ tenantId: p.tenant_id, network: networkOf(p) })),
  );
  return mapBounded(
    payouts,
    VIRTUAL_ACCOUNT_CONCURRENCY,
    async (payout): Promise<ReceivingAccount | Error> => {
      if (payout.settlement_currency === 'USDT') {
        const network = networkOf(payout);
        const address = addresses.get(`${payout.tenant_id}:${network}`)!;
        if (address instanceof Error) return address;
        return {
          accountUnique: address,
          providerName: `USDT on ${network}`,
          network: deps.corridors.networkLabel(network),
          chain: network,
          shared: true,
        };
      }
      try {
        // Reference = payout id: a retry after a lost answer gets the same account back.
        const account = await deps.rails.bank.createVirtualAccount({
          reference: payout.id,
          accountName: `${payout.tenant_name} payout ${payout.id.slice(-8)}`.slice(0, 100),
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
      } catch (err) {
        return err as Error;
      }
    },
  );
}

/** The CREATED payouts of the tasks. */
function readCreated(deps: Deps, tasks: readonly ClaimedTask[]): Promise<PayoutToPrice[]> {
  const ids = tasks.map((t) => t.subjectId);
  const tenants = tenantsOf(tasks);
  if (tenants) return deps.sql.rows<PayoutToPrice>(readCreatedPayoutsOfTenants, [ids, tenants]);
  return deps.sql.rows<PayoutToPrice>(readCreatedPayouts, [ids]);
}

/** Everything a claimed batch needs from outside the database, fetched with no transaction open. */
async function prepare(deps: Deps, tasks: readonly ClaimedTask[], expiresAt: Date): Promise<Prepared[]> {
  const payouts = new Map((await readCreated(deps, tasks)).map((p) => [p.id, p]));
  const stopped = await payeeChecks(deps, [...payouts.values()]);
  const live = tasks.filter((t) => payouts.has(t.subjectId) && !stopped.has(t.subjectId));
  const prices = await priceAll(
    deps,
    live.map((t) => payouts.get(t.subjectId)!),
  );
  // Only a priced payout asks for an account, as one-at-a-time generation did.
  const priced = live.flatMap((task, i) => {
    const p = prices[i]!;
    return p instanceof Error ? [] : [{ task, payout: payouts.get(task.subjectId)!, priced: p }];
  });
  const accounts = await receivingAccounts(
    deps,
    priced.map((p) => p.payout),
    expiresAt,
  );
  const byTask = new Map<string, Prepared>();
  live.forEach((task, i) => {
    const p = prices[i]!;
    if (p instanceof Error) byTask.set(task.id, afterError(task, p));
  });
  priced.forEach((p, i) => {
    const account = accounts[i]!;
    byTask.set(
      p.task.id,
      account instanceof Error ? afterError(p.task, account) : { ...p, kind: 'ready', account },
    );
  });
  for (const task of tasks) {
    const stop = stopped.get(task.subjectId);
    if (stop) byTask.set(task.id, { task, kind: 'payee', ...stop });
  }
  return tasks.map((task) => byTask.get(task.id) ?? { task, kind: 'done' });
}

/**
 * The payee name check before any price or account is asked for: completes the checks creation
 * left PENDING (their verdicts written at once), and returns the payouts the tenant's policy
 * holds or refuses, by id. A payout an operator already accepted goes on.
 */
async function payeeChecks(
  deps: Deps,
  payouts: readonly PayoutToPrice[],
): Promise<Map<string, { decision: 'hold' | 'refuse'; check: PayeeCheck }>> {
  const pending = payouts.filter((p) => p.payee_check === 'PENDING');
  const done = await mapBounded(pending, VIRTUAL_ACCOUNT_CONCURRENCY, (p) =>
    checkPayeeLater(deps, {
      destinationType: p.destination_type,
      currency: p.destination_currency,
      accountNumber: p.destination_account_unique,
      providerCode: p.destination_provider_code,
      accountName: p.destination_account_name,
    }),
  );
  if (pending.length > 0) {
    await deps.sql.rows(recordPayeeChecks, [
      pending.map((p) => p.id),
      done.map((d) => d.check),
      done.map((d) => d.institutionName),
      done.map((d) => d.checkedAt),
      pending.map((p) => p.tenant_id),
    ]);
  }
  const checks = new Map(pending.map((p, i) => [p.id, done[i]!.check] as const));
  const stopped = new Map<string, { decision: 'hold' | 'refuse'; check: PayeeCheck }>();
  for (const p of payouts) {
    const check = checks.get(p.id) ?? p.payee_check;
    if (check === null || p.payee_accepted) continue;
    const decision = payeeDecision(p.payee_name_policy, check);
    if (decision !== 'proceed') stopped.set(p.id, { decision, check });
  }
  return stopped;
}

/** The amounts a new instruction on a shared address may expect: its price, then up in steps of the currency's last decimal. */
interface AmountWindow {
  account: string;
  /** The account's tenant (a shared address is one tenant's). */
  tenantId: string;
  base: Decimal;
  step: Decimal;
  ceiling: Decimal;
}

function windowOf(item: Ready): AmountWindow {
  const step = toDecimal(1).shiftedBy(-currencyDecimals(item.payout.settlement_currency));
  const base = item.priced.settlementAmount;
  return {
    account: item.account.accountUnique,
    tenantId: item.payout.tenant_id,
    base,
    step,
    ceiling: base.plus(step.times(MAX_OFFSET_STEPS)),
  };
}

/** The smallest amount of the window that `used` (keys `account:amount`) lacks, now added to it; an error when none is free. */
function firstFree(w: AmountWindow, used: Set<string>): Decimal | Error {
  for (let candidate = w.base; candidate.lt(w.ceiling); candidate = candidate.plus(w.step)) {
    const key = `${w.account}:${candidate.toFixed()}`;
    if (!used.has(key)) {
      used.add(key);
      return candidate;
    }
  }
  return new ProviderUnavailableError(
    'instructions',
    `no free amount near ${w.base.toFixed()} on a shared address`,
  );
}

/** The open amounts in the windows (keys `account:amount`), this transaction's own new rows included. */
async function takenIn(tx: Sql, windows: readonly AmountWindow[]): Promise<Set<string>> {
  const taken = await tx.rows<{ account_unique: string; expected_amount: string }>(takenAmounts, [
    windows.map((w) => w.account),
    windows.map((w) => w.base.toFixed()),
    windows.map((w) => w.ceiling.toFixed()),
    windows.map((w) => w.tenantId),
  ]);
  return new Set(taken.map((row) => `${row.account_unique}:${toDecimal(row.expected_amount).toFixed()}`));
}

interface Generated {
  item: Ready;
  amount: Decimal;
  instruction: InstructionView;
}

function newInstruction(item: Ready, amount: Decimal, now: Date, expiresAt: Date): Generated {
  const { account } = item;
  return {
    item,
    amount,
    instruction: {
      id: newId(),
      rail: account.shared ? 'CRYPTO' : 'BANK_TRANSFER',
      account_unique: account.accountUnique,
      provider_name: account.providerName,
      network: account.network,
      expected_amount: amount,
      expected_currency: item.payout.settlement_currency,
      status: INITIAL_INSTRUCTION_STATUS,
      expires_at: expiresAt,
      paid_at: null,
      created_at: now,
    },
  };
}

/** Inserts instructions, leaving out those whose amount is open on their address; returns the payout ids inserted. */
async function insertNew(
  tx: Sql,
  rows: readonly Generated[],
  now: Date,
  expiresAt: Date,
): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const initial = initialState(paymentInstructionMachine, { expiresAt: expiresAt.toISOString() });
  const inserted = await tx.rows<{ payout_id: string }>(insertInstructions, [
    rows.map((g) => g.instruction.id),
    rows.map((g) => g.item.payout.tenant_id),
    rows.map((g) => g.item.payout.id),
    rows.map((g) => g.instruction.rail),
    rows.map((g) => g.instruction.account_unique),
    rows.map((g) => g.instruction.provider_name),
    rows.map((g) => g.instruction.network),
    rows.map((g) => g.item.account.chain),
    rows.map((g) => g.amount.toFixed()),
    rows.map((g) => g.instruction.expected_currency),
    initial.status,
    initial.snapshot,
    expiresAt,
    now,
  ]);
  return new Set(inserted.map((r) => r.payout_id));
}

/**
 * Inserts the instructions of the ready payouts, the shared addresses' rows locked. On a shared
 * address each expects the smallest amount ≥ its price, in steps of the currency's last decimal,
 * that no open instruction on the address (nor one earlier in the batch) expects. The first
 * insert tries the smallest amounts free within the batch, and the unique index of open amounts
 * turns away those already open; only for these are the open amounts read (one query, which sees
 * this batch's rows too) and the insert repeated. Usually nothing clashes and nothing is read: the
 * check costs no round trip, and no query plan that the table's statistics could lead astray (a
 * plan made while the table was nearly empty read every open instruction per window). Returns
 * what was inserted, and the payouts for which no amount is free, with their errors.
 */
async function insertInstructionsOf(
  tx: Sql,
  ready: readonly Ready[],
  now: Date,
  expiresAt: Date,
): Promise<{ generated: Generated[]; unplaced: { item: Ready; error: Error }[] }> {
  const generated: Generated[] = [];
  const unplaced: { item: Ready; error: Error }[] = [];
  const inBatch = new Set<string>();
  let pending = ready.map((item) => ({
    item,
    amount: item.account.shared ? firstFree(windowOf(item), inBatch) : item.priced.settlementAmount,
  }));
  for (let pass = 0; pending.length > 0; pass++) {
    const rows: Generated[] = [];
    for (const { item, amount } of pending) {
      if (amount instanceof Error) unplaced.push({ item, error: amount });
      else rows.push(newInstruction(item, amount, now, expiresAt));
    }
    const inserted = await insertNew(tx, rows, now, expiresAt);
    const clashed = rows.filter((g) => !inserted.has(g.item.payout.id));
    generated.push(...rows.filter((g) => inserted.has(g.item.payout.id)));
    if (clashed.length === 0) break;
    // A virtual account is the payout's own, and the second pass chose among amounts read under the lock.
    if (pass > 0 || clashed.some((g) => !g.item.account.shared)) {
      throw new Error(`instruction of payout ${clashed[0]!.item.payout.id} clashed with an open amount`);
    }
    const windows = clashed.map((g) => windowOf(g.item));
    const used = await takenIn(tx, windows);
    pending = clashed.map((g, i) => ({ item: g.item, amount: firstFree(windows[i]!, used) }));
  }
  return { generated, unplaced };
}

/**
 * Writes a prepared batch in the caller's transaction: locks the payouts (then the shared
 * addresses, sorted), inserts the instructions of those still CREATED, moves them through the
 * payout machine, fails the ones that failed for good, and completes their tasks. Returns the
 * tasks to try again (no free amount on an address), which it leaves open.
 */
async function writeBatch(
  tx: Sql,
  prepared: readonly Prepared[],
  now: Date,
  expiresAt: Date,
): Promise<Retry[]> {
  const touched = prepared
    .filter((p) => p.kind === 'ready' || p.kind === 'fail' || p.kind === 'payee')
    .map((p) => p.task);
  const locked = new Map(
    (touched.length > 0
      ? await lockPayouts(
          tx,
          touched.map((t) => t.subjectId),
          tenantsOf(touched),
        )
      : []
    ).map((p) => [p.id, p] as const),
  );
  const ready = prepared.filter(
    (p): p is Ready => p.kind === 'ready' && locked.get(p.payout.id)?.status === 'CREATED',
  );
  // Serialises instruction creation per shared address, across instances; sorted, so that two
  // batches never wait on each other in a cycle.
  const addresses = [
    ...new Set(ready.filter((p) => p.account.shared).map((p) => p.account.accountUnique)),
  ].sort();
  if (addresses.length > 0) await tx.rows(lockDepositAddresses, [addresses]);
  const { generated, unplaced } = await insertInstructionsOf(tx, ready, now, expiresAt);

  const retries: Retry[] = [];
  const failures = prepared.filter((p): p is Failed => p.kind === 'fail');
  for (const { item, error } of unplaced) {
    const after = afterError(item.task, error);
    if (after.kind === 'retry') retries.push(after);
    else failures.push(after);
  }

  const steps: PayoutStep[] = [];
  for (const { item, amount, instruction } of generated) {
    const { priced } = item;
    steps.push({
      payout: locked.get(item.payout.id)!,
      event: { type: 'INSTRUCTION_GENERATED', triggeredBy: 'SYSTEM', now },
      set: {
        exchangeRate: priced.exchangeRate,
        midMarketRate: priced.midMarketRate,
        platformFeeAmount: priced.platformFee,
        networkFeeAmount: priced.networkFee,
        totalFeeAmount: priced.totalFee,
        settlementAmount: amount,
      },
      instruction,
      note: {
        reasonDetail: {
          rate_source: priced.source,
          mid_market_rate: priced.midMarketRate.toFixed(),
          spread_percent: priced.spreadPercent.toFixed(),
          ...(amount.eq(priced.settlementAmount)
            ? {}
            : { uniqueness_offset: amount.minus(priced.settlementAmount).toFixed() }),
          ...(item.payout.quote_id ? { quote_id: item.payout.quote_id } : {}),
        },
      },
    });
  }
  for (const failure of failures) {
    const payout = locked.get(failure.task.subjectId);
    // No money was asked for yet: nothing to refund. A payout that moved on ignores the event.
    if (payout) {
      steps.push({
        payout,
        event: {
          type: 'INSTRUCTION_GENERATION_FAILED',
          failureReason: failure.reason,
          triggeredBy: 'SYSTEM',
          now,
        },
        note: { reasonDetail: { reason: failure.reason } },
      });
    }
  }
  for (const stop of prepared.filter((p): p is PayeeStop => p.kind === 'payee')) {
    const payout = locked.get(stop.task.subjectId);
    if (!payout) continue;
    steps.push({
      payout,
      event: {
        type: stop.decision === 'hold' ? 'PAYEE_NAME_HELD' : 'PAYEE_NAME_REFUSED',
        triggeredBy: 'SYSTEM',
        now,
      },
      note: { reasonDetail: { payee_name_check: stop.check } },
    });
  }
  await applyPayoutSteps(tx, steps);
  const retried = new Set(retries.map((r) => r.task.id));
  await completeTasks(
    tx,
    prepared.filter((p) => !retried.has(p.task.id)).map((p) => p.task),
    now,
  );
  return retries;
}

/** Puts tasks back for a later attempt with backoff, keeping what went wrong. */
async function retryLater(deps: Deps, retries: readonly Retry[]): Promise<void> {
  const now = deps.clock.now();
  await retryTasks(
    deps.sql,
    retries.map(({ task, error }) => ({
      task,
      dueAt: new Date(now.getTime() + taskBackoffMs(task.attempts)),
      error,
    })),
    now,
  );
}

/**
 * Generates the instructions of a batch of claimed GENERATE_INSTRUCTION tasks: provider calls
 * first, then one transaction for the whole batch. Each task ends as one-at-a-time generation
 * would end it: done (generated, failed for good, or nothing left to do) or put back for a retry
 * with backoff. One bad payout never holds up the others: should the batch's transaction fail,
 * each payout is written again in a transaction of its own.
 */
export async function generateInstructions(deps: Deps, tasks: readonly ClaimedTask[]): Promise<void> {
  await writeGeneration(deps, await prepareGeneration(deps, tasks));
}

/** A claimed batch with everything from outside the database gathered: ready to be written. */
export interface PreparedGeneration {
  prepared: Prepared[];
  now: Date;
  expiresAt: Date;
}

/**
 * The first half of {@link generateInstructions}: reads and provider calls, no transaction and no
 * lock. The job prepares the next batch while the previous one is being written.
 */
export async function prepareGeneration(
  deps: Deps,
  tasks: readonly ClaimedTask[],
): Promise<PreparedGeneration> {
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + deps.config.PAYMENT_INSTRUCTION_TTL_MS);
  return { prepared: tasks.length > 0 ? await prepare(deps, tasks, expiresAt) : [], now, expiresAt };
}

/** The second half of {@link generateInstructions}: the batch's transaction, then the retries. */
export async function writeGeneration(deps: Deps, batch: PreparedGeneration): Promise<void> {
  const { prepared, now, expiresAt } = batch;
  const retries = prepared.filter((p): p is Retry => p.kind === 'retry');
  const rest = prepared.filter((p) => p.kind !== 'retry');
  if (rest.length > 0) retries.push(...(await writeIsolating(deps, rest, now, expiresAt)));
  await retryLater(deps, retries);
}

/**
 * Writes prepared items in one transaction; should it fail (the database refused something),
 * each item again in a transaction of its own, so that one payout's bad data holds up only that
 * payout: its task is tried again later, whatever its attempts (a write failure is not a
 * provider's verdict on the payout).
 */
async function writeIsolating(
  deps: Deps,
  items: readonly Prepared[],
  now: Date,
  expiresAt: Date,
): Promise<Retry[]> {
  try {
    return await deps.sql.transaction((tx) => writeBatch(tx, items, now, expiresAt));
  } catch (err) {
    if (items.length === 1) {
      const { task } = items[0]!;
      deps.log.warn({ err, task: task.id }, 'instruction generation failed; will retry');
      const error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      return [{ task, kind: 'retry', error }];
    }
    deps.log.warn({ err, tasks: items.length }, 'instruction batch failed; writing its payouts one by one');
    const retries: Retry[] = [];
    for (const item of items) retries.push(...(await writeIsolating(deps, [item], now, expiresAt)));
    return retries;
  }
}

/**
 * The lapsed instructions that may end now. On-time money must never turn a payout EXPIRED, and
 * expiry is final, so an instruction past its expires_at ends only once:
 *
 * - its rail has been read past expires_at (`rail_cursors.read_through`: the chain's scanned
 *   block time, the bank statement's time), so that every transfer or credit that arrived before
 *   it is recorded, however late the service found it; a rail that cannot be read holds its
 *   instructions open until it can;
 * - no money to its account that arrived before expires_at still waits for confirmations or for
 *   matching (which pays the instruction if it covers it); the money to an account is its
 *   tenant's, and is looked for with that tenant, on the instruction's node once sharded.
 */
const lapsedInstructions = statement(
  'instructions_lapsed_lock',
  `select i.id, i.tenant_id, i.payout_id, i.status, i.snapshot
     from payment_instructions i
     join rail_cursors c on c.source = coalesce(i.chain, 'BANK')
    where i.status = 'UNPAID' and i.expires_at <= $1 and c.read_through >= i.expires_at
      and not exists (
            select 1 from inflows f
             where f.to_account = i.account_unique and f.rail = i.rail and f.tenant_id = i.tenant_id
               and f.state in ('PENDING_CONFIRMATION', 'CONFIRMED') and f.arrived_at < i.expires_at)
    order by i.expires_at
    limit $2
    for update of i skip locked`,
);

const updateInstructionStatus = statement(
  'instructions_apply_steps',
  `update payment_instructions i
      set status = u->>1, snapshot = u->2, paid_at = coalesce((u->>3)::timestamptz, i.paid_at), updated_at = $2
     from jsonb_array_elements($1::jsonb) as u
    where i.id = (u->>0)::uuid and i.tenant_id = (u->>4)::uuid`,
);

/** A payment instruction's transition, as the machine's `step()` computed it. */
export interface InstructionWrite {
  id: string;
  tenantId: string;
  status: string;
  snapshot: Record<string, unknown>;
  /** Set when the transition paid the instruction; null keeps the column as it is. */
  paidAt: Date | null;
}

/**
 * Writes a batch of instruction transitions (status, snapshot, paid_at) in one statement, inside
 * the caller's transaction: the one place a payment instruction's status is written in batches,
 * for expiry here and for payment in settlement matching.
 */
export async function writeInstructionSteps(
  tx: Sql,
  writes: readonly InstructionWrite[],
  now: Date,
): Promise<void> {
  if (writes.length === 0) return;
  // One JSON array of `[id, status, snapshot, paid_at, tenant_id]` rows: the snapshots go as JSON,
  // not escaped into an array literal (see applyPayoutSteps).
  const rows = writes.map((w) => [w.id, w.status, w.snapshot, w.paidAt, w.tenantId]);
  await tx.rows(updateInstructionStatus, [JSON.stringify(rows), now]);
}

/**
 * Ends every UNPAID instruction whose time is up, in batches: the instruction goes EXPIRED and
 * its payout EXPIRED (or stays held when money arrived short). Returns how many it ended.
 */
export async function expireInstructions(deps: Deps, limit = 200): Promise<number> {
  const now = deps.clock.now();
  return deps.sql.transaction(async (tx) => {
    // Instructions first, then their payouts: the lock order settlement matching uses too.
    const due = await tx.rows<{
      id: string;
      tenant_id: string;
      payout_id: string;
      status: string;
      snapshot: Record<string, unknown>;
    }>(lapsedInstructions, [now, limit]);
    const expired = due.flatMap((row) => {
      const done = step(paymentInstructionMachine, row, { type: 'EXPIRE', now });
      return done.taken ? [{ row, done }] : [];
    });
    if (expired.length > 0) {
      await writeInstructionSteps(
        tx,
        expired.map((e) => ({
          id: e.row.id,
          tenantId: e.row.tenant_id,
          status: e.done.to,
          snapshot: e.done.snapshot,
          paidAt: null,
        })),
        now,
      );
      // Read after the update: the payload of payout.expired shows the instruction EXPIRED.
      const payouts = await lockPayouts(
        tx,
        expired.map((e) => e.row.payout_id),
        expired.map((e) => e.row.tenant_id),
      );
      await applyPayoutSteps(
        tx,
        payouts.map((payout) => ({
          payout,
          event: { type: 'INSTRUCTION_EXPIRED', triggeredBy: 'SYSTEM', now },
        })),
      );
    }
    // Counted by what ended, so a row the machine refuses cannot keep the caller's loop going.
    return expired.length;
  });
}
