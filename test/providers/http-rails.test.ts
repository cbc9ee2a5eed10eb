import type { Server } from 'node:http';
import { expect } from 'chai';
import type Koa from 'koa';
import { createLogger } from '#src/lib/log.ts';
import { toDecimal } from '#src/lib/money.ts';
import { verifyCallback } from '#src/providers/callback-signature.ts';
import { httpRails } from '#src/providers/http-rails.ts';
import { ProviderUnavailableError } from '#src/providers/providers.ts';
import type { PayoutProcessor, Rails } from '#src/providers/rails.ts';
import { useRailsRig } from '../sandbox/rails-fixtures.ts';
import { fakeProvider, stop } from './fake-provider.ts';

const silent = createLogger({ level: 'silent' });
const secret = 'rails-test-callback-secret';

async function failure(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => expect.fail('expected the provider call to fail'),
    (err: unknown) => err as Error,
  );
}

const submission = (reference: string, accountUnique: string, callbackUrl: string) =>
  ({
    reference,
    attempt: 1,
    destinationType: 'BANK_ACCOUNT',
    country: 'NG',
    currency: 'NGN',
    amount: toDecimal('150000'),
    accountUnique,
    providerCode: '058',
    providerName: 'Guaranty Trust Bank',
    accountName: 'IFEANYI AFOLABI',
    callbackUrl,
  }) satisfies Parameters<PayoutProcessor['submit']>[0];

