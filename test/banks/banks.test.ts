import { expect } from 'chai';
import { call, createMerchant, errorOf, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';

describe('banks: institutions and name enquiry', () => {
  let merchant: Merchant;
  /** Name enquiry of a Kenyan M-Pesa number, written as given. */
  const resolveMpesa = (account: string) =>
    call('POST', '/v1/banks/resolve', {
      key: merchant.key,
      body: {
        destination_type: 'MOBILE_MONEY',
        destination_currency: 'KES',
        destination_account_unique: account,
        destination_provider_code: 'MPESA',
      },
    });
  before(async () => {
    merchant = await createMerchant();
  });

  describe('GET /v1/banks', () => {
    it('lists the Nigerian banks with their CBN codes, never mixed with mobile money', async () => {
      const res = await call('GET', '/v1/banks?country=NG&currency=NGN&destination_type=BANK_ACCOUNT', {
        key: merchant.key,
      });
      expect(res.status).to.equal(200);
      expect(res.body).to.be.an('array').that.is.not.empty;
      expect(res.body).to.deep.include({
        provider_name: 'Guaranty Trust Bank',
        provider_code: '058',
        destination_type: 'BANK_ACCOUNT',
      });
      expect(
        res.body.every((i: { destination_type: string }) => i.destination_type === 'BANK_ACCOUNT'),
      ).to.equal(true);
    });

    it('lists mobile-money providers of Kenya, defaulting the currency from the country', async () => {
      const res = await call('GET', '/v1/banks?country=KE&destination_type=MOBILE_MONEY', {
        key: merchant.key,
      });
      expect(res.status).to.equal(200);
      expect(res.body.map((i: { provider_code: string }) => i.provider_code)).to.include.members([
        'MPESA',
        'AIRTEL_KE',
      ]);
      expect(
        res.body.every((i: { destination_type: string }) => i.destination_type === 'MOBILE_MONEY'),
      ).to.equal(true);
    });

    it('refuses a corridor that does not exist', async () => {
      const res = await call('GET', '/v1/banks?country=ZA&currency=NGN&destination_type=BANK_ACCOUNT', {
        key: merchant.key,
      });
      expect(res.status).to.equal(422);
      expect(errorOf(res).code).to.equal('CORRIDOR_NOT_SUPPORTED');
    });

    it('refuses a currency that no corridor pays, known or not, naming it and the ones it takes', async () => {
      for (const query of ['country=ZA&currency=ZAR', 'country=FR&currency=EUR']) {
        const res = await call('GET', `/v1/banks?${query}&destination_type=BANK_ACCOUNT`, {
          key: merchant.key,
        });
        expect(res.status, query).to.equal(400);
        expect(errorOf(res).details, query).to.deep.equal([
          { field: 'currency', issue: 'must be one of NGN, KES, GHS, USDT' },
        ]);
      }
    });

    it('names missing and malformed query parameters', async () => {
      const res = await call('GET', '/v1/banks?country=ng&destination_type=CRYPTO_WALLET', {
        key: merchant.key,
      });
      expect(res.status).to.equal(400);
      expect(errorOf(res).details.map((d) => d.field)).to.have.members(['country', 'destination_type']);
    });
  });

  describe('POST /v1/banks/resolve', () => {
    const body = {
      destination_type: 'BANK_ACCOUNT',
      destination_currency: 'NGN',
      destination_account_unique: '0123456789',
      destination_provider_code: '058',
    };

    it('returns the bank-confirmed name, without an Idempotency-Key', async () => {
      const res = await call('POST', '/v1/banks/resolve', { key: merchant.key, body, idempotencyKey: null });
      expect(res.status).to.equal(200);
      expect(res.body).to.include({
        destination_account_unique: '0123456789',
        destination_provider_code: '058',
        destination_type: 'BANK_ACCOUNT',
      });
      expect(res.body.destination_account_name).to.match(/^[A-Z]+ [A-Z]+$/);
      const again = await call('POST', '/v1/banks/resolve', {
        key: merchant.key,
        body,
        idempotencyKey: null,
      });
      expect(again.body.destination_account_name).to.equal(res.body.destination_account_name);
    });

    it('resolves a mobile-money number', async () => {
      const res = await call('POST', '/v1/banks/resolve', {
        key: merchant.key,
        body: {
          destination_type: 'MOBILE_MONEY',
          destination_currency: 'KES',
          destination_account_unique: '+254712345678',
          destination_provider_code: 'MPESA',
        },
      });
      expect(res.status).to.equal(200);
      expect(res.body.destination_account_name).to.be.a('string').and.not.empty;
    });

    it('answers ACCOUNT_NOT_FOUND for an account the bank does not hold (magic 0000)', async () => {
      const res = await call('POST', '/v1/banks/resolve', {
        key: merchant.key,
        body: { ...body, destination_account_unique: '0123450000' },
      });
      expect(res.status).to.equal(422);
      expect(errorOf(res)).to.deep.include({ code: 'ACCOUNT_NOT_FOUND' });
      expect(errorOf(res).details[0]?.field).to.equal('destination_account_unique');
    });

    it('refuses an institution code that is not in the corridor', async () => {
      const res = await call('POST', '/v1/banks/resolve', {
        key: merchant.key,
        body: { ...body, destination_provider_code: 'MPESA' },
      });
      expect(res.status).to.equal(422);
      expect(errorOf(res).code).to.equal('PROVIDER_CODE_UNKNOWN');
      expect(errorOf(res).details[0]?.field).to.equal('destination_provider_code');
    });

    it('refuses a Nigerian account number that is not a 10-digit NUBAN without asking the bank', async () => {
      const res = await call('POST', '/v1/banks/resolve', {
        key: merchant.key,
        body: { ...body, destination_account_unique: '12345' },
      });
      expect(res.status).to.equal(400);
      expect(errorOf(res).details).to.deep.equal([
        { field: 'destination_account_unique', issue: 'must be a 10-digit NUBAN, such as 0123456789' },
      ]);
    });

    it('holds mobile numbers to the corridor’s country, as a payout does, showing the accepted forms', async () => {
      for (const account of ['123456789', '712345678', '+2348031234567', '<script>']) {
        const res = await resolveMpesa(account);
        expect(res.status, account).to.equal(400);
        expect(errorOf(res).details).to.deep.equal([
          {
            field: 'destination_account_unique',
            issue:
              'must be a Kenyan mobile number: +254 and 9 digits starting 7, 10 or 11, written +254712345678, ' +
              '254712345678, 00254712345678 or 0712345678; spaces and dashes are allowed',
          },
        ]);
      }
    });

    it('resolves a mobile number in any spelling as one account: one enquiry, answered in E.164', async () => {
      const deps = harness().service.deps;
      const directoryCalls = async () =>
        (await deps.metrics.providerCalls.get()).values
          .filter((v) => v.labels.provider === 'directory')
          .reduce((sum, v) => sum + v.value, 0);
      // A number no other test resolves, so the cache starts without it.
      const spellings = ['254 711 002 486', '+254711002486', '0711-002-486', '00254711002486'];
      const before = await directoryCalls();
      const answers = [];
      for (const account of spellings) {
        const res = await resolveMpesa(account);
        expect(res.status, `${account}: ${res.text}`).to.equal(200);
        answers.push(res.body);
      }
      expect(new Set(answers.map((a) => JSON.stringify(a))).size).to.equal(1);
      expect(answers[0].destination_account_unique).to.equal('+254711002486');
      // The institution list is cached for a minute; the four enquiries made one name enquiry at most.
      expect((await directoryCalls()) - before).to.be.at.most(2);
      // The payout names the same account as the enquiry, whichever spelling each was given in.
      const payer = await payoutReadyMerchant();
      const payout = await call('POST', '/v1/payouts', {
        key: payer.key,
        body: {
          destination_type: 'MOBILE_MONEY',
          destination_country: 'KE',
          destination_currency: 'KES',
          destination_amount: 100,
          destination_account_unique: '0711 002 486',
          destination_provider_name: 'M-Pesa',
          destination_provider_code: 'MPESA',
          destination_account_name: answers[0].destination_account_name,
        },
      });
      expect(payout.status, payout.text).to.equal(201);
      expect(payout.body.destination_account_unique).to.equal(answers[0].destination_account_unique);
    });
  });
});
