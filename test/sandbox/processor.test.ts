import { expect } from 'chai';
import { toDecimal } from '#src/lib/money.ts';
import { verifyCallback } from '#src/providers/callback-signature.ts';
import { useRailsRig } from './rails-fixtures.ts';

const secret = 'processor-test-callback-secret';

describe('sandbox payout processor', () => {
  const rig = useRailsRig(secret);
  const { clock, call, seconds } = rig;

  /** Submits an NGN bank payout (GTBank) to `account`; its callbacks go to `/payouts/<reference>`. */
  const submit = (reference: string, account: string, fields: Record<string, unknown> = {}) =>
    call('POST', '/processor/payouts', {
      reference,
      attempt: 1,
      destination_type: 'BANK_ACCOUNT',
      country: 'NG',
      currency: 'NGN',
      amount: '150000.00',
      account_unique: account,
      provider_code: '058',
      provider_name: 'Guaranty Trust Bank',
      account_name: 'IFEANYI AFOLABI',
      callback_url: `${rig.receiver.url}/payouts/${reference}`,
      ...fields,
    });
  const callbacksOf = async (reference: string, count = 1) =>
    (await rig.receiver.waitFor(`/payouts/${reference}`, count)).map((c) => c.body);
  const status = async (reference: string) => (await call('GET', `/processor/payouts/${reference}`)).body;

  describe('outcomes by the account’s last four characters', () => {
    it('accepts any other account and calls back SUCCESSFUL, signed', async () => {
      const accepted = await submit('out-ok', '0123456789');
      expect(accepted.status).to.equal(201);
      expect(accepted.body).to.deep.equal({
        reference: 'out-ok',
        status: 'ACCEPTED',
        processor_reference: accepted.body.processor_reference,
        failure_code: null,
        failure_reason: null,
        retryable: false,
      });
      expect(accepted.body.processor_reference).to.match(/^prc_[0-9a-f]{20}$/);

      const [callback] = await rig.receiver.waitFor('/payouts/out-ok');
      expect(callback!.body).to.deep.equal({
        event: 'payout.status',
        reference: 'out-ok',
        processor_reference: accepted.body.processor_reference,
        status: 'SUCCESSFUL',
        failure_code: null,
        failure_reason: null,
        retryable: false,
        occurred_at: clock.now().toISOString(),
      });
      expect(verifyCallback(secret, callback!.rawBody, callback!.signature, seconds())).to.deep.equal({
        valid: true,
        timestamp: seconds(),
      });
      expect(await status('out-ok')).to.include({ status: 'SUCCESSFUL', retryable: false });
    });

    it('1001: fails at once, non-retryable ACCOUNT_CLOSED, and never calls back', async () => {
      const answer = await submit('out-1001', '0123451001');
      expect(answer.status).to.equal(201);
      expect(answer.body).to.include({
        status: 'FAILED',
        failure_code: 'ACCOUNT_CLOSED',
        failure_reason: 'The beneficiary account is closed.',
        retryable: false,
      });
      expect(answer.body.processor_reference).to.be.a('string');
      expect(await status('out-1001')).to.deep.equal(answer.body);
      expect((await rig.sandbox.processor.settled('out-1001')).callbacks).to.deep.equal([]);
    });

    it('1002: the first attempt fails retryably by callback, the next attempt succeeds', async () => {
      expect((await submit('out-1002-a1', '0123451002')).body.status).to.equal('ACCEPTED');
      const [failed] = await callbacksOf('out-1002-a1');
      expect(failed).to.include({ status: 'FAILED', failure_code: 'PROCESSOR_TIMEOUT', retryable: true });
      expect(await status('out-1002-a1')).to.include({ status: 'FAILED', retryable: true });

      expect((await submit('out-1002-a2', '0123451002', { attempt: 2 })).body.status).to.equal('ACCEPTED');
      const [succeeded] = await callbacksOf('out-1002-a2');
      expect(succeeded).to.include({ status: 'SUCCESSFUL', failure_code: null, retryable: false });
    });

    it('1003: every attempt fails retryably by callback', async () => {
      for (const attempt of [1, 2, 3]) {
        const reference = `out-1003-a${attempt}`;
        expect((await submit(reference, '0123451003', { attempt })).body.status).to.equal('ACCEPTED');
        const [callback] = await callbacksOf(reference);
        expect(callback).to.include({ status: 'FAILED', failure_code: 'PROCESSOR_TIMEOUT', retryable: true });
      }
    });

    it('1004: accepts and never calls back, but the status query reports SUCCESSFUL', async () => {
      expect((await submit('out-1004', '0123451004')).body.status).to.equal('ACCEPTED');
      const settled = await rig.sandbox.processor.settled('out-1004');
      expect(settled.callbacks).to.deep.equal([]);
      expect(await status('out-1004')).to.include({ status: 'SUCCESSFUL', failure_code: null });
      expect(rig.receiver.received.filter((r) => r.path === '/payouts/out-1004')).to.deep.equal([]);
    });

    it('applies the same endings to crypto wallets (BSC hex; base58 TRON addresses have no 0)', async () => {
      const wallet = {
        destination_type: 'CRYPTO_WALLET',
        currency: 'USDT',
        provider_code: null,
        account_name: null,
      };
      const closed = await submit('out-bsc-1001', '0x55d398326f99059ff775485246999027b3191001', {
        ...wallet,
        amount: '100.123456',
        provider_name: 'BSC',
      });
      expect(closed.body).to.include({ status: 'FAILED', failure_code: 'ACCOUNT_CLOSED' });
      const ok = await submit('out-tron-ok', 'TJRabPrwbZy45sbavfcjinPJC18kjpRTv8', {
        ...wallet,
        amount: '5',
        provider_name: 'tron',
      });
      expect(ok.body.status).to.equal('ACCEPTED');
      expect((await callbacksOf('out-tron-ok'))[0]).to.include({ status: 'SUCCESSFUL' });
    });
  });

  describe('the settlement report of a day', () => {
    const report = async (day: string, query = '') =>
      (await call('GET', `/processor/settlements?date=${day}${query}`)).body;
    const today = () => clock.now().toISOString().slice(0, 10);

    it('lists the day’s final states with references and amounts, a page at a time', async () => {
      clock.set(new Date('2026-03-10T10:00:00Z'));
      const ok = await submit('rep-ok', '0123456789');
      await rig.sandbox.processor.settled('rep-ok');
      clock.advance(1000);
      await submit('rep-1001', '0123451001');
      clock.advance(1000);
      await submit('rep-1004', '0123451004', { amount: '5.00' });
      await rig.sandbox.processor.settled('rep-1004');
      const day = await report(today());
      expect(day.complete).to.equal(false);
      expect(day.transfers.map((t: any) => [t.reference, t.status, t.amount, t.currency])).to.deep.equal([
        ['rep-ok', 'SUCCESSFUL', '150000.00', 'NGN'],
        ['rep-1001', 'FAILED', '150000.00', 'NGN'],
        ['rep-1004', 'SUCCESSFUL', '5.00', 'NGN'],
      ]);
      const lines = day.transfers;
      expect(lines[0]).to.include({
        processor_reference: ok.body.processor_reference,
        failure_code: null,
        returned_at: null,
      });
      const first = await report(today(), '&limit=1');
      expect(first.transfers).to.have.length(1);
      const rest = await report(today(), `&cursor=${first.next_cursor}&limit=1000`);
      expect([...first.transfers, ...rest.transfers]).to.deep.equal(day.transfers);
      expect(rest.next_cursor).to.equal(null);
      clock.set(new Date('2026-03-11T00:00:00Z'));
      expect((await report('2026-03-10')).complete).to.equal(true);
      expect((await report('2026-03-11')).transfers).to.deep.equal([]);
    });

    it('1005: returns the payout three days after its success, listed on both days', async () => {
      clock.set(new Date('2026-03-20T10:00:00Z'));
      await submit('rep-1005', '0123451005');
      await rig.sandbox.processor.settled('rep-1005');
      expect(
        (await report('2026-03-20')).transfers.find((t: any) => t.reference === 'rep-1005').status,
      ).to.equal('SUCCESSFUL');
      clock.set(new Date('2026-03-23T10:00:01Z'));
      const settledDay = (await report('2026-03-20')).transfers.find((t: any) => t.reference === 'rep-1005');
      expect(settledDay).to.include({ status: 'RETURNED', returned_at: '2026-03-23T10:00:00.000Z' });
      const returnDay = (await report('2026-03-23')).transfers.map((t: any) => [t.reference, t.status]);
      expect(returnDay).to.deep.equal([['rep-1005', 'RETURNED']]);
      // The callback said SUCCESSFUL and the status query still does: only the report tells.
      expect(await status('rep-1005')).to.include({ status: 'SUCCESSFUL' });
    });

    it('1006 and omit-from-report: the report never lists the payout, which still succeeded', async () => {
      clock.set(new Date('2026-03-25T10:00:00Z'));
      await submit('rep-1006', '0123451006');
      await submit('rep-omitted', '0123456789');
      await rig.sandbox.processor.settled('rep-1006');
      await rig.sandbox.processor.settled('rep-omitted');
      const omitted = await call('POST', '/sandbox/processor/payouts/rep-omitted/omit-from-report');
      expect(omitted.body).to.include({ status: 'SUCCESSFUL', in_settlement_report: false });
      expect((await report('2026-03-25')).transfers).to.deep.equal([]);
      expect(await status('rep-1006')).to.include({ status: 'SUCCESSFUL' });
    });

    it('returns a payout on request, at a time given, and only a successful one', async () => {
      clock.set(new Date('2026-03-26T10:00:00Z'));
      await submit('rep-return', '0123456789');
      await rig.sandbox.processor.settled('rep-return');
      const returned = await call('POST', '/sandbox/processor/payouts/rep-return/return', {
        returned_at: '2026-03-28T08:00:00Z',
        reason: 'Beneficiary deceased',
      });
      expect(returned.status).to.equal(200);
      expect(returned.body).to.include({ returned_at: '2026-03-28T08:00:00.000Z' });
      expect((await report('2026-03-28')).transfers.map((t: any) => t.reference)).to.deep.equal([
        'rep-return',
      ]);
      await submit('rep-closed', '0123451001');
      const refused = await call('POST', '/sandbox/processor/payouts/rep-closed/return');
      expect([refused.status, refused.body.error.code]).to.deep.equal([409, 'PAYOUT_NOT_SUCCESSFUL']);
      const early = await call('POST', '/sandbox/processor/payouts/rep-ok/return', {
        returned_at: '2020-01-01T00:00:00Z',
      });
      expect(early.status).to.equal(400);
    });

    it('lists payouts recorded as paid on a past day, and what arrives after a report was read', async () => {
      clock.set(new Date('2026-04-02T10:00:00Z'));
      const paid = [3, 1, 2].map((n) => ({
        reference: `rec-${n}`,
        amount: toDecimal(`${n}00.5`),
        currency: 'NGN',
        settledAt: new Date(`2026-04-01T0${n}:00:00Z`),
      }));
      rig.sandbox.processor.recordPaid(paid);
      const first = await report('2026-04-01', '&limit=2');
      expect(first.transfers.map((t: any) => [t.reference, t.status, t.amount])).to.deep.equal([
        ['rec-1', 'SUCCESSFUL', '100.50'],
        ['rec-2', 'SUCCESSFUL', '200.50'],
      ]);
      expect(first.complete).to.equal(true);
      // Paid again under a known reference: the first record stands.
      rig.sandbox.processor.recordPaid([{ ...paid[0]!, amount: toDecimal(1) }]);
      const rest = await report('2026-04-01', `&cursor=${first.next_cursor}`);
      expect(rest.transfers.map((t: any) => [t.reference, t.amount])).to.deep.equal([['rec-3', '300.50']]);
      expect((await report('2026-04-02')).transfers).to.deep.equal([]);
      await submit('rep-after', '0123456789');
      await rig.sandbox.processor.settled('rep-after');
      expect((await report('2026-04-02')).transfers.map((t: any) => t.reference)).to.deep.equal([
        'rep-after',
      ]);
    });

    it('lists the report’s changes since a cursor: each payout at its latest change, a late return as a change of its own', async () => {
      const changes = async (cursor?: string) =>
        (await call('GET', `/processor/settlements/changes?limit=1000${cursor ? `&cursor=${cursor}` : ''}`))
          .body;
      clock.set(new Date('2026-05-01T10:00:00Z'));
      const start = (await changes()).next_cursor;
      await submit('chg-ok', '0123456789');
      await rig.sandbox.processor.settled('chg-ok');
      clock.advance(1000);
      await submit('chg-1005', '0123451005');
      await rig.sandbox.processor.settled('chg-1005');
      await submit('chg-1006', '0123451006');
      await rig.sandbox.processor.settled('chg-1006');
      const first = await changes(start);
      expect(first.as_of).to.equal(clock.now().toISOString());
      expect(first.transfers.map((t: any) => [t.reference, t.status, t.changed_at])).to.deep.equal([
        ['chg-ok', 'SUCCESSFUL', '2026-05-01T10:00:00.000Z'],
        ['chg-1005', 'SUCCESSFUL', '2026-05-01T10:00:01.000Z'],
      ]);
      // Nothing new: the same cursor back, nothing listed.
      const none = await changes(first.next_cursor);
      expect(none).to.deep.include({ transfers: [], next_cursor: first.next_cursor });
      // Three days later the 1005 payout is returned: one change, its line as every report reads it now.
      clock.set(new Date('2026-05-05T00:00:00Z'));
      const later = await changes(first.next_cursor);
      expect(later.transfers).to.have.length(1);
      expect(later.transfers[0]).to.include({
        reference: 'chg-1005',
        status: 'RETURNED',
        settled_at: '2026-05-01T10:00:01.000Z',
        returned_at: '2026-05-04T10:00:01.000Z',
        changed_at: '2026-05-05T00:00:00.000Z',
      });
      // Read from the start again, a payout is listed once, at its latest change.
      expect((await changes(start)).transfers.map((t: any) => [t.reference, t.status])).to.deep.equal([
        ['chg-ok', 'SUCCESSFUL'],
        ['chg-1005', 'RETURNED'],
      ]);
      expect((await call('GET', '/processor/settlements/changes?cursor=nope')).status).to.equal(400);
    });

    it('refuses a day that is not one', async () => {
      for (const day of ['2026-02-30', '20260301', '']) {
        expect((await call('GET', `/processor/settlements?date=${day}`)).status).to.equal(400);
      }
      expect((await call('GET', '/processor/settlements')).status).to.equal(400);
    });
  });

  describe('validation like a real processor', () => {
    const invalid = async (reference: string, account: string, fields: Record<string, unknown>) => {
      const answer = await submit(reference, account, fields);
      expect(answer.status).to.equal(201);
      expect(answer.body).to.include({
        status: 'FAILED',
        failure_code: 'INVALID_DESTINATION',
        retryable: false,
        processor_reference: null,
      });
      return answer.body.failure_reason as string;
    };

    it('rejects bank and mobile-money payouts without an account name or provider code', async () => {
      expect(await invalid('inv-name', '0123456789', { account_name: null })).to.match(/account_name/);
      expect(await invalid('inv-name-empty', '0123456789', { account_name: '' })).to.match(/account_name/);
      expect(
        await invalid('inv-code', '+2348031234567', {
          destination_type: 'MOBILE_MONEY',
          provider_code: null,
        }),
      ).to.match(/provider_code/);
    });

    it('rejects a provider code the corridor does not have, or one of the other destination type', async () => {
      expect(await invalid('inv-unknown-code', '0123456789', { provider_code: '999' })).to.match(/999/);
      expect(
        await invalid('inv-kind', '+2348031234567', {
          destination_type: 'MOBILE_MONEY',
          provider_code: '058',
        }),
      ).to.match(/MOBILE_MONEY/);
      expect(await invalid('inv-corridor', '0123456789', { country: 'KE', currency: 'KES' })).to.match(
        /KE\/KES/,
      );
    });

    it('rejects an account that cannot exist in its corridor (a 10-digit NUBAN, an E.164 number)', async () => {
      for (const [reference, account] of [
        ['inv-script', '<script>alert(1)</script>'],
        ['inv-sql', "' OR 1=1 --"],
        ['inv-fullwidth', '\uff10\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19'],
        ['inv-short', '012345678'],
      ] as const) {
        expect(await invalid(reference, account, {}), account).to.equal(
          'account_unique must be a 10-digit NUBAN',
        );
      }
      expect(
        await invalid('inv-mobile', '08031234567', {
          destination_type: 'MOBILE_MONEY',
          provider_code: '100004',
        }),
      ).to.match(/account_unique must be a Nigerian mobile number: \+234/);
    });

    it('rejects a crypto wallet on an unknown network or with an address of another chain', async () => {
      const crypto = {
        destination_type: 'CRYPTO_WALLET',
        currency: 'USDT',
        amount: '1',
        provider_code: null,
      };
      expect(
        await invalid('inv-net', 'TJRabPrwbZy45sbavfcjinPJC18kjpRTv8', { ...crypto, provider_name: 'ETH' }),
      ).to.match(/network/);
      expect(
        await invalid('inv-addr', '0x55d398326f99059ff775485246999027b3197955', {
          ...crypto,
          provider_name: 'TRON',
        }),
      ).to.match(/TRON address/);
    });

    it('answers 400 for a request it cannot read', async () => {
      expect((await submit('bad-amount', '0123456789', { amount: '1.005' })).status).to.equal(400);
      expect((await submit('bad-attempt', '0123456789', { attempt: 0 })).status).to.equal(400);
      expect((await submit('bad-currency', '0123456789', { currency: 'XYZ' })).status).to.equal(400);
      expect((await submit('bad-url', '0123456789', { callback_url: 'not a url' })).status).to.equal(400);
      expect((await submit('bad reference', '0123456789')).status).to.equal(400);
      expect(rig.sandbox.processor.payouts('bad-amount')).to.deep.equal([]);
    });
  });

  describe('idempotency on the reference', () => {
    it('answers a repeated reference with the first answer and never pays twice', async () => {
      const first = await submit('out-twice', '0123456789');
      const again = await submit('out-twice', '0123451001', { amount: '999999.00' });
      expect(again.status).to.equal(200);
      expect(again.body.processor_reference).to.equal(first.body.processor_reference);
      expect(again.body.failure_code).to.equal(null);
      await rig.sandbox.processor.settled('out-twice');
      const settled = await submit('out-twice', '0123456789');
      expect(settled.body).to.include({ status: 'SUCCESSFUL' });

      const [payout] = rig.sandbox.processor.payouts('out-twice');
      expect(payout).to.include({ submissions: 3, accountUnique: '0123456789' });
      expect(payout!.amount.toFixed(2)).to.equal('150000.00');
      expect(payout!.callbacks).to.have.length(1);

      const listed = await call('GET', '/sandbox/processor/payouts?reference=out-twice');
      expect(listed.body.data).to.have.length(1);
      expect(listed.body.data[0]).to.include({
        reference: 'out-twice',
        submissions: 3,
        status: 'SUCCESSFUL',
      });
    });

    it('answers 404 for a reference it never received', async () => {
      const missing = await call('GET', '/processor/payouts/never-sent');
      expect(missing.status).to.equal(404);
      expect(missing.body.error.code).to.equal('PAYOUT_NOT_FOUND');
    });
  });

  describe('callback delivery', () => {
    it('retries the same body until the service answers 2xx', async () => {
      rig.receiver.answer('/payouts/out-retry', 500);
      await submit('out-retry', '0123456789');
      const [first, second] = await rig.receiver.waitFor('/payouts/out-retry', 2);
      expect([first!.answered, second!.answered]).to.deep.equal([500, 200]);
      expect(second!.rawBody.equals(first!.rawBody)).to.equal(true);
      expect(verifyCallback(secret, second!.rawBody, second!.signature, seconds()).valid).to.equal(true);
      const [payout] = rig.sandbox.processor.payouts('out-retry');
      expect(await payout!.callbacks[0]!.done).to.include({ status: 'DELIVERED', attempts: 2 });
    });
  });

  describe('duplicate and out-of-order callbacks on request', () => {
    it('re-sends the payout’s own callback byte for byte', async () => {
      await submit('out-dup', '0123456789');
      const [original] = await rig.receiver.waitFor('/payouts/out-dup');
      clock.advance(5000);
      const forced = await call('POST', '/sandbox/processor/payouts/out-dup/callbacks');
      expect(forced.status).to.equal(202);
      expect(forced.body.callback).to.deep.equal(original!.body);
      const [, duplicate] = await rig.receiver.waitFor('/payouts/out-dup', 2);
      expect(duplicate!.rawBody.equals(original!.rawBody)).to.equal(true);
      expect(verifyCallback(secret, duplicate!.rawBody, duplicate!.signature, seconds()).valid).to.equal(
        true,
      );
    });

    it('sends a contradictory outcome later without changing the payout', async () => {
      await submit('out-contra', '0123456789');
      await rig.receiver.waitFor('/payouts/out-contra');
      clock.advance(1000);
      const forced = await call('POST', '/sandbox/processor/payouts/out-contra/callbacks', {
        status: 'FAILED',
        failure_code: 'ACCOUNT_CLOSED',
      });
      expect(forced.body.callback).to.include({
        status: 'FAILED',
        failure_code: 'ACCOUNT_CLOSED',
        failure_reason: 'The beneficiary account is closed.',
        retryable: true,
        occurred_at: clock.now().toISOString(),
      });
      const [, contradiction] = await callbacksOf('out-contra', 2);
      expect(contradiction).to.include({ status: 'FAILED', failure_code: 'ACCOUNT_CLOSED' });
      expect(await status('out-contra')).to.include({ status: 'SUCCESSFUL' });
    });

    it('can deliver a stale retryable failure after the success of a 1002 retry', async () => {
      await submit('out-ooo', '0123451002', { attempt: 2 });
      await rig.receiver.waitFor('/payouts/out-ooo');
      rig.sandbox.processor.sendCallback('out-ooo', {
        status: 'FAILED',
        retryable: false,
        failureCode: 'REJECTED',
      });
      const [success, stale] = await callbacksOf('out-ooo', 2);
      expect(success).to.include({ status: 'SUCCESSFUL' });
      expect(stale).to.include({
        status: 'FAILED',
        failure_code: 'REJECTED',
        failure_reason: 'Simulated failure (REJECTED).',
        retryable: false,
      });
    });

    it('answers 404 for an unknown payout and 400 for an unknown status', async () => {
      const missing = await call('POST', '/sandbox/processor/payouts/never-sent/callbacks', {});
      expect(missing.status).to.equal(404);
      expect(missing.body.error.code).to.equal('PAYOUT_NOT_FOUND');
      await submit('out-bad-force', '0123456789');
      const bad = await call('POST', '/sandbox/processor/payouts/out-bad-force/callbacks', {
        status: 'DONE',
      });
      expect(bad.status).to.equal(400);
    });
  });
});
