import { randomUUID } from 'node:crypto';
import { createTRPCClient, httpLink } from '@trpc/client';
import { expect } from 'chai';
import { statement } from '#src/db/sql.ts';
import { Outflow } from '#src/dispatch/entities.ts';
import { PaymentInstruction } from '#src/instructions/entities.ts';
import { runInstructionsOnce } from '#src/instructions/job.ts';
import { dayOf } from '#src/lib/days.ts';
import { toDecimal } from '#src/lib/money.ts';
import { Payout } from '#src/payouts/entities.ts';
import type { BreakKind } from '#src/reconciliation/entities.ts';
import { pairReferences } from '#src/reconciliation/match.ts';
import { Refund } from '#src/refunds/entities.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import type { AppRouter } from '#src/router.ts';
import { Inflow } from '#src/settlement/entities.ts';
import { heldMoney, strayInflow } from '../approvals/fixtures.ts';
import { type ApiResponse, call, type Merchant } from '../client.ts';
import {
  eventually,
  failedPayoutWithRefund,
  merchantWith,
  mine,
  paidPayout,
  payoutOf,
  payoutTo,
} from '../dispatch/fixtures.ts';
import { harness } from '../harness.ts';
import { approvedMove, cliAs, newOperator, operatorWith } from '../operators/fixtures.ts';
import { allBreaks, type Break } from '../reconciliation/fixtures.ts';
import {
  admin,
  confirmationsOf,
  deps,
  handledCredit,
  lapse,
  payBank,
  payoutWithInstruction,
  sandbox,
  sendUsdt,
  settle,
} from '../settlement/fixtures.ts';
import {
  type Movement,
  type PerCurrency,
  paidOut,
  paidOutMovements,
  perCurrency,
  priceOf,
  statementOf,
} from './fixtures.ts';

/**
 * Every scenario of the sandbox (issue 24: exact, over, under, late, expired, failed with refund,
 * refund without destination, operator attribution and return, every kind of break), driven
 * through the sandbox on one day, then read in each view that shows money: the merchant's
 * statement (REST), the console's Money page (`admin.ledger.*`, through the tRPC client the console
 * uses) and the day's reconciliation run (`recon run`, as the CLI runs it). Each scenario has a
 * merchant of its own, so that its tenant's balance lines and its deposit address are its alone.
 */

/** What a scenario left behind: its merchant and payout (none for money the books never had). */
interface Driven {
  merchant: Merchant | null;
  payoutId: string | null;
  /** Rail references of the scenario that no record of the tenant names (a debit nobody made). */
  strays?: { rail: 'BANK_TRANSFER'; reference: string }[];
}

interface Scenario {
  name: string;
  /** The part that must happen before the day's instructions lapse (one lapse for all). */
  beforeLapse?(): Promise<Driven>;
  drive(prepared: Driven | undefined): Promise<Driven>;
  /** The payout's movements, `type currency amount`, in any order. Required with a payout. */
  movements?(d: Driven): Promise<string[]>;
  /** Whether the payout still holds money (its statement sums to that, not to zero). */
  holding?: boolean;
  /** Balances of the tenant's accounts other than its payouts', by account (none listed: zero). */
  lines?(d: Driven): Promise<Record<string, PerCurrency>>;
  /** How an operator resolves the scenario's break under four eyes, once the day's run found it. */
  resolution?: 'BOOKED_RAIL' | 'REFUNDED_RETURN';
  /** The breaks the day's run finds, by kind and reference; every other rail line matches. */
  breaks?(d: Driven): Promise<{ kind: BreakKind; reference: string; status: 'OPEN' | 'RESOLVED' }[]>;
}

/** The console's tRPC client (src/console/app/api.ts), signed in as an operator. */
function consoleApi() {
  return createTRPCClient<AppRouter>({
    links: [
      httpLink({
        url: `${harness().url}/trpc`,
        headers: { authorization: `Bearer ${harness().adminToken}` },
      }),
    ],
  });
}

const em = () => deps().orm.em.fork();

type Entry = Awaited<
  ReturnType<ReturnType<typeof consoleApi>['admin']['ledger']['entries']['query']>
>['data'][number];

/** The Money page's drill-down of a balance line: its entries (in a window of time), every page. */
async function drillDown(line: string, window: { from?: string; to?: string } = {}): Promise<Entry[]> {
  const shown: Entry[] = [];
  let after: { account: string; created_at: string; id: string } | undefined;
  do {
    const page = await consoleApi().admin.ledger.entries.query({
      account: line,
      ...window,
      limit: 500,
      after,
    });
    shown.push(...page.data);
    after = page.next ?? undefined;
  } while (after);
  return shown;
}

