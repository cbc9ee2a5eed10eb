import { UniqueConstraintViolationException } from '@mikro-orm/postgresql';
import { expect } from 'chai';
import { run } from '#src/cli/admin.ts';
import type { Deps } from '#src/deps.ts';
import { OutboxEvent } from '#src/events/entities.ts';
import { newId } from '#src/lib/ids.ts';
import { maskAddress } from '#src/lib/masking.ts';
import { toDecimal } from '#src/lib/money.ts';
import { applyPayoutEvent } from '#src/payouts/lifecycle.ts';
import { httpRails } from '#src/providers/http-rails.ts';
import { Refund } from '#src/refunds/entities.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import { raiseRefund } from '#src/refunds/service.ts';
import { Inflow } from '#src/settlement/entities.ts';
import { heldMoney } from '../approvals/fixtures.ts';
import { call, createMerchant, errorOf, type Merchant } from '../client.ts';
import {
  deps,
  dispatch,
  eventTypesOf,
  merchantWith,
  mine,
  paidPayout,
  payoutOf,
  payoutTo,
  setNgnDestination,
  setUsdtDestination,
} from '../dispatch/fixtures.ts';
import { harness } from '../harness.ts';
import { approvedMove, trpcCall } from '../operators/fixtures.ts';
import { racesOnlyOnPostgres } from '../races.ts';

const TRON_OK = 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy';
const TRON_DEAD = 'TLsV52sRDL79HXGGm9yzwKibb6Beradead';
const TRON_FIXED = 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE';

const admin = (...argv: string[]): Promise<any> =>
  run(argv, { serviceUrl: harness().url, token: harness().adminToken });

/** A payout that fails at the processor (1001, ACCOUNT_CLOSED) after its settlement arrived. */
async function failedPayout(
  merchant: Merchant,
  settlement: 'USDT' | 'NGN',
  options: { overpay?: string } = {},
): Promise<string> {
  const id = await paidPayout(merchant, payoutTo('1001', settlement), options);
  const [rejected] = await dispatch(merchant, id);
  expect(rejected.status).to.equal('FAILED');
  expect((await payoutOf(merchant, id)).status).to.equal('FAILED');
  return id;
}

async function refundOf(merchant: Merchant, payoutId: string): Promise<any> {
  const res = await call('GET', `/v1/payouts/${payoutId}/refunds`, { key: merchant.key });
  expect(res.status, res.text).to.equal(200);
  expect(res.body.length).to.be.at.most(1);
  return res.body[0];
}

/** Mines the block that confirms a chain refund, moves time past its next status check, runs the job. */
async function nextRefundPass(): Promise<void> {
  await mine('TRON');
  harness().clock.advance(10_000);
  await runRefundsOnce(deps());
}

