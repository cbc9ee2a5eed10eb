import { expect } from 'chai';
import { call, createMerchant, errorOf, type Merchant } from '../client.ts';

describe('banks: institutions and name enquiry', () => {
  let merchant: Merchant;
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
      const res = await call('GET', '/v1/banks?country=ZA&currency=ZAR&destination_type=BANK_ACCOUNT', {
        key: merchant.key,
      });
      expect(res.status).to.equal(422);
      expect(errorOf(res).code).to.equal('CORRIDOR_NOT_SUPPORTED');
    });

    it('refuses a currency the service does not know, naming it', async () => {
      const res = await call('GET', '/v1/banks?country=FR&currency=EUR&destination_type=BANK_ACCOUNT', {
        key: merchant.key,
      });
      expect(res.status).to.equal(400);
      expect(errorOf(res).details).to.deep.equal([
        { field: 'currency', issue: 'must be one of USDT, NGN, KES, GHS, UGX, TZS, ZAR, XOF, USD' },
      ]);
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

    it('holds mobile numbers to the E.164 form of the corridor, as a payout does', async () => {
      for (const account of ['123456789', '0712345678', '+2348031234567', '<script>']) {
        const res = await call('POST', '/v1/banks/resolve', {
          key: merchant.key,
          body: {
            destination_type: 'MOBILE_MONEY',
            destination_currency: 'KES',
            destination_account_unique: account,
            destination_provider_code: 'MPESA',
          },
        });
        expect(res.status, account).to.equal(400);
        expect(errorOf(res).details).to.deep.equal([
          {
            field: 'destination_account_unique',
            issue:
              'must be a Kenyan mobile number in E.164 form: +254 and 9 digits starting 7, 10 or 11, such as +254712345678',
          },
        ]);
      }
    });
  });
});
