import { expect } from 'chai';
import { Corridors } from '#src/corridors/corridors.ts';
import { ManualClock } from '#src/lib/clock.ts';
import { createLogger } from '#src/lib/log.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import { createHttpClient } from '#src/providers/http-client.ts';
import { httpRateSource } from '#src/providers/http-providers.ts';
import { ProviderUnavailableError, type RateSource } from '#src/providers/providers.ts';
import { rateFeedOf, sandboxMidRate } from '#src/sandbox/rates.ts';
import { type RunningSandbox, startSandbox } from '#src/sandbox/server.ts';

interface MidRate {
  from: string;
  to: string;
  rate: string;
  as_of: string;
  source: string;
}

async function errorCode(response: Response): Promise<string> {
  return ((await response.json()) as { error: { code: string } }).error.code;
}

describe('sandbox rate feed', () => {
  const log = createLogger({ level: 'silent' });
  const corridors = Corridors.load();
  const feed = rateFeedOf(corridors);
  const clock = new ManualClock(new Date('2026-03-02T09:00:00Z'));
  let sandbox: RunningSandbox;
  let rates: RateSource;

  before(async () => {
    sandbox = await startSandbox({ corridors, clock, log, port: 0 });
    rates = httpRateSource(createHttpClient({ baseUrl: sandbox.url, timeoutMs: 2000, log, name: 'rates' }));
  });

  after(() => sandbox.close());

  /** The feed's answer as sent on the wire. */
  const mid = async (from: string, to: string) =>
    (await (await fetch(`${sandbox.url}/rates/mid?from=${from}&to=${to}`)).json()) as MidRate;

  /** Relative distance of a rate from the configured one (rate_feed[to] / rate_feed[from]). */
  const drift = (from: string, to: string, rate: Decimal) => {
    const base = feed.get(to)!.div(feed.get(from)!);
    return rate.div(base).minus(1).abs().toNumber();
  };

  it('quotes USDT to NGN near the configured rate, as of the clock, from the sandbox feed', async () => {
    const quote = await rates.midMarket('USDT', 'NGN');
    expect(drift('USDT', 'NGN', quote.rate)).to.be.lessThan(0.01);
    expect(quote.asOf.toISOString()).to.equal(clock.now().toISOString());
    expect(quote.source).to.equal('sandbox-feed');
  });

  it('moves when the clock moves, and only then', async () => {
    const before = await rates.midMarket('USDT', 'NGN');
    const same = await rates.midMarket('USDT', 'NGN');
    expect(same.rate.isEqualTo(before.rate)).to.equal(true);
    clock.advance(20_000);
    const later = await rates.midMarket('USDT', 'NGN');
    expect(later.rate.isEqualTo(before.rate)).to.equal(false);
    expect(later.asOf.getTime() - before.asOf.getTime()).to.equal(20_000);
  });

  it('stays within ±1% of the configured rate for every pair over a day', () => {
    const currencies = [...feed.keys()];
    const start = clock.now().getTime();
    let widest = 0;
    for (let t = start; t < start + 24 * 3600_000; t += 97_000) {
      for (const from of currencies) {
        for (const to of currencies) {
          widest = Math.max(widest, drift(from, to, sandboxMidRate(feed, from, to, new Date(t))));
        }
      }
    }
    expect(widest).to.be.lessThan(0.01);
    // It does move: a feed that never leaves its base would hide rate-locking bugs.
    expect(widest).to.be.greaterThan(0.002);
  });

  it('sends a decimal string of 10 significant digits', async () => {
    const raw = await mid('USDT', 'NGN');
    expect(raw.rate)
      .to.be.a('string')
      .and.match(/^\d+\.\d+$/);
    expect(raw.rate.replace('.', '').replace(/^0+/, '').length).to.be.at.most(10);
    expect(raw).to.include({ from: 'USDT', to: 'NGN', source: 'sandbox-feed' });
    const inverse = await mid('NGN', 'USDT');
    // Both legs go through USD, so a pair's inverse is its reciprocal (to the digits sent).
    expect(toDecimal(raw.rate).times(inverse.rate).minus(1).abs().toNumber()).to.be.lessThan(1e-9);
  });

  it('quotes exactly 1 for a currency against itself', async () => {
    const raw = await mid('NGN', 'NGN');
    expect(raw.rate).to.equal('1');
    expect((await rates.midMarket('USDT', 'USDT')).rate.toFixed()).to.equal('1');
  });

  it('refuses a currency the feed does not carry', async () => {
    const raw = await fetch(`${sandbox.url}/rates/mid?from=USDT&to=XOF`);
    expect(raw.status).to.equal(404);
    expect(await errorCode(raw)).to.equal('PAIR_NOT_SUPPORTED');
    const error = await rates.midMarket('USDT', 'XOF').catch((err: unknown) => err);
    expect(error).to.be.instanceOf(ProviderUnavailableError);
  });

  it('rejects a missing currency with 400', async () => {
    const raw = await fetch(`${sandbox.url}/rates/mid?from=USDT`);
    expect(raw.status).to.equal(400);
    expect(await errorCode(raw)).to.equal('INVALID_REQUEST');
  });
});