async function inflowsOf(payoutId: string): Promise<Inflow[]> {
  return em().find(Inflow, { payout: payoutId }, { orderBy: { createdAt: 'asc' } });
}

async function outflowOf(payoutId: string): Promise<Outflow> {
  const [outflow] = await em().find(Outflow, { payout: payoutId }, { orderBy: { createdAt: 'desc' } });
  expect(outflow, `an outflow of ${payoutId}`).to.not.equal(undefined);
  return outflow!;
}

/** A new NGN payout with its virtual account, waiting for money. */
async function awaitingNgn(merchant: Merchant, suffix: string) {
  const res = await call('POST', '/v1/payouts', { key: merchant.key, body: payoutTo(suffix, 'NGN') });
  expect(res.status, res.text).to.equal(201);
  await runInstructionsOnce(deps());
  const instruction = await em().findOneOrFail(PaymentInstruction, { payout: res.body.id });
  return {
    id: res.body.id as string,
    account: instruction.accountUnique,
    expected: instruction.expectedAmount,
  };
}

async function succeeded(merchant: Merchant, payoutId: string): Promise<void> {
  expect((await paidOut(merchant, payoutId)).status).to.equal('SUCCESSFUL');
}

/** The refund's movements as the statement shows them: its fee kept, the rest refunded. */
async function refundMovements(payoutId: string): Promise<string[]> {
  const refund = await em().findOneOrFail(Refund, { payout: payoutId });
  const c = refund.receivedCurrency;
  return [
    ...(refund.networkFeeAmount.isZero() ? [] : [`refund_fee ${c} -${refund.networkFeeAmount.toFixed()}`]),
    `refunded ${c} -${refund.refundAmount.toFixed()}`,
  ];
}

async function refundSucceeded(payoutId: string): Promise<void> {
  await eventually(`the refund of ${payoutId} to arrive`, async () => {
    await mine('TRON', confirmationsOf('TRON'));
    harness().clock.advance(10_000);
    await runRefundsOnce(deps());
    return (await em().findOneOrFail(Refund, { payout: payoutId })).status === 'SUCCESSFUL';
  });
}

