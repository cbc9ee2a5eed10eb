import { Writable } from 'node:stream';
import { expect } from 'chai';
import type Koa from 'koa';
import { Corridors } from '#src/corridors/corridors.ts';
import { ManualClock } from '#src/lib/clock.ts';
import { createLogger } from '#src/lib/log.ts';
import { httpProviders } from '#src/providers/http-providers.ts';
import { ProviderUnavailableError } from '#src/providers/providers.ts';
import { type RunningSandbox, startSandbox } from '#src/sandbox/server.ts';
import { fakeProvider, stop } from './fake-provider.ts';

const silent = createLogger({ level: 'silent' });
const gtbank = { destinationType: 'BANK_ACCOUNT', currency: 'NGN', providerCode: '058' } as const;

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail('expected the provider call to fail'),
    (err: unknown) => err,
  );
}

describe('HTTP providers', () => {
  describe('against the sandbox', () => {
    let sandbox: RunningSandbox;

    before(async () => {
      sandbox = await startSandbox({
        corridors: Corridors.load(),
        clock: new ManualClock(),
        log: silent,
        port: 0,
      });
    });

    after(() => sandbox.close());

    it('serve institutions, names and rates through one base URL', async () => {
      const providers = httpProviders({ baseUrl: sandbox.url, timeoutMs: 2000, log: silent, retryBaseMs: 1 });
      const banks = await providers.directory.listInstitutions({
        country: 'NG',
        currency: 'NGN',
        destinationType: 'BANK_ACCOUNT',
      });
      expect(banks.length).to.be.greaterThan(10);
      expect(
        await providers.directory.nameEnquiry({ ...gtbank, accountNumber: '0123456789' }),
      ).to.have.property('accountName');
      const quote = await providers.rates.midMarket('USDT', 'KES');
      expect(quote.rate.isGreaterThan(100)).to.equal(true);
    });

    it('log each call with method, path and status, never the account number or query', async () => {
      const lines: string[] = [];
      const sink = new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      });
      const log = createLogger({ level: 'debug', destination: sink });
      const providers = httpProviders({ baseUrl: sandbox.url, timeoutMs: 2000, log });
      await providers.directory.nameEnquiry({ ...gtbank, accountNumber: '0123456789' });
      await providers.rates.midMarket('USDT', 'GHS');
      const calls = lines.map((line) => JSON.parse(line));
      expect(calls.map((c) => [c.msg, c.provider, c.method, c.path, c.status])).to.deep.equal([
        ['provider call', 'directory', 'POST', '/directory/name-enquiry', 200],
        ['provider call', 'rates', 'GET', '/rates/mid', 200],
      ]);
      const out = lines.join('');
      expect(out).to.not.include('0123456789');
      expect(out).to.not.include('GHS');
    });

    it('treat a base URL that is not the provider API as unavailable, not as "no such account"', async () => {
      const providers = httpProviders({
        baseUrl: `${sandbox.url}/wrong-prefix`,
        timeoutMs: 2000,
        log: silent,
      });
      const error = await failure(
        providers.directory.nameEnquiry({ ...gtbank, accountNumber: '0123456789' }),
      );
      expect(error).to.be.instanceOf(ProviderUnavailableError);
      expect((error as Error).message).to.include('ROUTE_NOT_FOUND');
    });
  });

  it('are unavailable when nothing listens on the port', async () => {
    const closed = await fakeProvider(() => {});
    await stop(closed.server);
    const providers = httpProviders({ baseUrl: closed.url, timeoutMs: 2000, log: silent, retryBaseMs: 1 });
    const calls = [
      () => providers.rates.midMarket('USDT', 'NGN'),
      () =>
        providers.directory.listInstitutions({
          country: 'NG',
          currency: 'NGN',
          destinationType: 'BANK_ACCOUNT',
        }),
      () => providers.directory.nameEnquiry({ ...gtbank, accountNumber: '0123456789' }),
    ];
    for (const call of calls) {
      const error = await failure(call());
      expect(error).to.be.instanceOf(ProviderUnavailableError);
      expect((error as Error).message).to.include('ECONNREFUSED');
    }
  });

  it('are unavailable when the provider never answers, after retrying reads only', async function () {
    this.timeout(5000);
    const silentProvider = await fakeProvider(() => new Promise(() => {}));
    try {
      const providers = httpProviders({
        baseUrl: silentProvider.url,
        timeoutMs: 200,
        log: silent,
        retryBaseMs: 1,
      });
      const [rate, name] = await Promise.all([
        failure(providers.rates.midMarket('USDT', 'NGN')),
        failure(providers.directory.nameEnquiry({ ...gtbank, accountNumber: '0123456789' })),
      ]);
      expect(rate).to.be.instanceOf(ProviderUnavailableError);
      expect(name).to.be.instanceOf(ProviderUnavailableError);
      expect((rate as Error).message).to.include('ETIMEDOUT');
      // GET is retried twice; the POST carries no idempotency guarantee and goes once.
      expect(silentProvider.hits.filter((h) => h === 'GET /rates/mid')).to.have.length(3);
      expect(silentProvider.hits.filter((h) => h === 'POST /directory/name-enquiry')).to.have.length(1);
    } finally {
      await stop(silentProvider.server);
    }
  });

  describe('against a misbehaving provider', () => {
    let provider: Awaited<ReturnType<typeof fakeProvider>>;
    let answer: (ctx: Koa.Context) => void;

    before(async () => {
      provider = await fakeProvider((ctx) => answer(ctx));
    });

    beforeEach(() => {
      provider.hits.length = 0;
    });

    after(() => stop(provider.server));

    const providers = () =>
      httpProviders({ baseUrl: provider.url, timeoutMs: 2000, log: silent, retryBaseMs: 1 });

    it('are unavailable on 5xx, after retrying a read', async () => {
      answer = (ctx) => {
        ctx.status = 503;
        ctx.body = { error: { code: 'MAINTENANCE', message: 'down' } };
      };
      expect(await failure(providers().rates.midMarket('USDT', 'NGN'))).to.be.instanceOf(
        ProviderUnavailableError,
      );
      expect(provider.hits).to.have.length(3);
    });

    it('recover when a retried read succeeds', async () => {
      let calls = 0;
      answer = (ctx) => {
        calls += 1;
        if (calls === 1) {
          ctx.status = 502;
          return;
        }
        ctx.body = {
          from: 'USDT',
          to: 'NGN',
          rate: '1535.4',
          as_of: '2026-03-02T09:00:00.000Z',
          source: 'fake',
        };
      };
      const quote = await providers().rates.midMarket('USDT', 'NGN');
      expect(quote.rate.toFixed()).to.equal('1535.4');
      expect(quote.asOf.toISOString()).to.equal('2026-03-02T09:00:00.000Z');
    });

    it('are unavailable on a malformed body rather than guessing', async () => {
      answer = (ctx) => {
        ctx.body = { from: 'USDT', to: 'NGN', rate: 1535.4, as_of: '2026-03-02T09:00:00Z', source: 'fake' };
      };
      const error = await failure(providers().rates.midMarket('USDT', 'NGN'));
      expect(error).to.be.instanceOf(ProviderUnavailableError);
      expect((error as Error).message).to.include('malformed response: rate');

      answer = (ctx) => {
        ctx.type = 'text/html';
        ctx.body = '<html>gateway</html>';
      };
      expect(await failure(providers().rates.midMarket('USDT', 'NGN'))).to.be.instanceOf(
        ProviderUnavailableError,
      );
    });

    it('refuse a name confirmed for a different account', async () => {
      answer = (ctx) => {
        ctx.body = { account_name: 'ADAEZE OKONKWO', provider_code: '058', account_number: '9999999999' };
      };
      const error = await failure(
        providers().directory.nameEnquiry({ ...gtbank, accountNumber: '0123456789' }),
      );
      expect(error).to.be.instanceOf(ProviderUnavailableError);
    });

    it('never mix destination types, whatever the directory sends', async () => {
      answer = (ctx) => {
        ctx.body = {
          data: [
            { provider_code: '058', provider_name: 'Guaranty Trust Bank', destination_type: 'BANK_ACCOUNT' },
            { provider_code: '100004', provider_name: 'OPay', destination_type: 'MOBILE_MONEY' },
          ],
        };
      };
      const banks = await providers().directory.listInstitutions({
        country: 'NG',
        currency: 'NGN',
        destinationType: 'BANK_ACCOUNT',
      });
      expect(banks.map((b) => b.provider_code)).to.deep.equal(['058']);
    });
  });
});
