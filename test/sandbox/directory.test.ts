import { expect } from 'chai';
import { Corridors } from '#src/corridors/corridors.ts';
import { ManualClock } from '#src/lib/clock.ts';
import { createLogger } from '#src/lib/log.ts';
import { createHttpClient } from '#src/providers/http-client.ts';
import { httpDirectoryProvider } from '#src/providers/http-providers.ts';
import type { DirectoryProvider } from '#src/providers/providers.ts';
import { type RunningSandbox, startSandbox } from '#src/sandbox/server.ts';

/** The `error.code` of a provider-side error body. */
async function errorCode(response: Response): Promise<string> {
  return ((await response.json()) as { error: { code: string } }).error.code;
}

describe('sandbox directory', () => {
  const log = createLogger({ level: 'silent' });
  let sandbox: RunningSandbox;
  let directory: DirectoryProvider;

  before(async () => {
    sandbox = await startSandbox({ corridors: Corridors.load(), clock: new ManualClock(), log, port: 0 });
    directory = httpDirectoryProvider(
      createHttpClient({ baseUrl: sandbox.url, timeoutMs: 2000, log, name: 'directory' }),
    );
  });

  after(() => sandbox.close());

  /** A raw name enquiry for a GTBank account with some fields replaced: its status and error code. */
  const rawEnquiry = async (fields: Record<string, string | undefined>) => {
    const response = await fetch(`${sandbox.url}/directory/name-enquiry`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        destination_type: 'BANK_ACCOUNT',
        currency: 'NGN',
        account_number: '0123456789',
        provider_code: '058',
        ...fields,
      }),
    });
    return { status: response.status, code: await errorCode(response) };
  };

  describe('institutions', () => {
    it('lists Nigerian banks with their CBN codes and no mobile-money providers', async () => {
      const banks = await directory.listInstitutions({
        country: 'NG',
        currency: 'NGN',
        destinationType: 'BANK_ACCOUNT',
      });
      expect(banks).to.deep.include({
        provider_code: '058',
        provider_name: 'Guaranty Trust Bank',
        destination_type: 'BANK_ACCOUNT',
      });
      expect(banks.map((b) => b.provider_code)).to.include.members(['044', '011', '057', '090267']);
      expect(banks.every((b) => b.destination_type === 'BANK_ACCOUNT')).to.equal(true);
      expect(banks.map((b) => b.provider_name)).to.not.include('OPay');
    });

    it('lists Nigerian mobile-money providers without banks', async () => {
      const wallets = await directory.listInstitutions({
        country: 'NG',
        currency: 'NGN',
        destinationType: 'MOBILE_MONEY',
      });
      expect(wallets.map((w) => w.provider_name)).to.have.members([
        'OPay',
        'PalmPay',
        'Paga',
        'MTN MoMo PSB',
      ]);
    });

    it('keeps corridors apart: Kenyan mobile money, Ghanaian banks', async () => {
      const kenya = await directory.listInstitutions({
        country: 'KE',
        currency: 'KES',
        destinationType: 'MOBILE_MONEY',
      });
      expect(kenya.map((i) => i.provider_code)).to.have.members(['MPESA', 'AIRTEL_KE']);
      const ghana = await directory.listInstitutions({
        country: 'GH',
        currency: 'GHS',
        destinationType: 'BANK_ACCOUNT',
      });
      expect(ghana.map((i) => i.provider_name)).to.include('GCB Bank');
      expect(ghana.map((i) => i.provider_code)).to.not.include('MTN');
    });

    it('answers an unknown corridor with an empty list', async () => {
      expect(
        await directory.listInstitutions({ country: 'GH', currency: 'NGN', destinationType: 'BANK_ACCOUNT' }),
      ).to.deep.equal([]);
      expect(
        await directory.listInstitutions({
          country: 'NG',
          currency: 'USDT',
          destinationType: 'CRYPTO_WALLET',
        }),
      ).to.deep.equal([]);
    });

    it('rejects a missing or invalid parameter with 400', async () => {
      const missing = await fetch(`${sandbox.url}/directory/institutions?country=NG&currency=NGN`);
      expect(missing.status).to.equal(400);
      expect(await errorCode(missing)).to.equal('INVALID_REQUEST');
      const invalid = await fetch(
        `${sandbox.url}/directory/institutions?country=Nigeria&currency=NGN&destination_type=BANK_ACCOUNT`,
      );
      expect(invalid.status).to.equal(400);
    });
  });

  describe('name enquiry', () => {
    const gtbank = { destinationType: 'BANK_ACCOUNT', currency: 'NGN', providerCode: '058' } as const;

    it('returns an upper-case name that is the same on every call for one account', async () => {
      const first = await directory.nameEnquiry({ ...gtbank, accountNumber: '0123456789' });
      const again = await directory.nameEnquiry({ ...gtbank, accountNumber: '0123456789' });
      expect(first?.accountName).to.match(/^[A-Z]+ [A-Z]+$/);
      expect(again).to.deep.equal(first);
    });

    it('draws names that fit the corridor, stable across restarts', async () => {
      // Pinned values: a change here changes every sandbox integration that recorded a name.
      expect(await directory.nameEnquiry({ ...gtbank, accountNumber: '0123456789' })).to.deep.equal({
        accountName: 'IFEANYI AFOLABI',
      });
      expect(
        await directory.nameEnquiry({
          destinationType: 'MOBILE_MONEY',
          currency: 'KES',
          providerCode: 'MPESA',
          accountNumber: '+254712345678',
        }),
      ).to.deep.equal({ accountName: 'WANJIKU OCHIENG' });
      expect(
        await directory.nameEnquiry({
          destinationType: 'BANK_ACCOUNT',
          currency: 'GHS',
          providerCode: '040100',
          accountNumber: '1234567890123',
        }),
      ).to.deep.equal({ accountName: 'EFUA ASANTE' });
    });

    it('gives different accounts different holders', async () => {
      const names = new Set<string | undefined>();
      for (let i = 0; i < 10; i++) {
        const result = await directory.nameEnquiry({ ...gtbank, accountNumber: `012345678${i}` });
        names.add(result?.accountName);
      }
      expect(names.size).to.be.greaterThan(5);
    });

    it('finds no account behind a number ending in 0000', async () => {
      expect(await directory.nameEnquiry({ ...gtbank, accountNumber: '0123450000' })).to.equal(null);
      expect(await rawEnquiry({ account_number: '0123450000' })).to.deep.equal({
        status: 404,
        code: 'ACCOUNT_NOT_FOUND',
      });
    });

    it('knows no institution outside its currency or its destination type', async () => {
      expect(
        await directory.nameEnquiry({ ...gtbank, providerCode: '999', accountNumber: '0123456789' }),
      ).to.equal(null);
      // GTBank is a Nigerian bank: unknown under KES, and unknown as a mobile-money provider.
      expect(
        await directory.nameEnquiry({ ...gtbank, currency: 'KES', accountNumber: '0123456789' }),
      ).to.equal(null);
      expect(
        await directory.nameEnquiry({
          ...gtbank,
          destinationType: 'MOBILE_MONEY',
          accountNumber: '0123456789',
        }),
      ).to.equal(null);
      expect(await rawEnquiry({ provider_code: '999' })).to.deep.equal({
        status: 404,
        code: 'INSTITUTION_NOT_FOUND',
      });
    });

    it('rejects a malformed request with 400', async () => {
      expect(await rawEnquiry({ account_number: undefined, provider_code: undefined })).to.deep.equal({
        status: 400,
        code: 'INVALID_REQUEST',
      });
    });
  });

  it('reports health and answers unknown routes with a 404 error body', async () => {
    expect(await (await fetch(`${sandbox.url}/health`)).json()).to.deep.equal({ status: 'ok' });
    const unknown = await fetch(`${sandbox.url}/no-such-party`);
    expect(unknown.status).to.equal(404);
    expect(await errorCode(unknown)).to.equal('ROUTE_NOT_FOUND');
  });
});