const SCENARIOS: Scenario[] = [
  {
    name: 'exact, on the bank rail',
    async drive() {
      const merchant = await merchantWith();
      const payoutId = await paidPayout(merchant, payoutTo('5678', 'NGN'));
      await succeeded(merchant, payoutId);
      return { merchant, payoutId };
    },
    movements: async (d) => paidOutMovements(await priceOf(d.payoutId!)),
  },
  {
    name: 'over, on a chain: the excess set aside for the merchant',
    async drive() {
      const merchant = await merchantWith();
      const payoutId = await paidPayout(merchant, payoutTo('5679', 'USDT'), { overpay: '2.5' });
      await succeeded(merchant, payoutId);
      return { merchant, payoutId };
    },
    async movements(d) {
      const p = await priceOf(d.payoutId!);
      return [
        ...paidOutMovements(p, toDecimal(p.settlement).plus('2.5').toFixed()),
        'overpayment_set_aside USDT -2.5',
      ];
    },
    lines: async (d) => ({ [`tenants:${d.merchant!.tenantId}:to_return:overpayments`]: { USDT: '2.5' } }),
  },
  {
    name: 'over, the excess returned to the merchant by an operator under four eyes',
    async drive() {
      const merchant = await merchantWith();
      const payoutId = await paidPayout(merchant, payoutTo('5679', 'USDT'), { overpay: '2.5' });
      await succeeded(merchant, payoutId);
      const proposer = await newOperator('operator');
      const { approval } = await cliAs(proposer)('overpayment', 'return', payoutId, '--note', 'asked back');
      await cliAs(await operatorWith('approver'))('approval', 'approve', approval.id);
      await refundSucceeded(payoutId);
      return { merchant, payoutId };
    },
    async movements(d) {
      const p = await priceOf(d.payoutId!);
      return [
        ...paidOutMovements(p, toDecimal(p.settlement).plus('2.5').toFixed()),
        'overpayment_set_aside USDT -2.5',
        'overpayment_set_aside USDT 2.5',
        ...(await refundMovements(d.payoutId!)),
      ];
    },
    async lines(d) {
      const refund = await em().findOneOrFail(Refund, { payout: d.payoutId });
      return { [`world:merchants:${d.merchant!.tenantId}`]: { USDT: refund.refundAmount.toFixed() } };
    },
  },
  {
    name: 'under, on the bank rail: still holding what arrived',
    async drive() {
      const merchant = await merchantWith();
      const payout = await awaitingNgn(merchant, '5678');
      const credit = await payBank(payout.account, payout.expected.minus(1000).toFixed(2));
      await handledCredit(credit.session_id);
      expect((await payoutOf(merchant, payout.id)).status).to.equal('PENDING_PAYMENT');
      return { merchant, payoutId: payout.id };
    },
    holding: true,
    async movements(d) {
      const p = await priceOf(d.payoutId!);
      return [`money_received NGN ${toDecimal(p.settlement).minus(1000).toFixed()}`];
    },
  },
  {
    name: 'under, then topped up and paid out',
    async drive() {
      const merchant = await merchantWith();
      const payout = await awaitingNgn(merchant, '5678');
      await handledCredit((await payBank(payout.account, payout.expected.minus(1000).toFixed(2))).session_id);
      await handledCredit((await payBank(payout.account, '1000.00')).session_id);
      expect((await payoutOf(merchant, payout.id)).status).to.equal('PAYMENT_RECEIVED');
      await succeeded(merchant, payout.id);
      return { merchant, payoutId: payout.id };
    },
    async movements(d) {
      const p = await priceOf(d.payoutId!);
      const [, ...rest] = paidOutMovements(p);
      return [
        `money_received NGN ${toDecimal(p.settlement).minus(1000).toFixed()}`,
        'money_received NGN 1000',
        ...rest,
      ];
    },
  },
  {
    name: 'expired: nothing ever arrived',
    async beforeLapse() {
      const merchant = await merchantWith();
      return { merchant, payoutId: (await payoutWithInstruction(merchant)).id };
    },
    async drive(prepared) {
      expect((await payoutOf(prepared!.merchant!, prepared!.payoutId!)).status).to.equal('EXPIRED');
      return prepared!;
    },
    movements: async () => [],
  },
  {
    name: 'late: money after expiry, in suspense',
    async beforeLapse() {
      const merchant = await merchantWith();
      return { merchant, payoutId: (await payoutWithInstruction(merchant)).id };
    },
    async drive(prepared) {
      const { merchant, payoutId } = prepared!;
      expect((await payoutOf(merchant!, payoutId!)).status).to.equal('EXPIRED');
      const instruction = await em().findOneOrFail(PaymentInstruction, { payout: payoutId });
      await sendUsdt('TRON', instruction.accountUnique, instruction.expectedAmount.toFixed());
      await mine('TRON', confirmationsOf('TRON'));
      await settle();
      const [late] = await em().find(Inflow, { tenant: merchant!.tenantId });
      expect(late).to.include({ state: 'UNMATCHED', payout: null });
      return prepared!;
    },
    movements: async () => [],
    async lines(d) {
      const instruction = await em().findOneOrFail(PaymentInstruction, { payout: d.payoutId });
      return { [`tenants:${d.merchant!.tenantId}:suspense`]: { USDT: instruction.expectedAmount.toFixed() } };
    },
  },
  {
    name: 'failed at the processor, refunded at the bank',
    async drive() {
      const merchant = await merchantWith();
      const { payoutId, refund } = await failedPayoutWithRefund(merchant, 'NGN');
      expect(refund.status).to.equal('SUCCESSFUL');
      return { merchant, payoutId };
    },
    async movements(d) {
      const p = await priceOf(d.payoutId!);
      return [`money_received NGN ${p.settlement}`, ...(await refundMovements(d.payoutId!))];
    },
    async lines(d) {
      const refund = await em().findOneOrFail(Refund, { payout: d.payoutId });
      return { [`world:merchants:${d.merchant!.tenantId}`]: { NGN: refund.refundAmount.toFixed() } };
    },
  },
  {
    name: 'failed at the processor, refunded on a chain',
    async drive() {
      const merchant = await merchantWith();
      const { payoutId } = await failedPayoutWithRefund(merchant, 'USDT');
      await refundSucceeded(payoutId);
      return { merchant, payoutId };
    },
    async movements(d) {
      const p = await priceOf(d.payoutId!);
      return [`money_received USDT ${p.settlement}`, ...(await refundMovements(d.payoutId!))];
    },
    async lines(d) {
      const refund = await em().findOneOrFail(Refund, { payout: d.payoutId });
      return { [`world:merchants:${d.merchant!.tenantId}`]: { USDT: refund.refundAmount.toFixed() } };
    },
  },
  {
    name: 'refund without destination: the failed payout keeps the money',
    drive: () => heldMoney({ destination: false }),
    holding: true,
    movements: async (d) => [`money_received NGN ${(await priceOf(d.payoutId!)).settlement}`],
  },
  {
    name: 'operator attribution: held money attributed to a payout under four eyes',
    async drive() {
      const merchant = await merchantWith();
      const stray = await strayInflow(merchant);
      await approvedMove('inflow', 'attribute', stray.inflowId, '--payout', stray.payoutId);
      return { merchant, payoutId: stray.payoutId };
    },
    holding: true,
    movements: async () => ['money_received USDT 30'],
  },
  {
    name: 'operator return: held money returned to the merchant under four eyes',
    async drive() {
      const merchant = await merchantWith();
      const stray = await strayInflow(merchant);
      const reference = `FT-${randomUUID().slice(0, 8)}`;
      await approvedMove('inflow', 'return', stray.inflowId, '--reference', reference);
      return { merchant, payoutId: stray.payoutId };
    },
    movements: async () => [],
    lines: async (d) => ({ [`world:merchants:${d.merchant!.tenantId}`]: { USDT: '30' } }),
  },
  {
    name: 'break: a bank credit reversed after it was recorded',
    async drive() {
      const merchant = await merchantWith();
      const payoutId = await paidPayout(merchant, payoutTo('5678', 'NGN'));
      await succeeded(merchant, payoutId);
      const [inflow] = await inflowsOf(payoutId);
      const reversed = await sandbox(`/sandbox/bank/credits/${inflow!.externalRef}/reversal`, {});
      expect(reversed.status, reversed.text).to.equal(201);
      return { merchant, payoutId };
    },
    // The reversal moves nothing by itself: the run's break does, once an operator books what the
    // bank shows. The money leaves the payout, and the service advances it back.
    resolution: 'BOOKED_RAIL',
    async movements(d) {
      const p = await priceOf(d.payoutId!);
      return [
        ...paidOutMovements(p),
        `reversed NGN -${p.settlement}`,
        `reversal_covered NGN ${p.settlement}`,
      ];
    },
    async breaks(d) {
      const [inflow] = await inflowsOf(d.payoutId!);
      return [{ kind: 'STATE_DIFFERS', reference: inflow!.externalRef, status: 'RESOLVED' }];
    },
  },
  {
    name: 'break: a statement amount that differs from the notification',
    async drive() {
      const merchant = await merchantWith();
      const payout = await awaitingNgn(merchant, '5678');
      const credit = await sandbox('/sandbox/bank/transfers', {
        account_number: payout.account,
        amount: payout.expected.toFixed(2),
        statement_amount: payout.expected.minus(10).toFixed(2),
        currency: 'NGN',
      });
      expect(credit.status, credit.text).to.equal(201);
      await handledCredit(credit.body.session_id);
      expect((await payoutOf(merchant, payout.id)).status).to.equal('PAYMENT_RECEIVED');
      await succeeded(merchant, payout.id);
      return { merchant, payoutId: payout.id };
    },
    movements: async (d) => paidOutMovements(await priceOf(d.payoutId!)),
    async breaks(d) {
      const [inflow] = await inflowsOf(d.payoutId!);
      return [{ kind: 'AMOUNT_DIFFERS', reference: inflow!.externalRef, status: 'OPEN' }];
    },
  },
  {
    name: 'break: the processor returns a payout days after its success (refunded under four eyes)',
    resolution: 'REFUNDED_RETURN',
    async drive() {
      const merchant = await merchantWith();
      const payoutId = await paidPayout(merchant, payoutTo('1005', 'NGN'));
      await succeeded(merchant, payoutId);
      return { merchant, payoutId };
    },
    async movements(d) {
      const p = await priceOf(d.payoutId!);
      const refund = await em().findOneOrFail(Refund, { payout: d.payoutId });
      return [
        ...paidOutMovements(p),
        `returned ${p.d} ${p.destination}`,
        `conversion ${p.d} -${p.destination}`,
        `conversion ${p.s} ${refund.receivedAmount.toFixed()}`,
        ...(await refundMovements(d.payoutId!)),
      ];
    },
    async lines(d) {
      const refund = await em().findOneOrFail(Refund, { payout: d.payoutId });
      return { [`world:merchants:${d.merchant!.tenantId}`]: { NGN: refund.refundAmount.toFixed() } };
    },
    async breaks(d) {
      const outflow = await outflowOf(d.payoutId!);
      return [{ kind: 'STATE_DIFFERS', reference: outflow.id, status: 'RESOLVED' }];
    },
  },
  {
    name: 'break: a payout missing from the processor’s report',
    async drive() {
      const merchant = await merchantWith();
      const payoutId = await paidPayout(merchant, payoutTo('1006', 'NGN'));
      await succeeded(merchant, payoutId);
      return { merchant, payoutId };
    },
    movements: async (d) => paidOutMovements(await priceOf(d.payoutId!)),
    async breaks(d) {
      const outflow = await outflowOf(d.payoutId!);
      return [{ kind: 'MISSING_ON_RAIL', reference: outflow.id, status: 'OPEN' }];
    },
  },
  {
    name: 'break: money the bank sent that the books lack',
    async drive() {
      const reference = `${randomUUID()}:1`;
      const sent = await sandbox('/bank/transfers', {
        reference,
        bank_code: '058',
        account_number: '0123456789',
        account_name: 'Ada Obi',
        amount: '2500.00',
        narration: 'not ours',
      });
      expect(sent.status, sent.text).to.equal(201);
      return { merchant: null, payoutId: null, strays: [{ rail: 'BANK_TRANSFER', reference }] };
    },
    breaks: async (d) => [{ kind: 'MISSING_IN_LEDGER', reference: d.strays![0]!.reference, status: 'OPEN' }],
  },
];