describe('HTTP rails', () => {
  describe('against the sandbox', () => {
    const rig = useRailsRig(secret);
    const { clock } = rig;
    let rails: Rails;

    before(() => {
      rails = httpRails({ baseUrl: rig.sandbox.url, timeoutMs: 2000, log: silent, retryBaseMs: 1 });
    });

    it('chains: an address per tenant, its inflows with the tip, page by page', async () => {
      const { address } = await rails.chains.createAddress('TRON', 'tenant-rails');
      expect(await rails.chains.createAddress('TRON', 'tenant-rails')).to.deep.equal({ address });
      const start = await rails.chains.listTransfers('TRON', { cursor: null, limit: 100 });

      const paid = rig.sandbox.chains.transfer({ network: 'TRON', toAddress: address, amount: '65.123457' });
      rig.sandbox.chains.transfer({ network: 'TRON', toAddress: address, amount: '1' });
      rig.sandbox.chains.mine('TRON', 3);

      const page = await rails.chains.listTransfers('TRON', { cursor: start.nextCursor, limit: 1 });
      expect(page.tip).to.equal(paid.blockNumber + 2);
      expect(page.tipTime).to.deep.equal(clock.now());
      expect(page.transfers).to.have.length(1);
      const [inflow] = page.transfers;
      expect(inflow).to.deep.include({
        txHash: paid.txHash,
        network: 'TRON',
        toAddress: address,
        currency: 'USDT',
        blockNumber: paid.blockNumber,
        blockTime: clock.now(),
      });
      expect(inflow!.amount.isEqualTo('65.123457')).to.equal(true);
      expect(page.tip - inflow!.blockNumber + 1).to.equal(3);

      const next = await rails.chains.listTransfers('TRON', { cursor: page.nextCursor, limit: 100 });
      expect(next.transfers.map((t) => t.amount.toFixed())).to.deep.equal(['1']);
    });

    it('chains: a send is idempotent on its reference and settles with the next block', async () => {
      const to = '0x55d398326f99059ff775485246999027b3197955';
      const sent = await rails.chains.send('BSC', {
        reference: 'rails-refund-1',
        toAddress: to,
        amount: toDecimal('12.5'),
      });
      expect(sent).to.include({ reference: 'rails-refund-1', status: 'PENDING', failureReason: null });
      const again = await rails.chains.send('BSC', {
        reference: 'rails-refund-1',
        toAddress: to,
        amount: toDecimal('12.5'),
      });
      expect(again).to.deep.equal(sent);
      rig.sandbox.chains.mine('BSC');
      expect(await rails.chains.sendStatus('BSC', 'rails-refund-1')).to.deep.equal({
        ...sent,
        status: 'SUCCESSFUL',
      });
      expect(await rails.chains.sendStatus('BSC', 'rails-never-sent')).to.equal(null);

      const dead = await rails.chains.send('TRON', {
        reference: 'rails-refund-dead',
        toAddress: 'TJRabPrwbZy45sbavfcjinPJC18kjpdead',
        amount: toDecimal('1'),
      });
      expect(dead).to.deep.equal({
        reference: 'rails-refund-dead',
        status: 'FAILED',
        providerReference: null,
        failureReason: 'destination rejected by the network',
      });
    });

    it('chains: the hot wallet’s mined sends in chain order, page by page, a rejected send never listed', async () => {
      const to = '0x66d398326f99059ff775485246999027b3197966';
      const first = await rails.chains.listSends('BSC', { cursor: null, limit: 500 });
      let cursor = first.nextCursor;
      for (const [reference, amount] of [
        ['rails-list-1', '3'],
        ['rails-list-2', '4.25'],
      ] as const) {
        await rails.chains.send('BSC', { reference, toAddress: to, amount: toDecimal(amount) });
      }
      await rails.chains.send('BSC', {
        reference: 'rails-list-dead',
        toAddress: '0x66d398326f99059ff775485246999027b319dead',
        amount: toDecimal('1'),
      });
      // Not mined yet: nothing new.
      const pending = await rails.chains.listSends('BSC', { cursor, limit: 500 });
      expect(pending.sends).to.deep.equal([]);
      rig.sandbox.chains.mine('BSC');
      const listed: { reference: string; amount: string }[] = [];
      for (let page = 0; page < 5; page++) {
        const got = await rails.chains.listSends('BSC', { cursor, limit: 1 });
        for (const s of got.sends) {
          expect(s.blockNumber).to.be.at.most(got.tip);
          expect(s.toAddress.toLowerCase()).to.equal(to);
          expect(s.txHash).to.be.a('string');
          listed.push({ reference: s.reference, amount: s.amount.toFixed() });
        }
        cursor = got.nextCursor;
        if (got.sends.length === 0) break;
      }
      expect(listed).to.deep.equal([
        { reference: 'rails-list-1', amount: '3' },
        { reference: 'rails-list-2', amount: '4.25' },
      ]);
    });

    it('bank: a virtual account per instruction, whose credits arrive signed', async () => {
      const args = {
        reference: 'rails-instr-1',
        accountName: 'ACME LTD / PAYOUT',
        callbackUrl: `${rig.receiver.url}/bank`,
        expiresAt: new Date(clock.now().getTime() + 1_800_000),
      };
      const account = await rails.bank.createVirtualAccount(args);
      expect(account).to.deep.include({ bankName: 'Sandbox MFB', bankCode: '090999' });
      expect(await rails.bank.createVirtualAccount(args)).to.deep.equal(account);

      rig.sandbox.bank.credit({ accountNumber: account.accountNumber, amount: '5000' });
      const [notice] = await rig.receiver.waitFor('/bank');
      expect(notice!.body).to.include({
        event: 'credit',
        account_number: account.accountNumber,
        amount: '5000.00',
      });
      const now = Math.floor(clock.now().getTime() / 1000);
      expect(verifyCallback(secret, notice!.rawBody, notice!.signature, now).valid).to.equal(true);
    });

    it('bank: the statement lists every credit once, notified or not, page by page', async () => {
      const start = await rails.bank.listCredits({ cursor: null, limit: 500 });
      const { accountNumber } = await rails.bank.createVirtualAccount({
        reference: 'rails-instr-statement',
        accountName: 'ACME LTD / PAYOUT',
        callbackUrl: `${rig.receiver.url}/statement`,
        expiresAt: new Date(clock.now().getTime() + 1_800_000),
      });
      const silent = rig.sandbox.bank.credit({ accountNumber, amount: '100.5', callback: false });
      clock.advance(1000);
      const notified = rig.sandbox.bank.credit({ accountNumber, amount: '200', payerName: 'ADA OBI' });

      const first = await rails.bank.listCredits({ cursor: start.nextCursor, limit: 1 });
      expect(first.credits).to.have.length(1);
      expect(first.credits[0]).to.deep.include({
        sessionId: silent.sessionId,
        accountNumber,
        currency: 'NGN',
        occurredAt: silent.occurredAt,
      });
      expect(first.credits[0]!.amount.toFixed()).to.equal('100.5');
      const second = await rails.bank.listCredits({ cursor: first.nextCursor, limit: 100 });
      expect(second.credits.map((c) => [c.sessionId, c.payerName])).to.deep.equal([
        [notified.sessionId, 'ADA OBI'],
      ]);
      expect(second.asOf).to.deep.equal(clock.now());
      const none = await rails.bank.listCredits({ cursor: second.nextCursor, limit: 100 });
      expect(none).to.deep.include({ credits: [], reversals: [], lines: 0, nextCursor: second.nextCursor });

      clock.advance(1000);
      const reversal = rig.sandbox.bank.reverse(notified.sessionId);
      const reversed = await rails.bank.listCredits({ cursor: second.nextCursor, limit: 100 });
      expect(reversed).to.deep.include({ credits: [], lines: 1 });
      expect(reversed.reversals).to.deep.equal([
        {
          sessionId: reversal.sessionId,
          reversesSessionId: notified.sessionId,
          accountNumber,
          amount: toDecimal('200'),
          currency: 'NGN',
          occurredAt: clock.now(),
        },
      ]);
    });

    it('processor: the settlement report of a day, page by page, with a late return', async () => {
      clock.set(new Date('2026-04-01T12:00:00Z'));
      await rails.processor.submit(submission('rails-rep-1', '0123456789', `${rig.receiver.url}/rep`));
      await rig.sandbox.processor.settled('rails-rep-1');
      clock.advance(1000);
      await rails.processor.submit(submission('rails-rep-2', '0123451005', `${rig.receiver.url}/rep`));
      await rig.sandbox.processor.settled('rails-rep-2');
      const first = await rails.processor.settlementReport('2026-04-01', { cursor: null, limit: 1 });
      expect(first.complete).to.equal(false);
      expect(first.payouts).to.have.length(1);
      expect(first.payouts[0]).to.deep.include({
        reference: 'rails-rep-1',
        currency: 'NGN',
        status: 'SUCCESSFUL',
        failureCode: null,
        settledAt: new Date('2026-04-01T12:00:00Z'),
        returnedAt: null,
      });
      expect(first.payouts[0]!.amount.toFixed()).to.equal('150000');
      clock.set(new Date('2026-04-05T00:00:00Z'));
      const rest = await rails.processor.settlementReport('2026-04-01', {
        cursor: first.nextCursor,
        limit: 10,
      });
      expect(rest.complete).to.equal(true);
      expect(rest.nextCursor).to.equal(null);
      expect(rest.payouts.map((p) => [p.reference, p.status, p.returnedAt])).to.deep.equal([
        ['rails-rep-2', 'RETURNED', new Date('2026-04-04T12:00:01Z')],
      ]);
    });

    it('processor: the settlement report’s changes since a cursor, a late return among them', async () => {
      clock.set(new Date('2026-04-10T12:00:00Z'));
      const start = (await rails.processor.settlementChanges({ cursor: null, limit: 1000 })).nextCursor;
      await rails.processor.submit(submission('rails-chg-1', '0123451005', `${rig.receiver.url}/chg`));
      await rig.sandbox.processor.settled('rails-chg-1');
      const first = await rails.processor.settlementChanges({ cursor: start, limit: 1000 });
      expect(first.asOf).to.deep.equal(new Date('2026-04-10T12:00:00Z'));
      expect(first.payouts).to.have.length(1);
      expect(first.payouts[0]).to.deep.include({
        reference: 'rails-chg-1',
        status: 'SUCCESSFUL',
        settledAt: new Date('2026-04-10T12:00:00Z'),
        returnedAt: null,
        changedAt: new Date('2026-04-10T12:00:00Z'),
      });
      clock.set(new Date('2026-04-14T00:00:00Z'));
      const later = await rails.processor.settlementChanges({ cursor: first.nextCursor, limit: 1000 });
      expect(later.payouts.map((p) => [p.reference, p.status, p.returnedAt, p.changedAt])).to.deep.equal([
        ['rails-chg-1', 'RETURNED', new Date('2026-04-13T12:00:00Z'), new Date('2026-04-14T00:00:00Z')],
      ]);
    });

    it('bank: transfers out by reference, with the magic failures', async () => {
      const transfer = (reference: string, accountNumber: string) =>
        rails.bank.send({
          reference,
          bankCode: '058',
          accountNumber,
          accountName: 'ACME LTD',
          amount: toDecimal('25000'),
          narration: 'Refund',
        });
      const ok = await transfer('rails-bank-1', '0123456789');
      expect(ok).to.include({ reference: 'rails-bank-1', status: 'SUCCESSFUL', failureReason: null });
      expect(ok.providerReference).to.match(/^\d{30}$/);
      expect(await rails.bank.sendStatus('rails-bank-1')).to.deep.equal(ok);
      expect(await transfer('rails-bank-closed', '0123459999')).to.include({
        status: 'FAILED',
        failureReason: 'account closed',
      });
      expect(await rails.bank.sendStatus('rails-bank-never')).to.equal(null);
    });

    it('processor: submit, the callback, the status query and an unknown reference', async () => {
      expect(rails.processor.name).to.equal('payout-processor');
      const accepted = await rails.processor.submit(
        submission('rails-out-1', '0123456789', `${rig.receiver.url}/out`),
      );
      expect(accepted).to.include({
        reference: 'rails-out-1',
        status: 'ACCEPTED',
        failureCode: null,
        retryable: false,
      });
      const [callback] = await rig.receiver.waitFor('/out');
      expect(callback!.body).to.include({ reference: 'rails-out-1', status: 'SUCCESSFUL' });
      expect(await rails.processor.query('rails-out-1')).to.deep.equal({ ...accepted, status: 'SUCCESSFUL' });
      expect(await rails.processor.query('rails-out-never')).to.equal(null);

      const rejected = await rails.processor.submit(
        submission('rails-out-1001', '0123451001', `${rig.receiver.url}/x`),
      );
      expect(rejected).to.deep.include({
        reference: 'rails-out-1001',
        status: 'FAILED',
        failureCode: 'ACCOUNT_CLOSED',
        failureReason: 'The beneficiary account is closed.',
        retryable: false,
      });
      expect(rejected.processorReference).to.match(/^prc_/);
    });

    it('processor: a repeated submission returns the first result and pays once', async () => {
      const args = submission('rails-out-twice', '0123451004', `${rig.receiver.url}/twice`);
      const first = await rails.processor.submit(args);
      await rig.sandbox.processor.settled('rails-out-twice');
      const again = await rails.processor.submit({ ...args, amount: toDecimal('1') });
      // The same payout, now settled: never a second one for the new amount.
      expect(again).to.deep.equal({ ...first, status: 'SUCCESSFUL' });
      expect(rig.sandbox.processor.payouts('rails-out-twice')[0]).to.include({ submissions: 2 });
    });
  });

  describe('against a misbehaving provider', () => {
    const servers: Server[] = [];
    const provider = async (handler: Koa.Middleware) => {
      const fake = await fakeProvider(handler);
      servers.push(fake.server);
      return {
        ...fake,
        rails: httpRails({ baseUrl: fake.url, timeoutMs: 500, log: silent, retryBaseMs: 1 }),
      };
    };

    after(async () => {
      for (const server of servers) await stop(server);
    });

    it('never retries a POST that moves money, but retries reads', async () => {
      const fake = await provider((ctx) => {
        ctx.status = 503;
        ctx.body = { error: { code: 'BUSY' } };
      });
      const error = await failure(
        fake.rails.processor.submit(submission('r1', '0123456789', 'http://127.0.0.1/cb')),
      );
      expect(error).to.be.instanceOf(ProviderUnavailableError);
      expect(fake.hits).to.deep.equal(['POST /processor/payouts']);
      fake.hits.length = 0;
      expect(await failure(fake.rails.processor.query('r1'))).to.be.instanceOf(ProviderUnavailableError);
      expect(fake.hits).to.deep.equal(Array(3).fill('GET /processor/payouts/r1'));
    });

    it('takes a 404 as "never heard of it" only with the provider’s not-found code', async () => {
      const fake = await provider((ctx) => {
        ctx.status = 404;
        ctx.body = {
          error: { code: ctx.path.includes('known-route') ? 'TRANSFER_NOT_FOUND' : 'ROUTE_NOT_FOUND' },
        };
      });
      expect(await fake.rails.bank.sendStatus('known-route')).to.equal(null);
      const error = await failure(fake.rails.bank.sendStatus('other'));
      expect(error).to.be.instanceOf(ProviderUnavailableError);
      expect(error.message).to.include('ROUTE_NOT_FOUND');
    });

    it('refuses malformed or inconsistent answers instead of guessing', async () => {
      const answers: Record<string, unknown> = {
        '/processor/payouts': {
          reference: 'r1',
          status: 'FAILED',
          processor_reference: 'p1',
          failure_code: null,
          failure_reason: 'no code',
          retryable: false,
        },
        '/processor/payouts/r2': {
          reference: 'r2',
          status: 'DONE',
          processor_reference: 'p2',
          failure_code: null,
          failure_reason: null,
          retryable: false,
        },
        '/bank/transfers/r3': {
          reference: 'someone-else',
          status: 'SUCCESSFUL',
          provider_reference: 'x',
          failure_reason: null,
        },
        '/chains/TRON/transfers': {
          transfers: [
            {
              tx_hash: 'h',
              network: 'TRON',
              to_address: 'T',
              from_address: 'T',
              amount: 10.5,
              currency: 'USDT',
              block_number: 1,
              block_time: '2026-03-02T09:00:00Z',
            },
          ],
          next_cursor: 'c',
          tip: 5,
          tip_time: '2026-03-02T09:00:12Z',
        },
        '/chains/BSC/transfers': {
          transfers: [
            {
              tx_hash: 'h',
              network: 'BSC',
              to_address: '0x',
              from_address: '0x',
              amount: '1',
              currency: 'USDT',
              block_number: 9,
              block_time: '2026-03-02T09:00:00Z',
            },
          ],
          next_cursor: 'c',
          tip: 5,
          tip_time: '2026-03-02T09:00:12Z',
        },
        '/chains/TRON/addresses': { address: '0x55d398326f99059ff775485246999027b3197955' },
        '/bank/virtual-accounts': { account_number: '12345', bank_name: 'X', bank_code: '1' },
      };
      const fake = await provider((ctx) => {
        ctx.body = answers[ctx.path];
      });
      const calls: [string, Promise<unknown>][] = [
        ['failure_code', fake.rails.processor.submit(submission('r1', '0123456789', 'http://127.0.0.1/cb'))],
        ['status', fake.rails.processor.query('r2')],
        ['different reference', fake.rails.bank.sendStatus('r3')],
        ['amount', fake.rails.chains.listTransfers('TRON', { cursor: null, limit: 10 })],
        ['beyond the tip', fake.rails.chains.listTransfers('BSC', { cursor: null, limit: 10 })],
        ['not a TRON address', fake.rails.chains.createAddress('TRON', 'x')],
        [
          'account_number',
          fake.rails.bank.createVirtualAccount({
            reference: 'i',
            accountName: 'A',
            callbackUrl: 'http://127.0.0.1/cb',
            expiresAt: new Date(),
          }),
        ],
      ];
      for (const [expected, call] of calls) {
        const error = await failure(call);
        expect(error, expected).to.be.instanceOf(ProviderUnavailableError);
        expect(error.message, expected).to.include(expected);
      }
    });

    it('is unavailable when nothing listens', async () => {
      const closed = await fakeProvider(() => {});
      await stop(closed.server);
      const rails = httpRails({ baseUrl: closed.url, timeoutMs: 500, log: silent, retryBaseMs: 1 });
      const error = await failure(
        rails.chains.send('TRON', {
          reference: 'r',
          toAddress: 'TJRabPrwbZy45sbavfcjinPJC18kjpRTv8',
          amount: toDecimal(1),
        }),
      );
      expect(error).to.be.instanceOf(ProviderUnavailableError);
      expect(error.message).to.match(/^chains: /);
    });
  });
});
