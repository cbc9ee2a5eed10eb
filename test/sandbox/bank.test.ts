import { expect } from 'chai';
import { verifyCallback } from '#src/providers/callback-signature.ts';
import { callJson, startRailsSandbox, useRailsRig } from './rails-fixtures.ts';

const secret = 'bank-test-callback-secret';

describe('sandbox bank', () => {
  const rig = useRailsRig(secret);
  const { clock, call, seconds } = rig;

  /** Opens a virtual account whose credits are notified to `path` on the receiver. */
  const openAccount = async (reference: string, path = `/credits/${reference}`) =>
    call('POST', '/bank/virtual-accounts', {
      reference,
      account_name: 'ACME LTD / PAYOUT',
      callback_url: `${rig.receiver.url}${path}`,
      expires_at: new Date(clock.now().getTime() + 1_800_000).toISOString(),
    });
  const credit = (accountNumber: string, amount: unknown) =>
    call('POST', '/sandbox/bank/transfers', { account_number: accountNumber, amount, currency: 'NGN' });

  describe('virtual accounts', () => {
    it('opens a 10-digit account at the sandbox bank', async () => {
      const opened = await openAccount('instr-open');
      expect(opened.status).to.equal(201);
      expect(opened.body.account_number).to.match(/^\d{10}$/);
      expect(opened.body).to.include({
        reference: 'instr-open',
        account_name: 'ACME LTD / PAYOUT',
        bank_name: 'Sandbox MFB',
        bank_code: '090999',
      });
    });

    it('is idempotent on the reference and gives each instruction its own number', async () => {
      const first = await openAccount('instr-idem');
      const again = await openAccount('instr-idem', '/elsewhere');
      expect(again.status).to.equal(200);
      expect(again.body).to.deep.equal(first.body);
      expect(rig.sandbox.bank.virtualAccount(first.body.account_number)?.callbackUrl).to.match(
        /credits\/instr-idem$/,
      );
      const other = await openAccount('instr-other');
      expect(other.body.account_number).to.not.equal(first.body.account_number);
    });

    it('never hands out a number with a magic ending', async () => {
      // This reference's first candidate number is 9127271004: paying it must not look like a 1004 test.
      const opened = await openAccount('instr-magic-2593');
      expect(opened.body.account_number).to.match(/^\d{10}$/);
      expect(opened.body.account_number).to.not.equal('9127271004');
      expect(opened.body.account_number.slice(-4)).to.not.be.oneOf([
        '0000',
        '1001',
        '1002',
        '1003',
        '1004',
        '9999',
      ]);
    });

    it('refuses an incomplete request', async () => {
      const answer = await call('POST', '/bank/virtual-accounts', {
        reference: 'instr-bad',
        account_name: 'ACME',
        callback_url: 'ftp://example.com/x',
        expires_at: '2026-03-02T09:30:00Z',
      });
      expect(answer.status).to.equal(400);
      expect(answer.body.error.message).to.match(/^callback_url/);
    });
  });

  describe('credits and their signed notification', () => {
    it('credits the account and notifies its callback URL with a signed body', async () => {
      const account = (await openAccount('instr-credit')).body.account_number;
      const credited = await credit(account, '150000.5');
      expect(credited.status).to.equal(201);
      expect(credited.body).to.include({
        account_number: account,
        amount: '150000.50',
        currency: 'NGN',
        status: 'SUCCESSFUL',
      });
      expect(credited.body.session_id).to.match(/^\d{30}$/);

      const [notice] = await rig.receiver.waitFor('/credits/instr-credit');
      expect(notice!.body).to.deep.equal({
        event: 'credit',
        session_id: credited.body.session_id,
        account_number: account,
        amount: '150000.50',
        currency: 'NGN',
        payer_name: credited.body.payer_name,
        payer_account: '0123456789',
        occurred_at: clock.now().toISOString(),
      });
      expect(notice!.signature).to.match(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(verifyCallback(secret, notice!.rawBody, notice!.signature, seconds())).to.deep.equal({
        valid: true,
        timestamp: seconds(),
      });
      expect(verifyCallback('not-the-secret', notice!.rawBody, notice!.signature, seconds()).valid).to.equal(
        false,
      );
    });

    it('names the payer when the simulation does', async () => {
      const account = (await openAccount('instr-payer')).body.account_number;
      await call('POST', '/sandbox/bank/transfers', {
        account_number: account,
        amount: '10',
        currency: 'NGN',
        payer_name: 'ACME TRADING LTD',
        payer_account: '0234567891',
      });
      const [notice] = await rig.receiver.waitFor('/credits/instr-payer');
      expect(notice!.body).to.include({ payer_name: 'ACME TRADING LTD', payer_account: '0234567891' });
    });

    it('notifies every credit, a later top-up and one after the account expired included', async () => {
      const account = (await openAccount('instr-topup')).body.account_number;
      await credit(account, 1000);
      clock.advance(3_600_000);
      await credit(account, '500.25');
      const notices = await rig.receiver.waitFor('/credits/instr-topup', 2);
      expect(notices.map((n) => n.body.amount).sort()).to.deep.equal(['1000.00', '500.25']);
      expect(rig.sandbox.bank.credits(account)).to.have.length(2);
    });

    it('retries with a fresh signature until the service answers 2xx', async () => {
      const account = (await openAccount('instr-retry')).body.account_number;
      rig.receiver.answer('/credits/instr-retry', 500, 503);
      // Time passes between attempts, as it would while the service is down.
      rig.receiver.onRequest('/credits/instr-retry', () => clock.advance(60_000));
      await credit(account, '42');
      const [first, second, third] = await rig.receiver.waitFor('/credits/instr-retry', 3);
      expect([first!.answered, second!.answered, third!.answered]).to.deep.equal([500, 503, 200]);
      expect(third!.rawBody.equals(first!.rawBody)).to.equal(true);
      expect(third!.signature).to.not.equal(first!.signature);
      expect(verifyCallback(secret, third!.rawBody, third!.signature, seconds()).valid).to.equal(true);
      const delivery = await rig.sandbox.bank.credits(account)[0]!.notification!.done;
      expect(delivery).to.include({ status: 'DELIVERED', attempts: 3, lastResponseStatus: 200 });
    });

    it('gives up after five attempts', async () => {
      const account = (await openAccount('instr-down')).body.account_number;
      rig.receiver.answer('/credits/instr-down', 500, 500, 500, 500, 500, 500);
      await credit(account, '42');
      const delivery = await rig.sandbox.bank.credits(account)[0]!.notification!.done;
      expect(delivery).to.include({ status: 'FAILED', attempts: 5, lastResponseStatus: 500 });
      expect(rig.receiver.received.filter((r) => r.path === '/credits/instr-down')).to.have.length(5);
    });

    it('answers 404 for an account it does not hold and 400 for a malformed credit', async () => {
      const unknown = await credit('9000000001', '10');
      expect(unknown.status).to.equal(404);
      expect(unknown.body.error.code).to.equal('ACCOUNT_NOT_FOUND');
      const account = (await openAccount('instr-invalid')).body.account_number;
      const cases: [unknown, RegExp][] = [
        [{ account_number: account, amount: '10', currency: 'USD' }, /^currency/],
        [{ account_number: account, amount: '10.001', currency: 'NGN' }, /^amount: must have at most 2/],
        [{ account_number: account, amount: '0', currency: 'NGN' }, /^amount/],
        [{ account_number: '12345', amount: '10', currency: 'NGN' }, /^account_number/],
      ];
      for (const [body, message] of cases) {
        const answer = await call('POST', '/sandbox/bank/transfers', body);
        expect(answer.status, JSON.stringify(body)).to.equal(400);
        expect(answer.body.error.message).to.match(message);
      }
    });
  });

  describe('transfers out (refunds)', () => {
    const transfer = (reference: string, accountNumber: string, bankCode = '058') =>
      call('POST', '/bank/transfers', {
        reference,
        bank_code: bankCode,
        account_number: accountNumber,
        account_name: 'ACME LTD',
        amount: '25000.00',
        narration: 'Refund of payout',
      });

    it('settle at once with a NIP session id', async () => {
      const sent = await transfer('refund-ok', '0123456789');
      expect(sent.status).to.equal(201);
      expect(sent.body).to.include({
        reference: 'refund-ok',
        status: 'SUCCESSFUL',
        failure_reason: null,
        amount: '25000.00',
        currency: 'NGN',
      });
      expect(sent.body.provider_reference).to.match(/^090999\d{24}$/);
      expect((await call('GET', '/bank/transfers/refund-ok')).body).to.deep.equal(sent.body);
    });

    it('fail for a closed account (…9999), a missing account (…0000) or an unknown bank', async () => {
      expect((await transfer('refund-closed', '0123459999')).body).to.include({
        status: 'FAILED',
        failure_reason: 'account closed',
      });
      expect((await transfer('refund-missing', '0123450000')).body).to.include({
        status: 'FAILED',
        failure_reason: 'no such account',
      });
      expect((await transfer('refund-nobank', '0123456789', '999')).body).to.include({
        status: 'FAILED',
        failure_reason: 'no such bank',
      });
    });

    it('are idempotent on the reference', async () => {
      const first = await transfer('refund-twice', '0123456789');
      const again = await transfer('refund-twice', '0123459999');
      expect(again.status).to.equal(200);
      expect(again.body).to.deep.equal(first.body);
      expect(rig.sandbox.bank.transfers().filter((t) => t.reference === 'refund-twice')).to.have.length(1);
    });

    it('answer 404 for an unknown reference', async () => {
      const missing = await call('GET', '/bank/transfers/never-sent');
      expect(missing.status).to.equal(404);
      expect(missing.body.error.code).to.equal('TRANSFER_NOT_FOUND');
    });
  });

  describe('the statement of credits the service pulls', () => {
    const statement = (query = '') => call('GET', `/bank/statement${query}`);
    /** The cursor after every credit so far. */
    const end = async () => {
      let cursor = '';
      for (;;) {
        const page = await statement(`?limit=500${cursor ? `&cursor=${cursor}` : ''}`);
        if (page.body.credits.length === 0) return cursor;
        cursor = page.body.next_cursor;
      }
    };

    it('credits with "callback": false, echoes it, and never calls back', async () => {
      const account = (await openAccount('instr-silent')).body.account_number;
      const silent = await call('POST', '/sandbox/bank/transfers', {
        account_number: account,
        amount: '10',
        currency: 'NGN',
        callback: false,
      });
      expect(silent.status).to.equal(201);
      expect(silent.body).to.include({
        account_number: account,
        amount: '10.00',
        status: 'SUCCESSFUL',
        callback: false,
      });
      const notified = await credit(account, '20');
      expect(notified.body.callback).to.equal(true);
      // Callbacks go out in order: once the second credit's has arrived, the first would have.
      const notices = await rig.receiver.waitFor('/credits/instr-silent', 1);
      expect(notices.map((n) => n.body.session_id)).to.deep.equal([notified.body.session_id]);
      expect(rig.sandbox.bank.credits(account).map((c) => c.notification === null)).to.deep.equal([
        true,
        false,
      ]);
      const refused = await call('POST', '/sandbox/bank/transfers', {
        account_number: account,
        amount: '1',
        currency: 'NGN',
        callback: 'no',
      });
      expect(refused.status).to.equal(400);
      expect(refused.body.error.message).to.match(/^callback/);
    });

    it('lists every credit in the order the bank made it, a page at a time, as of the bank’s time', async () => {
      const start = await end();
      const account = (await openAccount('instr-statement')).body.account_number;
      const made = [];
      for (const [amount, callback] of [
        ['1', true],
        ['2.5', false],
        ['3', true],
      ] as const) {
        made.push(
          (
            await call('POST', '/sandbox/bank/transfers', {
              account_number: account,
              amount,
              currency: 'NGN',
              callback,
            })
          ).body,
        );
        clock.advance(1000);
      }
      const first = await statement(`?cursor=${start}&limit=2`);
      expect(first.status).to.equal(200);
      expect(first.body.credits).to.deep.equal(
        made.slice(0, 2).map((c) => ({
          type: 'CREDIT',
          reverses_session_id: null,
          session_id: c.session_id,
          account_number: account,
          amount: c.amount,
          currency: 'NGN',
          payer_name: c.payer_name,
          payer_account: c.payer_account,
          occurred_at: c.occurred_at,
        })),
      );
      expect(first.body.as_of).to.equal(clock.now().toISOString());
      const second = await statement(`?cursor=${first.body.next_cursor}&limit=2`);
      expect(second.body.credits.map((c: any) => c.amount)).to.deep.equal(['3.00']);
      const empty = await statement(`?cursor=${second.body.next_cursor}`);
      expect(empty.body).to.deep.include({ credits: [], next_cursor: second.body.next_cursor });
    });

    it('lists a statement amount that differs from the notification when told to', async () => {
      const start = await end();
      const account = (await openAccount('instr-differs')).body.account_number;
      const made = await call('POST', '/sandbox/bank/transfers', {
        account_number: account,
        amount: '1000',
        statement_amount: '990.50',
        currency: 'NGN',
      });
      expect(made.status).to.equal(201);
      expect(made.body).to.include({ amount: '1000.00', statement_amount: '990.50' });
      const [notice] = await rig.receiver.waitFor('/credits/instr-differs');
      expect(notice!.body.amount).to.equal('1000.00');
      const listed = await statement(`?cursor=${start}`);
      expect(listed.body.credits.map((c: any) => [c.session_id, c.amount])).to.deep.equal([
        [made.body.session_id, '990.50'],
      ]);
    });

    it('reverses a credit on request: the statement lists the reversal after it, once', async () => {
      const start = await end();
      const account = (await openAccount('instr-reversed')).body.account_number;
      const made = await credit(account, '2500');
      clock.advance(86_400_000);
      const reversed = await call('POST', `/sandbox/bank/credits/${made.body.session_id}/reversal`);
      expect(reversed.status).to.equal(201);
      expect(reversed.body).to.include({
        type: 'REVERSAL',
        reverses_session_id: made.body.session_id,
        account_number: account,
        amount: '2500.00',
        occurred_at: clock.now().toISOString(),
      });
      const listed = await statement(`?cursor=${start}`);
      expect(listed.body.credits.map((c: any) => [c.type, c.amount])).to.deep.equal([
        ['CREDIT', '2500.00'],
        ['REVERSAL', '2500.00'],
      ]);
      const again = await call('POST', `/sandbox/bank/credits/${made.body.session_id}/reversal`);
      expect([again.status, again.body.error.code]).to.deep.equal([409, 'ALREADY_REVERSED']);
      const unknown = await call('POST', '/sandbox/bank/credits/000000/reversal');
      expect([unknown.status, unknown.body.error.code]).to.deep.equal([404, 'TRANSFER_NOT_FOUND']);
    });

    it('refuses a cursor it did not issue and a limit out of range', async () => {
      expect((await statement('?cursor=not-a-cursor')).status).to.equal(400);
      expect((await statement('?limit=0')).status).to.equal(400);
      expect((await statement('?limit=501')).status).to.equal(400);
    });
  });

  it('cancels pending notifications when it closes', async () => {
    const slow = await startRailsSandbox(clock, { callbackDelayMs: 60_000, callbackSecret: secret });
    const opened = await callJson(slow.url, 'POST', '/bank/virtual-accounts', {
      reference: 'instr-closing',
      account_name: 'ACME',
      callback_url: `${rig.receiver.url}/credits/closing`,
      expires_at: '2026-03-02T09:30:00Z',
    });
    const credited = slow.bank.credit({ accountNumber: opened.body.account_number, amount: '10' });
    await slow.close();
    expect(await credited.notification!.done).to.include({ status: 'FAILED', attempts: 0 });
    expect(rig.receiver.received.filter((r) => r.path === '/credits/closing')).to.deep.equal([]);
  });
});