const LATE_RETURN = SCENARIOS.find((s) => s.name.startsWith('break: the processor returns'))!;

/** A run of `recon run` for a day, every rail. */
interface DayRuns {
  runs: {
    rail: string;
    state: string;
    accounts: {
      account: string;
      matched_count: number;
      rail_balance: string | null;
      ledger_balance: string | null;
    }[];
  }[];
}

async function reconcile(day: string): Promise<DayRuns> {
  const run: DayRuns = await admin('recon', 'run', '--date', day);
  expect(run.runs.map((r) => `${r.rail} ${r.state}`).sort()).to.deep.equal([
    'BANK_TRANSFER DONE',
    'CRYPTO DONE',
    'PROCESSOR DONE',
  ]);
  return run;
}

/** One line of a rail's own record that belongs to a scenario. */
interface RailLine {
  rail: 'BANK_TRANSFER' | 'CRYPTO' | 'PROCESSOR';
  reference: string;
}

/** Every line the rails (the sandbox's own records) hold of a scenario's money. */
async function railLines(d: Driven): Promise<RailLine[]> {
  const lines: RailLine[] = [...(d.strays ?? [])];
  if (!d.merchant) return lines;
  const tenant = d.merchant.tenantId;
  const sandbox = harness().sandbox;
  const instructions = await em().find(PaymentInstruction, { tenant, rail: 'BANK_TRANSFER' });
  for (const i of instructions)
    for (const c of sandbox.bank.credits(i.accountUnique))
      lines.push({ rail: 'BANK_TRANSFER', reference: c.sessionId });
  const inflows = await em().find(Inflow, { tenant });
  for (const i of inflows.filter((i) => i.rail === 'CRYPTO'))
    lines.push({ rail: 'CRYPTO', reference: i.externalRef });
  // Every inflow is a line of its rail, and every credit of the bank an inflow.
  expect(inflows.map((i) => i.externalRef).sort()).to.deep.equal(lines.map((l) => l.reference).sort());
  for (const o of await em().find(Outflow, { tenant })) {
    const [paid] = sandbox.processor.payouts(o.id);
    if (paid && paid.status !== 'ACCEPTED') lines.push({ rail: 'PROCESSOR', reference: o.id });
  }
  for (const r of await em().find(Refund, { tenant })) {
    const reference = `${r.id}:${r.attemptNumber}`;
    if (sandbox.bank.transfers().some((t) => t.reference === reference))
      lines.push({ rail: 'BANK_TRANSFER', reference });
    for (const network of ['TRON', 'BSC'] as const)
      if (sandbox.chains.sends(network).some((s) => s.reference === reference && s.tx !== null))
        lines.push({ rail: 'CRYPTO', reference });
  }
  return lines;
}