describe('refunds of failed payouts', () => {
  it('returns USDT on TRON: received (with overpayment) minus the refund fee, PENDING → PROCESSING → SUCCESSFUL', async () => {
    const merchant = await merchantWith();
    const id = await failedPayout(merchant, 'USDT', { overpay: '2.5' });
    const payout = await payoutOf(merchant, id);
    expect(payout.is_refunded).to.equal(false);

    await runRefundsOnce(deps());
    const processing = await refundOf(merchant, id);
    const received = toDecimal(payout.payment_instruction.expected_amount).plus('2.5');
    // The TRON refund fee as configured in src/corridors/corridors.json, not read back through the code.
    const fee = toDecimal('1.00');
    expect(processing).to.include({
      payout_id: id,
      status: 'PROCESSING',
      received_currency: 'USDT',
      network_fee_currency: 'USDT',
      refund_currency: 'USDT',
      destination_type: 'CRYPTO_ADDRESS',
      destination_network: 'TRON',
      destination_masked: maskAddress(TRON_OK),
      attempt_number: 1,
      settled_at: null,
      failure_reason: null,
    });
    expect(processing.received_amount).to.equal(received.toNumber());
    expect(processing.network_fee_amount).to.equal(fee.toNumber());
    expect(processing.refund_amount).to.equal(received.minus(fee).toNumber());
    // The money links name the real things: the inflow that brought the money, the chain send.
    const [inflow] = await deps().orm.em.fork().find(Inflow, { payout: id });
    expect(processing.inflow_id).to.equal(inflow!.id);
    const send = harness()
      .sandbox.chains.sends('TRON')
      .find((s) => s.reference === `${processing.id}:1`);
    expect(send?.amount.toFixed()).to.equal(received.minus(fee).toFixed());
    expect(processing.processor_reference).to.equal(send?.tx?.txHash);
    expect(processing.dispatched_at).to.equal(harness().clock.now().toISOString());
    expect(JSON.stringify(processing)).to.not.include(TRON_OK);

    await nextRefundPass();
    const done = await refundOf(merchant, id);
    expect(done).to.include({ id: processing.id, status: 'SUCCESSFUL' });
    expect(done.settled_at).to.be.a('string');
    const after = await payoutOf(merchant, id);
    expect(after).to.include({ status: 'FAILED', is_refunded: true, refund_reference: done.id });

    const events = await eventTypesOf(id);
    expect(events.slice(events.indexOf('payout.failed'))).to.deep.equal([
      'payout.failed',
      'payout.refunded',
      'refund.created',
      'refund.processing',
      'refund.successful',
    ]);
    // refund.* events carry the payout, not the refund.
    const rows = await deps()
      .orm.em.fork()
      .find(OutboxEvent, { payoutId: id, eventType: { $like: 'refund.%' } });
    for (const row of rows) {
      const payload = JSON.parse(row.payload) as { status: string; data: { object: string; id: string } };
      expect(payload.status).to.equal('FAILED');
      expect(payload.data).to.include({ object: 'payout', id });
    }
    const created = JSON.parse(rows.find((r) => r.eventType === 'refund.created')!.payload) as {
      data: { is_refunded: boolean; refund_reference: string };
    };
    expect(created.data).to.include({ is_refunded: true, refund_reference: done.id });
  });

  it('returns NGN to the bank account, settled at once by NIP', async () => {
    const merchant = await merchantWith();
    const id = await failedPayout(merchant, 'NGN');
    await runRefundsOnce(deps());
    const refund = await refundOf(merchant, id);
    const payout = await payoutOf(merchant, id);
    const received = toDecimal(payout.payment_instruction.expected_amount);
    expect(refund).to.include({
      status: 'SUCCESSFUL',
      received_currency: 'NGN',
      destination_type: 'BANK_ACCOUNT',
      destination_masked: '******6789',
      destination_network: null,
      network_fee_amount: deps().corridors.refundFee('NGN', null).toNumber(),
      refund_amount: received.minus(deps().corridors.refundFee('NGN', null)).toNumber(),
    });
    expect(refund.destination_provider_name).to.be.a('string').and.not.empty;
    const events = await eventTypesOf(id);
    expect(events.slice(-3)).to.deep.equal(['refund.created', 'refund.processing', 'refund.successful']);
  });

  describe('a bank that does not answer the refund’s sends', () => {
    /** The service's view of the world while the bank cannot be reached. */
    const bankDown = (): Deps => ({
      ...deps(),
      rails: {
        ...deps().rails,
        bank: httpRails({ baseUrl: 'http://127.0.0.1:9', timeoutMs: 200, log: deps().log, retryBaseMs: 1 })
          .bank,
      },
    });
    /** Every send the refund may make, and more, each after the longest backoff. */
    async function sendsUnanswered(): Promise<void> {
      for (let i = 0; i < deps().config.REFUND_MAX_ATTEMPTS + 2; i++) {
        await runRefundsOnce(bankDown());
        harness().clock.advance(11 * 60_000);
      }
    }

    it('is never reported failed while a send may have reached it: the answer, once it comes, decides', async () => {
      const merchant = await merchantWith();
      const id = await failedPayout(merchant, 'NGN');
      await runRefundsOnce(bankDown());
      const pending = await refundOf(merchant, id);
      expect(pending.status).to.equal('PENDING');
      // The first send reached the bank; its answer was lost on the way back.
      await deps().rails.bank.send({
        reference: `${pending.id}:1`,
        bankCode: '058',
        accountNumber: '0123456789',
        accountName: 'Refund',
        amount: toDecimal(pending.refund_amount),
        narration: 'Refund',
      });
      await sendsUnanswered();
      expect((await refundOf(merchant, id)).status, 'outcome unknown').to.equal('PENDING');
      expect(await eventTypesOf(id)).to.not.include('refund.failed');

      await runRefundsOnce(deps());
      expect((await refundOf(merchant, id)).status).to.equal('SUCCESSFUL');
      expect((await eventTypesOf(id)).slice(-2)).to.deep.equal(['refund.processing', 'refund.successful']);
    });

    it('fails the refund once the bank, reachable again, says it never received it', async () => {
      const merchant = await merchantWith();
      const id = await failedPayout(merchant, 'NGN');
      await sendsUnanswered();
      expect((await refundOf(merchant, id)).status).to.equal('PENDING');

      await runRefundsOnce(deps());
      const failed = await refundOf(merchant, id);
      expect(failed.status).to.equal('FAILED');
      expect(failed.failure_reason).to.equal(
        `the bank did not answer ${deps().config.REFUND_MAX_ATTEMPTS} sends and never received the transfer`,
      );
      expect((await eventTypesOf(id)).at(-1)).to.equal('refund.failed');
    });
  });

  it('fails a refund to a dead address; an operator retries it once the destination is corrected', async () => {
    const merchant = await merchantWith(TRON_DEAD);
    const id = await failedPayout(merchant, 'USDT');
    await runRefundsOnce(deps());
    const failed = await refundOf(merchant, id);
    expect(failed).to.include({
      status: 'FAILED',
      attempt_number: 1,
      destination_masked: maskAddress(TRON_DEAD),
    });
    expect(failed.failure_reason).to.match(/rejected/);
    expect((await eventTypesOf(id)).at(-1)).to.equal('refund.failed');
    const listed = (await admin('refund', 'list-failed', '--tenant', merchant.tenantId)) as {
      data: { id: string; tenant_id: string }[];
    };
    expect(listed.data.find((r) => r.id === failed.id)).to.include({ tenant_id: merchant.tenantId });

    // The destination has not changed: nothing to retry with.
    await expectRetryRefused(failed.id, /corrected/);
    // Saving the same dead address again is not a correction either.
    await setUsdtDestination(merchant, TRON_DEAD);
    await expectRetryRefused(failed.id, /corrected/);

    await setUsdtDestination(merchant, TRON_FIXED);
    const retried = (await approvedMove('refund', 'retry', failed.id)).refund as Record<string, unknown>;
    expect(retried).to.include({
      id: failed.id,
      status: 'PENDING',
      attempt_number: 2,
      destination_masked: maskAddress(TRON_FIXED),
      failure_reason: null,
    });
    await runRefundsOnce(deps());
    await nextRefundPass();
    const done = await refundOf(merchant, id);
    expect(done).to.include({ id: failed.id, status: 'SUCCESSFUL', attempt_number: 2 });
    const sent = deps().rails.chains;
    expect((await sent.sendStatus('TRON', `${failed.id}:2`))?.status).to.equal('SUCCESSFUL');
    expect((await sent.sendStatus('TRON', `${failed.id}:1`))?.status).to.equal('FAILED');
    // Only one refund ever, and the payout still points at it.
    expect((await payoutOf(merchant, id)).refund_reference).to.equal(failed.id);
    await expectRetryRefused(failed.id, /SUCCESSFUL/);
  });

  it('fails a refund to a closed bank account (ending 9999) and retries it to a corrected one', async () => {
    const merchant = await merchantWith(TRON_OK, '0123459999');
    const id = await failedPayout(merchant, 'NGN');
    await runRefundsOnce(deps());
    const failed = await refundOf(merchant, id);
    expect(failed).to.include({ status: 'FAILED', destination_masked: '******9999' });
    await setNgnDestination(merchant, '0123454321');
    await approvedMove('refund', 'retry', failed.id);
    await runRefundsOnce(deps());
    expect(await refundOf(merchant, id)).to.include({
      id: failed.id,
      status: 'SUCCESSFUL',
      attempt_number: 2,
      destination_masked: '******4321',
    });
  });

  it('raises at most one refund per payout, even when the raise runs twice at once', async function () {
    racesOnlyOnPostgres(this);
    const merchant = await merchantWith();
    const id = await failedPayout(merchant, 'USDT');
    const outcomes = await Promise.all([raiseRefund(deps(), id), raiseRefund(deps(), id)]);
    expect(outcomes.map((o) => o.kind).sort()).to.deep.equal(['ALREADY_RAISED', 'RAISED']);
    await runRefundsOnce(deps());
    const em = deps().orm.em.fork();
    expect(await em.count(Refund, { payout: id })).to.equal(1);
    const events = await eventTypesOf(id);
    expect(events.filter((e) => e === 'payout.refunded')).to.have.length(1);
    expect(events.filter((e) => e === 'refund.created')).to.have.length(1);

    // The unique index is the last word, whatever a racing writer believed.
    let error: unknown;
    try {
      await em.execute(
        `insert into refunds (id, tenant_id, payout_id, status, snapshot, received_amount, received_currency,
           network_fee_amount, refund_amount, destination_id, destination_type, destination_provider_name,
           destination_masked, destination_account, attempt_number, created_at, updated_at)
         select ?, tenant_id, payout_id, status, snapshot, received_amount, received_currency,
           network_fee_amount, refund_amount, destination_id, destination_type, destination_provider_name,
           destination_masked, destination_account, attempt_number, created_at, updated_at
           from refunds where payout_id = ?`,
        [newId(), id],
      );
    } catch (err) {
      error = err;
    }
    expect(error).to.be.instanceOf(UniqueConstraintViolationException);
  });

  it('raises no refund for a payout that never received money, and none twice', async () => {
    const merchant = await merchantWith();
    const res = await call('POST', '/v1/payouts', { key: merchant.key, body: payoutTo('5681') });
    const id = res.body.id as string;
    await deps()
      .orm.em.fork()
      .transactional((tx) =>
        applyPayoutEvent(tx, id, {
          type: 'INSTRUCTION_GENERATION_FAILED',
          failureReason: 'test',
          triggeredBy: 'SYSTEM',
          now: deps().clock.now(),
        }),
      );
    expect(await raiseRefund(deps(), id)).to.deep.equal({
      kind: 'NOT_ELIGIBLE',
      reason: 'received no money; there is nothing to refund',
    });
    await runRefundsOnce(deps());
    expect(await refundOf(merchant, id)).to.equal(undefined);
    expect((await payoutOf(merchant, id)).is_refunded).to.equal(false);
  });

  it('holds the money of a failed payout without a destination; operators list it and raise the refund later', async () => {
    // The destination is gone by the time the payout fails.
    const { merchant, payoutId: id } = await heldMoney({ destination: false });
    expect(await refundOf(merchant, id)).to.equal(undefined);
    expect((await payoutOf(merchant, id)).is_refunded).to.equal(false);

    const held = (await admin('refund', 'held', '--tenant', merchant.tenantId)).data as Record<
      string,
      unknown
    >[];
    const mine = held.find((h) => h.payout_id === id);
    expect(mine).to.include({
      tenant_id: merchant.tenantId,
      settlement_currency: 'NGN',
      failure_code: 'ACCOUNT_CLOSED',
      refund_destination_active: false,
    });
    expect(mine?.received_amount).to.be.greaterThan(0);
    // Without a destination there is nothing to raise: the proposal is refused.
    await expectRaiseRefused(id, /no active NGN refund destination/);

    await setNgnDestination(merchant, '0123456789');
    const ready = (await admin('refund', 'held', '--tenant', merchant.tenantId)).data as Record<
      string,
      unknown
    >[];
    expect(ready.find((h) => h.payout_id === id)).to.include({ refund_destination_active: true });
    const { refund: raised } = (await approvedMove('refund', 'raise', id)) as {
      refund: { id: string; status: string; payout_id: string };
    };
    expect(raised).to.include({ payout_id: id, status: 'PENDING' });
    await expectRaiseRefused(id, new RegExp(`has its refund already \\(${raised.id}\\)`));
    await runRefundsOnce(deps());
    expect(await refundOf(merchant, id)).to.include({ id: raised.id, status: 'SUCCESSFUL' });
    const after = (await admin('refund', 'held', '--tenant', merchant.tenantId)).data as Record<
      string,
      unknown
    >[];
    expect(after.find((h) => h.payout_id === id)).to.equal(undefined);
  });

  it('shows a failed payout as held only once the service found no destination, never while it raises the refund itself', async () => {
    // The queue's count on the Exceptions page (the same rows as `refund held`).
    const counted = async () =>
      (
        await trpcCall('admin.exceptions', 'query', undefined, harness().adminToken)
      ).body.result.data.queues.find((q: { code: string }) => q.code === 'MONEY_HELD_NO_REFUND_DESTINATION')
        .count as number;
    const merchant = await merchantWith();
    const id = await paidPayout(merchant, payoutTo('1001', 'NGN'));
    const before = await counted();
    await dispatch(merchant, id);
    // FAILED with its money, its RAISE_REFUND task still open: the refund job has not run yet.
    expect(await payoutOf(merchant, id)).to.include({ status: 'FAILED', is_refunded: false });
    const listed = async () =>
      ((await admin('refund', 'held', '--tenant', merchant.tenantId)).data as { payout_id: string }[]).some(
        (h) => h.payout_id === id,
      );
    expect(await listed(), 'not held while the service raises its refund').to.equal(false);
    expect(await counted()).to.equal(before);
    await runRefundsOnce(deps());
    expect(await refundOf(merchant, id)).to.include({ status: 'SUCCESSFUL' });
    expect(await listed()).to.equal(false);
  });

  it('lists refunds newest first, filtered by status, across cursor pages', async () => {
    const merchant = await merchantWith(TRON_DEAD);
    const ids: string[] = [];
    for (const settlement of ['NGN', 'NGN', 'NGN', 'USDT'] as const) {
      ids.push(await failedPayout(merchant, settlement));
      await runRefundsOnce(deps());
      harness().clock.advance(1000);
    }
    const refunds = await Promise.all(ids.map((id) => refundOf(merchant, id)));
    expect(refunds.map((r) => r.status)).to.deep.equal(['SUCCESSFUL', 'SUCCESSFUL', 'SUCCESSFUL', 'FAILED']);

    const all = await call('GET', '/v1/refunds?limit=100', { key: merchant.key });
    expect(all.body.data.map((r: { id: string }) => r.id)).to.deep.equal(refunds.map((r) => r.id).reverse());

    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 5; page++) {
      const query = `status=SUCCESSFUL&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const res = await call('GET', `/v1/refunds?${query}`, { key: merchant.key });
      expect(res.status, res.text).to.equal(200);
      seen.push(
        ...res.body.data.map((r: { id: string; status: string }) => r.status === 'SUCCESSFUL' && r.id),
      );
      if (!res.body.meta.has_more) break;
      cursor = res.body.meta.next_cursor;
    }
    expect(seen).to.deep.equal(
      refunds
        .slice(0, 3)
        .map((r) => r.id)
        .reverse(),
    );

    const failed = await call('GET', '/v1/refunds?status=FAILED', { key: merchant.key });
    expect(failed.body.data.map((r: { id: string }) => r.id)).to.deep.equal([refunds[3].id]);
    const first = await call('GET', '/v1/refunds?status=SUCCESSFUL&limit=1', { key: merchant.key });
    const foreign = await call(
      'GET',
      `/v1/refunds?status=FAILED&cursor=${encodeURIComponent(first.body.meta.next_cursor)}`,
      { key: merchant.key },
    );
    expect(errorOf(foreign).code).to.equal('INVALID_CURSOR');
    const one = await call('GET', `/v1/refunds/${refunds[0].id}`, { key: merchant.key });
    expect(one.body).to.deep.equal(refunds[0]);
    const other = await createMerchant();
    expect((await call('GET', `/v1/refunds/${refunds[0].id}`, { key: other.key })).status).to.equal(404);
  });

  it('keeps the destination snapshotted at creation while the merchant replaces it', async () => {
    const merchant = await merchantWith();
    const id = await failedPayout(merchant, 'USDT');
    await runRefundsOnce(deps());
    await setUsdtDestination(merchant, TRON_FIXED);
    await nextRefundPass();
    const refund = await refundOf(merchant, id);
    expect(refund).to.include({ status: 'SUCCESSFUL', destination_masked: maskAddress(TRON_OK) });
    const send = deps().rails.chains;
    expect((await send.sendStatus('TRON', `${refund.id}:1`))?.status).to.equal('SUCCESSFUL');
  });
});

async function expectRetryRefused(refundId: string, issue: RegExp): Promise<void> {
  await expectMoveRefused(['refund', 'retry', refundId], issue);
}

async function expectRaiseRefused(payoutId: string, issue: RegExp): Promise<void> {
  await expectMoveRefused(['refund', 'raise', payoutId], issue);
}

async function expectMoveRefused(argv: string[], issue: RegExp): Promise<void> {
  let error: unknown;
  try {
    await approvedMove(...argv);
  } catch (err) {
    error = err;
  }
  const data = (error as { data?: { app_code?: string; details?: { issue: string }[] } })?.data;
  expect(data?.app_code, String(error)).to.equal('VALIDATION_FAILED');
  expect(data?.details?.[0]?.issue).to.match(issue);
}
