import { expect } from 'chai';
import type { Corridors } from '#src/corridors/corridors.ts';
import type { Deps } from '#src/deps.ts';
import { OutboxEvent } from '#src/events/entities.ts';
import { PaymentInstruction } from '#src/instructions/entities.ts';
import { runInstructionsOnce } from '#src/instructions/job.ts';
import { generateInstructions } from '#src/instructions/service.ts';
import { Task } from '#src/jobs/entities.ts';
import type { ClaimedTask } from '#src/jobs/tasks.ts';
import type { RateSource } from '#src/providers/providers.ts';
import { ProviderUnavailableError } from '#src/providers/providers.ts';
import type { BankGateway } from '#src/providers/rails.ts';
import { call, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { bankPayout, mobilePayout, payoutReadyMerchant } from '../payouts/fixtures.ts';
import { lapse } from '../settlement/fixtures.ts';

const deps = () => harness().service.deps;

async function create(merchant: Merchant, body: Record<string, unknown>): Promise<string> {
  const res = await call('POST', '/v1/payouts', { key: merchant.key, body });
  expect(res.status, res.text).to.equal(201);
  return res.body.id as string;
}

async function payout(merchant: Merchant, id: string) {
  return (await call('GET', `/v1/payouts/${id}`, { key: merchant.key })).body;
}

async function events(payoutId: string) {
  return deps()
    .orm.em.fork()
    .find(OutboxEvent, { payoutId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
}

async function instructionTask(payoutId: string) {
  return deps().orm.em.fork().findOneOrFail(Task, { subjectId: payoutId, kind: 'GENERATE_INSTRUCTION' });
}

/** Every webhook payload carries the payout exactly as GET shows it at that moment. */
async function expectPayloadIsResource(merchant: Merchant, id: string, eventType: string) {
  const event = (await events(id)).find((e) => e.eventType === eventType);
  expect(event, eventType).to.not.equal(undefined);
  const { object, ...data } = (JSON.parse(event!.payload) as { data: Record<string, unknown> }).data;
  expect(object).to.equal('payout');
  expect(data).to.deep.equal(await payout(merchant, id));
}

describe('instruction generation in batches', () => {
  let merchant: Merchant;
  before(async () => {
    merchant = await payoutReadyMerchant();
  });

  it('ends a mixed batch as one payout at a time would: generated, failed for good, or retried', async () => {
    const tron1 = await create(merchant, bankPayout({ destination_amount: 91919 }));
    const tron2 = await create(merchant, bankPayout({ destination_amount: 91919 }));
    const bsc = await create(merchant, bankPayout({ settlement_network: 'BSC' }));
    const ngn = await create(merchant, bankPayout({ settlement_currency: 'NGN' }));
    const quote = await call('POST', '/v1/rates/quotes', {
      key: merchant.key,
      body: { settlement_currency: 'USDT', destination_currency: 'NGN', destination_amount: 123456 },
    });
    const quoted = await create(
      merchant,
      bankPayout({ destination_amount: 123456, quote_id: quote.body.id }),
    );
    const closed = await create(merchant, mobilePayout());
    const flaky = await create(merchant, bankPayout({ settlement_currency: 'NGN' }));

    // The KES corridor closes after creation (permanent); the bank cannot open `flaky`'s account (transient).
    const real = deps();
    const corridors = Object.create(real.corridors, {
      find: {
        value: (country: string, currency: string) =>
          currency === 'KES' ? undefined : real.corridors.find(country, currency),
      },
    }) as Corridors;
    const bank = Object.create(real.rails.bank, {
      createVirtualAccount: {
        value: (args: Parameters<BankGateway['createVirtualAccount']>[0]) =>
          args.reference === flaky
            ? Promise.reject(new ProviderUnavailableError('bank', 'down for the test'))
            : real.rails.bank.createVirtualAccount(args),
      },
    }) as BankGateway;
    const rateCalls: string[] = [];
    const rates: RateSource = {
      midMarket: (from, to) => {
        rateCalls.push(`${from}:${to}`);
        return real.providers.rates.midMarket(from, to);
      },
    };
    const batchDeps: Deps = {
      ...real,
      corridors,
      rails: { ...real.rails, bank },
      providers: { ...real.providers, rates },
    };
    await runInstructionsOnce(batchDeps);

    // One rate call per currency pair for the whole batch; a quote needs none.
    expect(rateCalls.filter((c) => c === 'USDT:NGN')).to.have.length(1);

    const [p1, p2] = [await payout(merchant, tron1), await payout(merchant, tron2)];
    for (const p of [p1, p2]) {
      expect(p.status).to.equal('PENDING_PAYMENT');
      expect(p.payment_instruction).to.include({
        rail: 'CRYPTO',
        network: 'TRC20',
        payment_status: 'UNPAID',
      });
      expect(p.settlement_amount).to.equal(p.payment_instruction.expected_amount);
      expect(p.status_timeline.map((t: { reason_code: string }) => t.reason_code)).to.deep.equal([
        'PAYOUT_CREATED',
        'INSTRUCTION_GENERATED',
      ]);
      expect(p.status_timeline[1].reason_detail).to.include.keys(
        'rate_source',
        'mid_market_rate',
        'spread_percent',
      );
      expect((await events(p.id)).map((e) => e.eventType)).to.deep.equal([
        'payout.created',
        'payout.pending_payment',
      ]);
      await expectPayloadIsResource(merchant, p.id, 'payout.pending_payment');
    }
    // Same price on one address: the second gets the next free amount, and the timeline says by how much.
    expect(p1.payment_instruction.account_unique).to.equal(p2.payment_instruction.account_unique);
    expect(p1.payment_instruction.expected_amount).to.not.equal(p2.payment_instruction.expected_amount);
    const offsets = [p1, p2].map((p) => p.status_timeline[1].reason_detail.uniqueness_offset);
    expect(offsets.filter((o) => o === undefined)).to.have.length(1);

    const pb = await payout(merchant, bsc);
    expect(pb.status).to.equal('PENDING_PAYMENT');
    expect(pb.payment_instruction).to.include({ rail: 'CRYPTO', network: 'BEP20' });
    await expectPayloadIsResource(merchant, bsc, 'payout.pending_payment');

    const pn = await payout(merchant, ngn);
    expect(pn.status).to.equal('PENDING_PAYMENT');
    expect(pn.payment_instruction).to.include({
      rail: 'BANK_TRANSFER',
      network: null,
      expected_currency: 'NGN',
    });
    expect(pn.payment_instruction.account_unique).to.match(/^\d{10}$/);
    await expectPayloadIsResource(merchant, ngn, 'payout.pending_payment');

    const pq = await payout(merchant, quoted);
    expect(pq.status).to.equal('PENDING_PAYMENT');
    expect(pq.exchange_rate).to.equal(quote.body.exchange_rate);
    expect(pq.status_timeline[1].reason_detail.quote_id).to.equal(quote.body.id);
    await expectPayloadIsResource(merchant, quoted, 'payout.pending_payment');

    const pc = await payout(merchant, closed);
    expect(pc.status).to.equal('FAILED');
    expect(pc.payment_instruction).to.equal(null);
    expect(pc.is_refunded).to.equal(false);
    expect(pc.status_timeline.at(-1)).to.deep.include({
      from_status: 'CREATED',
      to_status: 'FAILED',
      triggered_by: 'SYSTEM',
      reason_code: 'INSTRUCTION_GENERATION_FAILED',
      reason_detail: { reason: 'the corridor is no longer offered' },
    });
    // A note without metadata is stored as SQL NULL, not as a JSON null.
    const [failedRow] = await deps()
      .orm.em.fork()
      .getConnection()
      .execute<{ metadata_absent: boolean; detail: string }[]>(
        `select metadata is null as metadata_absent, jsonb_typeof(reason_detail) as detail
           from payout_status_timeline where payout_id = ? and to_status = 'FAILED'`,
        [closed],
      );
    expect(failedRow).to.deep.equal({ metadata_absent: true, detail: 'object' });
    expect((await events(closed)).map((e) => e.eventType)).to.deep.equal(['payout.created', 'payout.failed']);
    await expectPayloadIsResource(merchant, closed, 'payout.failed');
    expect((await instructionTask(closed)).doneAt).to.not.equal(null);

    // The transient failure held up nobody and waits for its retry, with what went wrong.
    const pf = await payout(merchant, flaky);
    expect(pf.status).to.equal('CREATED');
    const task = await instructionTask(flaky);
    expect(task.doneAt ?? null).to.equal(null);
    expect(task.lastError).to.match(/down for the test/);
    expect(task.dueAt.getTime()).to.be.greaterThan(deps().clock.now().getTime());

    harness().clock.advance(60_000);
    await runInstructionsOnce(deps());
    const retried = await payout(merchant, flaky);
    expect(retried.status).to.equal('PENDING_PAYMENT');
    expect(retried.payment_instruction).to.include({ rail: 'BANK_TRANSFER' });
    expect((await instructionTask(flaky)).doneAt).to.not.equal(null);
  });

  it('moves a new instruction past the amounts already open on its address, in a later batch too', async () => {
    const other = await payoutReadyMerchant();
    const first = await create(other, bankPayout({ destination_amount: 43210 }));
    await runInstructionsOnce(deps());
    const later = [
      await create(other, bankPayout({ destination_amount: 43210 })),
      await create(other, bankPayout({ destination_amount: 43210 })),
    ];
    await runInstructionsOnce(deps());
    const open = await payout(other, first);
    const amounts = [open.payment_instruction.expected_amount];
    for (const id of later) {
      const p = await payout(other, id);
      expect(p.status).to.equal('PENDING_PAYMENT');
      expect(p.payment_instruction.account_unique).to.equal(open.payment_instruction.account_unique);
      expect(p.status_timeline[1].reason_detail.uniqueness_offset).to.be.a('string');
      amounts.push(p.payment_instruction.expected_amount);
    }
    expect(new Set(amounts).size).to.equal(3);
    expect(Math.max(...amounts) - Math.min(...amounts)).to.be.lessThan(0.0001);
  });

  it('gives each payout one instruction and distinct amounts when two instances race on the same batch', async () => {
    const other = await payoutReadyMerchant();
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await create(other, bankPayout({ destination_amount: 65432 })));
    // As if both instances held these tasks (a lease ran out under a slow first claimer).
    const tasks: ClaimedTask[] = (
      await deps()
        .orm.em.fork()
        .find(Task, { subjectId: { $in: ids }, kind: 'GENERATE_INSTRUCTION' })
    ).map((t) => ({
      id: t.id,
      kind: t.kind,
      subjectId: t.subjectId,
      tenantId: t.tenantId ?? null,
      attempts: t.attempts + 1,
      generation: t.generation,
    }));
    await Promise.all([
      generateInstructions(deps(), tasks.slice(0, 4)),
      generateInstructions(deps(), tasks.slice(2)),
      generateInstructions(deps(), tasks),
    ]);

    const amounts = new Set<string>();
    for (const id of ids) {
      const p = await payout(other, id);
      expect(p.status).to.equal('PENDING_PAYMENT');
      expect(
        p.status_timeline.filter((t: { reason_code: string }) => t.reason_code === 'INSTRUCTION_GENERATED'),
      ).to.have.length(1);
      expect((await events(id)).filter((e) => e.eventType === 'payout.pending_payment')).to.have.length(1);
      amounts.add(String(p.payment_instruction.expected_amount));
      expect((await instructionTask(id)).doneAt).to.not.equal(null);
    }
    expect(amounts.size).to.equal(ids.length);
    expect(
      await deps()
        .orm.em.fork()
        .count(PaymentInstruction, { payout: { $in: ids } }),
    ).to.equal(ids.length);
  });

  it('expires lapsed instructions in a batch once their rails are read past expires_at, each payout with its own timeline row and event', async () => {
    const ids = {
      tron: await create(merchant, bankPayout()),
      bank: await create(merchant, bankPayout({ settlement_currency: 'NGN' })),
      bsc: await create(merchant, bankPayout({ settlement_network: 'BSC' })),
    };
    await runInstructionsOnce(deps());
    await lapse(deps().config.PAYMENT_INSTRUCTION_TTL_MS - 1000);
    for (const id of Object.values(ids))
      expect((await payout(merchant, id)).status).to.equal('PENDING_PAYMENT');
    // The chains have a block past expires_at; the bank's statement is read again only after its interval.
    await lapse(1000);
    expect((await payout(merchant, ids.tron)).status).to.equal('EXPIRED');
    expect((await payout(merchant, ids.bsc)).status).to.equal('EXPIRED');
    expect((await payout(merchant, ids.bank)).status, 'statement not read past expires_at').to.equal(
      'PENDING_PAYMENT',
    );
    await lapse(deps().config.BANK_STATEMENT_INTERVAL_MS);
    for (const id of Object.values(ids)) {
      const p = await payout(merchant, id);
      expect(p.status).to.equal('EXPIRED');
      expect(p.payment_instruction.payment_status).to.equal('EXPIRED');
      expect(p.status_timeline.at(-1)).to.include({
        from_status: 'PENDING_PAYMENT',
        to_status: 'EXPIRED',
        reason_code: 'INSTRUCTION_EXPIRED',
      });
      await expectPayloadIsResource(merchant, id, 'payout.expired');
    }
  });
});