const keptRailLines = statement(
  'test_every_view_rail_lines',
  'select occurred_at from recon_rail_lines where rail = $1 and reference = $2',
);
const keptProcessorLines = statement(
  'test_every_view_processor_lines',
  'select processor, settled_at as occurred_at from recon_processor_lines where reference = $1',
);

/** The days a rail line was kept for by the runs, and the processor's name for a report line. */
async function keptLine(line: RailLine): Promise<{ days: string[]; processor?: string }> {
  if (line.rail === 'PROCESSOR') {
    const rows = await deps().sql.rows<{ processor: string; occurred_at: Date }>(keptProcessorLines, [
      line.reference,
    ]);
    return { days: rows.map((r) => dayOf(new Date(r.occurred_at))), processor: rows[0]?.processor };
  }
  const rows = await deps().sql.rows<{ occurred_at: Date }>(keptRailLines, [line.rail, line.reference]);
  return { days: [...new Set(rows.map((r) => dayOf(new Date(r.occurred_at))))] };
}

describe('every scenario of the sandbox, in every view that shows money', function () {
  // Every scenario through the sandbox, one after the other, on one day.
  this.timeout(240_000);
  const driven = new Map<Scenario, Driven>();
  let day: string;
  let runs: DayRuns;
  let breaks: Break[];
  let balances: { account: string; currency: string; balance: string; entries: number }[];

  before(async () => {
    // One UTC day for the whole story: started early enough for the day to hold it.
    const now = harness().clock.now().getTime();
    const midnight = Math.ceil(now / 86_400_000) * 86_400_000;
    if (midnight - now < 6 * 3_600_000) harness().clock.set(new Date(midnight + 60_000));
    day = dayOf(harness().clock.now());

    const prepared = new Map<Scenario, Driven>();
    for (const s of SCENARIOS) if (s.beforeLapse) prepared.set(s, await s.beforeLapse());
    await lapse(deps().config.PAYMENT_INSTRUCTION_TTL_MS + 1000);
    for (const s of SCENARIOS) driven.set(s, await s.drive(prepared.get(s)));
    expect(dayOf(harness().clock.now()), 'the scenarios fit in one day').to.equal(day);

    // Three days later the processor's report lists the late return; the day's run finds it.
    harness().clock.advance(3 * 86_400_000 + 60_000);
    runs = await reconcile(day);

    // The breaks resolved under four eyes: the reversal booked, the returned money refunded.
    const operator = await newOperator('operator');
    const approver = await operatorWith('approver');
    const open = (await allBreaks()).filter((b) => b.status === 'OPEN');
    for (const s of SCENARIOS.filter((s) => s.resolution)) {
      const [expected] = await s.breaks!(driven.get(s)!);
      const found = open.find((b) => b.reference === expected!.reference && b.kind === expected!.kind);
      expect(found, `the break of ${s.name}`).to.not.equal(undefined);
      const proposed = await cliAs(operator)(
        'recon',
        'propose',
        found!.id,
        '--resolution',
        s.resolution!,
        '--note',
        `${s.name}: as the rail says`,
      );
      await cliAs(approver)('approval', 'approve', proposed.approval.id);
    }
    const late = driven.get(LATE_RETURN)!;
    await eventually('the returned money refunded', async () => {
      await runRefundsOnce(deps());
      const refund = await em().findOne(Refund, { payout: late.payoutId });
      return refund?.status === 'SUCCESSFUL';
    });
    // The refund left on the day of the resolution: that day's run matches it.
    await reconcile(dayOf(harness().clock.now()));

    breaks = await allBreaks();
    balances = (await consoleApi().admin.ledger.balances.query({})).data;
  });

  it('the Money page’s lines add up to zero in every currency', () => {
    expect(perCurrency(balances.map((b) => ({ currency: b.currency, amount: b.balance })))).to.deep.equal({});
  });

  for (const scenario of SCENARIOS) {
    describe(scenario.name, () => {
      const d = () => driven.get(scenario)!;

      if (scenario.movements) {
        it('the merchant’s statement: its movements, summing to what the payout holds', async () => {
          const { merchant, payoutId } = d();
          const movements = await statementOf(merchant!, payoutId!);
          const expected = await scenario.movements!(d());
          expect(movements.map((m) => `${m.type} ${m.currency} ${m.amount}`)).to.have.members(expected);
          expect(movements).to.have.length(expected.length);
          expect(movements.every((m) => m.payout_id === payoutId)).to.equal(true);
          const times = movements.map((m) => Date.parse(m.created_at));
          expect(times).to.deep.equal([...times].sort((a, b) => a - b));
          const sums = perCurrency(movements);
          if (!scenario.holding) expect(sums, 'a final payout sums to zero').to.deep.equal({});
          else expect(sums, 'a payout holding money').to.not.deep.equal({});
          const ledger = await consoleApi().admin.ledger.payout.query({ payout_id: payoutId! });
          expect(sums, 'what the ledger says it holds').to.deep.equal(perCurrency(ledger.holds));
          // The same movements, the same entries of the ledger.
          expect(movements.map((m) => m.id)).to.deep.equal(
            ledger.entries.filter((e) => e.movement).map((e) => e.id),
          );

          // The tenant's list filtered on the payout: the same movements, newest first.
          const listed: Movement[] = [];
          let cursor: string | null = null;
          do {
            const res: ApiResponse = await call(
              'GET',
              `/v1/money-movements?payout_id=${payoutId}&limit=5${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
              { key: merchant!.key },
            );
            expect(res.status, res.text).to.equal(200);
            listed.push(...res.body.data);
            cursor = res.body.meta.next_cursor;
          } while (cursor);
          expect(listed).to.deep.equal([...movements].reverse());
        });

        it('the Money page: the payout’s entries balanced, in the drill-down, and its tenant’s lines', async () => {
          const { merchant, payoutId } = d();
          const api = consoleApi();
          const tenant = merchant!.tenantId;
          const ledger = await api.admin.ledger.payout.query({ payout_id: payoutId! });
          // Each ledger transaction of the payout sums to zero in every currency.
          const transactions = Map.groupBy(ledger.entries, (e) => e.transaction_id);
          for (const [id, entries] of transactions)
            expect(perCurrency(entries), `transaction ${id}`).to.deep.equal({});

          // Each entry under the balance line it is summed into, naming the payout behind it.
          const lineOf = (account: string) =>
            balances
              .map((b) => b.account)
              .filter((a) => account === a || account.startsWith(`${a}:`))
              .sort((a, b) => b.length - a.length)[0];
          const byLine = Map.groupBy(ledger.entries, (e) => lineOf(e.account));
          for (const [line, entries] of byLine) {
            expect(line, `a balance line for ${entries[0]!.account}`).to.be.a('string');
            const from = entries[0]!.created_at;
            const to = new Date(Date.parse(entries.at(-1)!.created_at) + 1).toISOString();
            const shown = await drillDown(line!, { from, to });
            const ids = new Map(shown.map((e) => [e.id, e]));
            for (const e of entries) expect(ids.get(e.id), `${e.account} ${e.amount}`).to.deep.equal(e);
          }

          // The tenant's lines: its payouts hold what their statements say, suspense the money
          // attributed to no payout (HELD and UNMATCHED inflows), and what the scenario left.
          const line = (account: string) =>
            perCurrency(
              balances
                .filter((b) => b.account === account)
                .map((b) => ({ currency: b.currency, amount: b.balance })),
            );
          const payouts = await em().find(Payout, { tenant });
          const held = (
            await Promise.all(payouts.map((p) => api.admin.ledger.payout.query({ payout_id: p.id })))
          ).flatMap((l) => [
            ...l.holds,
            ...l.in_transit.map((t) => ({ ...t, amount: toDecimal(t.amount).negated().toFixed() })),
          ]);
          expect(line(`tenants:${tenant}:payouts`), 'the payouts’ line').to.deep.equal(perCurrency(held));
          const unattributed = await em().find(Inflow, {
            tenant,
            $or: [{ state: { $in: ['CONFIRMED', 'UNMATCHED'] } }, { state: 'HELD', payout: null }],
          });
          expect(line(`tenants:${tenant}:suspense`), 'suspense').to.deep.equal(perCurrency(unattributed));
          // Every inflow of the tenant's came in through its suspense, every refund reached it.
          const arrived = (await drillDown(`tenants:${tenant}:suspense`)).filter(
            (e) => e.cause.object === 'inflow',
          );
          for (const i of await em().find(Inflow, { tenant }))
            expect(
              arrived.filter((e) => e.cause.id === i.id && toDecimal(e.amount).gt(0)).map((e) => e.amount),
              `inflow ${i.id} in suspense`,
            ).to.deep.equal([i.amount.toFixed()]);
          const back = await drillDown(`world:merchants:${tenant}`);
          for (const r of await em().find(Refund, { tenant, status: 'SUCCESSFUL' }))
            expect(
              back.filter((e) => e.cause.id === r.id).map((e) => [e.amount, e.payout_id]),
              `refund ${r.id}`,
            ).to.deep.equal([[r.refundAmount.toFixed(), payoutId]]);
          const expected = (await scenario.lines?.(d())) ?? {};
          for (const account of [
            `tenants:${tenant}:suspense`,
            `tenants:${tenant}:to_return:overpayments`,
            `world:merchants:${tenant}`,
          ])
            expect(line(account), account).to.deep.equal(expected[account] ?? {});
        });
      }

      it('the day’s reconciliation: every rail line matched, or exactly its break', async () => {
        const lines = await railLines(d());
        const expected = (await scenario.breaks?.(d())) ?? [];
        const references = new Set(lines.map((l) => l.reference));
        const found = breaks.filter(
          (b) => references.has(b.reference) || (d().payoutId !== null && b.payout_id === d().payoutId),
        );
        expect(
          found.map((b) => ({ kind: b.kind, reference: b.reference, status: b.status })),
        ).to.have.deep.members(expected);
        expect(found).to.have.length(expected.length);

        for (const line of lines) {
          const kept = await keptLine(line);
          const missing = expected.find(
            (b) => b.reference === line.reference && b.kind === 'MISSING_ON_RAIL',
          );
          // A line the rail's record leaves out is not kept: the books' side is paired on its own day.
          const days = kept.days.length > 0 ? kept.days : missing ? [day] : [];
          expect(days, `${line.rail} ${line.reference} read by the runs`).to.not.deep.equal([]);
          for (const on of days) {
            const pairs = await pairReferences(
              deps().sql,
              { rail: line.rail, day: on, processor: kept.processor ?? (await outflowProcessor(line)) },
              [line.reference],
            );
            const outcomes = pairs.map((p) => p.outcome);
            const breakOf = expected.find((b) => b.reference === line.reference);
            expect(outcomes, `${line.rail} ${line.reference} on ${on}`).to.have.length.greaterThan(0);
            if (breakOf) expect(outcomes).to.include(breakOf.kind);
            expect(
              outcomes.filter((o) => o !== breakOf?.kind),
              `${line.rail} ${line.reference} on ${on}`,
            ).to.satisfy((rest: string[]) => rest.every((o) => o === 'MATCHED'));
          }
        }

        // A deposit address of the tenant's: the books hold exactly what the chain shows on it.
        if (d().merchant) {
          const tenant = d().merchant!.tenantId;
          const received = await em().find(Inflow, { tenant, rail: 'CRYPTO' });
          const crypto = runs.runs.find((r) => r.rail === 'CRYPTO')!;
          const addresses = await em().find(PaymentInstruction, { tenant, rail: 'CRYPTO' });
          for (const account of new Set(
            addresses.map((i) => `collection:crypto:${i.chain}:${i.accountUnique}`),
          )) {
            const at = crypto.accounts.find((a) => a.account === account);
            const sum = perCurrency(
              received.filter((i) => `collection:crypto:${i.network}:${i.toAccount}` === account),
            ).USDT;
            // An address nothing ever arrived on is on neither side.
            if (!sum) expect(at, account).to.equal(undefined);
            else expect([at?.rail_balance, at?.ledger_balance], account).to.deep.equal([sum, sum]);
          }
        }
      });
    });
  }

  it('the late return: the payout’s statement shows the money the processor returned', async () => {
    const { merchant, payoutId } = driven.get(LATE_RETURN)!;
    const movements = await statementOf(merchant!, payoutId!);
    const returned = movements.filter((m) => m.type === 'returned');
    expect(returned.map((m) => [m.currency, m.amount])).to.deep.equal([
      ['NGN', (await priceOf(payoutId!)).destination],
    ]);
    // The ledger's cause is the approval of the resolution; the merchant is told the payout.
    expect(returned[0]!.source).to.deep.equal({ object: 'payout', id: payoutId });
  });
});

/** The processor of a payout's outflow, for a report line the runs never kept. */
async function outflowProcessor(line: RailLine): Promise<string | undefined> {
  if (line.rail !== 'PROCESSOR') return undefined;
  return (await em().findOneOrFail(Outflow, line.reference)).processor;
}
