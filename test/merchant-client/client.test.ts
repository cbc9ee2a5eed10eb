import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { build } from 'esbuild';
import fc from 'fast-check';
import sinon from 'sinon';
import type * as ClientModule from '#src/client/index.ts';
import type { ErrorsOf, PayoutClient as PayoutClientType } from '#src/client/index.ts';
import { verifyWebhook as referenceVerify, signatureHeaderValue } from '#src/client/verifier.ts';
import { REPO_ROOT } from '#src/docs/generate.ts';
import { ProviderUnavailableError } from '#src/providers/providers.ts';
import { createMerchant, type Merchant, uniqueName } from '../client.ts';
import { harness } from '../harness.ts';
import { deliverFor, receiversClosedAfterEach } from '../webhooks/receiver.ts';

/**
 * The merchant client, built as a merchant would take it (one ES module bundled by esbuild from
 * src/client/, depending on nothing but Node's built-ins) and used against the running service.
 */
describe('the merchant client (src/client)', function () {
  this.timeout(60_000);
  let client: typeof ClientModule;
  let outDir: string;
  let merchant: Merchant;
  const receiver = receiversClosedAfterEach();

  before(async () => {
    outDir = await mkdtemp(path.join(os.tmpdir(), 'payout-client-'));
    const result = await build({
      entryPoints: [path.join(REPO_ROOT, 'src/client/index.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile: path.join(outDir, 'payout-client.mjs'),
      metafile: true,
      logLevel: 'silent',
    });
    const inputs = Object.keys(result.metafile.inputs).map((i) => path.relative(REPO_ROOT, path.resolve(i)));
    expect(
      inputs.every((i) => i.startsWith('src/client/')),
      inputs.join(),
    ).to.equal(true);
    const imports = Object.values(result.metafile.outputs).flatMap((o) => o.imports.map((i) => i.path));
    expect(
      imports.every((i) => i.startsWith('node:')),
      imports.join(),
    ).to.equal(true);
    client = (await import(
      pathToFileURL(path.join(outDir, 'payout-client.mjs')).href
    )) as typeof ClientModule;
    merchant = await createMerchant({ name: uniqueName('Client test merchant') });
  });

  after(async () => {
    if (outDir) await rm(outDir, { recursive: true, force: true });
  });

  const connect = (options: Partial<ConstructorParameters<typeof PayoutClientType>[0]> = {}) =>
    new client.PayoutClient({ baseUrl: harness().url, apiKey: merchant.key, ...options });

  it('sets a refund destination, creates a payout, pages the list and verifies a webhook, as the README shows', async () => {
    const endpoint = await receiver();
    const api = connect();
    const { signing_secret: secret } = await api.setWebhookConfig({ webhook_url: `${endpoint.url}/hooks` });
    await api.setRefundDestination({
      currency: 'USDT',
      type: 'CRYPTO_ADDRESS',
      network: 'TRON',
      address: 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy',
    });
    const created: string[] = [];
    for (const amount of [2500, 2600, 2700]) {
      const payout = await api.createPayout({
        destination_type: 'MOBILE_MONEY',
        destination_country: 'KE',
        destination_currency: 'KES',
        destination_amount: amount,
        destination_account_unique: '+254712345678',
        destination_provider_name: 'M-Pesa',
        destination_provider_code: 'MPESA',
        destination_account_name: 'WANJIKU KAMAU',
      });
      expect(payout).to.include({ status: 'CREATED', destination_amount: amount });
      created.push(payout.id);
    }
    const listed: string[] = [];
    for await (const payout of api.paginate('listPayouts', { limit: 2, status: 'CREATED' }))
      listed.push(payout.id);
    expect(listed).to.deep.equal([...created].reverse());

    await deliverFor([merchant]);
    expect(endpoint.received).to.have.length(3);
    for (const request of endpoint.received) {
      const result = client.verifyWebhook({
        rawBody: request.body,
        headers: request.headers,
        secret: secret!,
        now: Math.floor(harness().clock.now().getTime() / 1000),
      });
      expect(result.ok, JSON.stringify(result)).to.equal(true);
      if (!result.ok) continue;
      expect(result.event.event_type).to.equal('payout.created');
      if (result.event.event_type === 'payout.created') expect(created).to.include(result.event.data.id);
    }
  });

  it('is shown in the README exactly as test/merchant-client/readme-example.ts type-checks it', async () => {
    const between = (text: string, start: string, end: string) => {
      const from = text.indexOf(start) + start.length;
      return text.slice(from, text.indexOf(end, from));
    };
    const readme = between(
      await readFile(path.join(REPO_ROOT, 'README.md'), 'utf8'),
      '```ts\nimport { PayoutApiError',
      '```',
    );
    const checked = between(
      await readFile(path.join(REPO_ROOT, 'test/merchant-client/readme-example.ts'), 'utf8'),
      '// README begins\nimport { PayoutApiError',
      '// README ends',
    );
    expect(checked.replace("'#src/client/index.ts'", "'@payout-service/client'")).to.equal(readme);
  });

  it("throws a typed error carrying the operation's code, status and request id", async () => {
    const api = connect();
    const missing = '01930000-0000-7000-8000-000000000000';
    const error = await api.getPayout(missing, { requestId: 'client-test-404' }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(client.PayoutApiError);
    const apiError = error as InstanceType<typeof client.PayoutApiError<ErrorsOf<'getPayout'>>>;
    expect(apiError.is('PAYOUT_NOT_FOUND')).to.equal(true);
    expect(apiError).to.include({ status: 404, code: 'PAYOUT_NOT_FOUND', requestId: 'client-test-404' });
    const unauthorised = await new client.PayoutClient({ baseUrl: harness().url, apiKey: 'nope' })
      .listRefunds()
      .catch((e: unknown) => e);
    expect(unauthorised).to.include({ status: 401, code: 'UNAUTHENTICATED' });
  });

  it('retries a 503 with the same Idempotency-Key, so the quote is created once', async () => {
    const seen: string[] = [];
    const waits: number[] = [];
    const api = connect({
      fetch: (input, init) => {
        seen.push(new Headers(init?.headers).get('idempotency-key') ?? '');
        return fetch(input, init);
      },
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    const rates = harness().service.deps.providers.rates;
    const stub = sinon.stub(rates, 'midMarket').callThrough();
    stub.onFirstCall().rejects(new ProviderUnavailableError('rates', 'timed out'));
    try {
      const quote = await api.createQuote({
        settlement_currency: 'USDT',
        destination_currency: 'NGN',
        destination_amount: 150000,
      });
      expect(quote.status).to.equal('PENDING');
    } finally {
      stub.restore();
    }
    expect(seen).to.have.length(2);
    expect(seen[0]).to.equal(seen[1]);
    expect(waits).to.deep.equal([500]);
  });

  it('gives up after maxRetries, with the last answer as the error', async () => {
    const api = connect({ maxRetries: 1, sleep: async () => {} });
    const rates = harness().service.deps.providers.rates;
    const stub = sinon.stub(rates, 'midMarket').rejects(new ProviderUnavailableError('rates', 'down'));
    try {
      const error = await api.getIndicativeRate({ from: 'USDT', to: 'GHS' }).catch((e: unknown) => e);
      expect(error).to.include({ status: 503, code: 'UPSTREAM_UNAVAILABLE' });
      expect(stub.callCount).to.equal(2);
    } finally {
      stub.restore();
    }
  });

  it('verifies webhooks exactly as the reference verifier does, on any input', () => {
    const secrets = fc.constantFrom('whsec_one', 'whsec_two');
    const body = fc
      .record({ event_id: fc.uuid(), event_type: fc.constantFrom('payout.created', 'refund.failed') })
      .map((e) =>
        JSON.stringify({ ...e, created_at: '2026-01-01T00:00:00.000Z', status: 'CREATED', data: {} }),
      );
    const header = fc.oneof(
      // "now" drawn around the signature's own time, across both edges of the tolerance, so the
      // accept path and the just-stale path are both reached, not only far-off clocks.
      fc
        .record({
          secret: secrets,
          t: fc.integer({ min: 1_700_000_000, max: 1_800_000_000 }),
          skew: fc.integer({ min: -400, max: 400 }),
        })
        .map((h) => ({ ...h, kind: 'signed' as const })),
      fc.string().map((raw) => ({ raw, kind: 'raw' as const })),
    );
    const outcomes = new Set<string>();
    fc.assert(
      fc.property(
        body,
        header,
        secrets,
        fc.integer({ min: 1_700_000_000, max: 1_800_000_000 }),
        fc.boolean(),
        (raw, h, secret, drawnNow, stated) => {
          const now = h.kind === 'signed' ? h.t + h.skew : drawnNow;
          const signature = h.kind === 'signed' ? signatureHeaderValue(h.secret, h.t, raw) : h.raw;
          const timestamp = stated && h.kind === 'signed' ? String(h.t) : undefined;
          const reference = referenceVerify({
            rawBody: raw,
            signatureHeader: signature,
            timestampHeader: timestamp,
            secret,
            now,
          });
          const headers: Record<string, string> = { 'X-Service-Signature': signature };
          if (timestamp) headers['X-Service-Timestamp'] = timestamp;
          const ours = client.verifyWebhook({ rawBody: Buffer.from(raw), headers, secret, now });
          expect(ours.ok).to.equal(reference.ok);
          if (!ours.ok && !reference.ok) expect(ours.reason).to.equal(reference.reason);
          if (ours.ok && reference.ok) expect(ours.timestamp).to.equal(reference.timestamp);
          outcomes.add(ours.ok ? 'accepted' : ours.reason);
        },
      ),
      { numRuns: 300 },
    );
    // The draws reached acceptance as well as the refusals that sit next to it.
    expect([...outcomes]).to.include.members([
      'accepted',
      'timestamp_out_of_tolerance',
      'signature_mismatch',
    ]);
    const signed = signatureHeaderValue('whsec_one', 1_750_000_000, 'not json');
    expect(
      client.verifyWebhook({
        rawBody: 'not json',
        headers: new Headers({ 'x-service-signature': signed }),
        secret: 'whsec_one',
        now: 1_750_000_000,
      }),
    ).to.deep.equal({ ok: false, reason: 'invalid_payload' });
  });
});
