import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { decryptSecret } from '#src/lib/crypto.ts';
import { createLogger } from '#src/lib/log.ts';
import { signingSecretFor } from '#src/webhooks/config.service.ts';
import { call, createMerchant, errorOf, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { patchConfig } from '../isolation.ts';

const SECRET = /^whsec_[A-Za-z0-9_-]{43}$/;
const CONFIG_KEYS = [
  'webhook_url',
  'has_secret',
  'secret_version',
  'secret_rotated_at',
  'created_at',
  'updated_at',
];
const WITH_SECRET_KEYS = ['signing_secret', ...CONFIG_KEYS];

const put = (merchant: Merchant, body: unknown, idempotencyKey?: string) =>
  call('PUT', '/v1/webhooks/config', { key: merchant.key, body, idempotencyKey });
const get = (merchant: Merchant) => call('GET', '/v1/webhooks/config', { key: merchant.key });
const rotate = (merchant: Merchant, idempotencyKey?: string) =>
  call('POST', '/v1/webhooks/config/rotate-secret', { key: merchant.key, idempotencyKey });

/** The stored row, read straight from the database. */
async function storedRow(tenantId: string) {
  const em = harness().service.deps.orm.em.fork();
  const [row] = await em.execute<
    { url: string | null; secret_sealed: string | null; secret_version: number }[]
  >('select url, secret_sealed, secret_version from webhook_configs where tenant_id = ?', [tenantId]);
  return row;
}

const secretInUse = (tenantId: string) =>
  signingSecretFor(harness().service.deps.orm.em.fork(), harness().service.deps, tenantId);

describe('webhook configuration', () => {
  describe('GET /v1/webhooks/config', () => {
    it('reports no URL and no secret before anything is configured', async () => {
      const merchant = await createMerchant();
      const res = await get(merchant);
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({
        webhook_url: null,
        has_secret: false,
        secret_version: 0,
        secret_rotated_at: null,
        created_at: null,
        updated_at: null,
      });
    });
  });

  describe('PUT /v1/webhooks/config', () => {
    it('sets the URL and returns the new signing secret once', async () => {
      const merchant = await createMerchant();
      const res = await put(merchant, { webhook_url: 'https://hooks.merchant.example/payouts' });
      expect(res.status).to.equal(200);
      expect(Object.keys(res.body)).to.deep.equal(WITH_SECRET_KEYS);
      expect(res.body.signing_secret).to.match(SECRET);
      expect(res.body).to.include({
        webhook_url: 'https://hooks.merchant.example/payouts',
        has_secret: true,
        secret_version: 1,
        secret_rotated_at: null,
      });

      const read = await get(merchant);
      expect(Object.keys(read.body)).to.deep.equal(CONFIG_KEYS);
      expect(read.body).to.include({
        webhook_url: 'https://hooks.merchant.example/payouts',
        has_secret: true,
        secret_version: 1,
      });
      expect(read.text).to.not.include(res.body.signing_secret);
      expect(read.text).to.not.include('whsec_');
    });

    it('stores the secret sealed, never in clear', async () => {
      const merchant = await createMerchant();
      const res = await put(merchant, { webhook_url: 'https://hooks.merchant.example/sealed' });
      const secret: string = res.body.signing_secret;
      const row = await storedRow(merchant.tenantId);
      expect(row?.secret_sealed).to.match(/^v1\./);
      expect(row?.secret_sealed).to.not.include(secret);
      expect(row?.secret_sealed).to.not.include(secret.slice('whsec_'.length));
      expect(await secretInUse(merchant.tenantId)).to.equal(secret);
    });

    it('returns the secret in force on every PUT, and a URL change does not rotate it', async () => {
      const merchant = await createMerchant();
      const first = await put(merchant, { webhook_url: 'https://hooks.merchant.example/v1' });
      const second = await put(merchant, { webhook_url: 'https://hooks.merchant.example/v2' });
      const same = await put(merchant, { webhook_url: 'https://hooks.merchant.example/v2' });
      for (const res of [second, same]) {
        expect(res.status).to.equal(200);
        expect(Object.keys(res.body)).to.deep.equal(WITH_SECRET_KEYS);
        expect(res.body).to.include({
          signing_secret: first.body.signing_secret,
          webhook_url: 'https://hooks.merchant.example/v2',
          has_secret: true,
          secret_version: 1,
          secret_rotated_at: null,
        });
      }
      expect(await secretInUse(merchant.tenantId)).to.equal(first.body.signing_secret);
      const read = await get(merchant);
      expect(read.body.webhook_url).to.equal('https://hooks.merchant.example/v2');
      expect(read.text).to.not.include('whsec_');
    });

    it('after a rotation, a PUT returns the rotated secret', async () => {
      const merchant = await createMerchant();
      await put(merchant, { webhook_url: 'https://hooks.merchant.example/before' });
      const rotated = await rotate(merchant);
      const after = await put(merchant, { webhook_url: 'https://hooks.merchant.example/after' });
      expect(after.body).to.include({ signing_secret: rotated.body.signing_secret, secret_version: 2 });
    });

    it('never writes the secret to a log line, and never into an error', async () => {
      const deps = harness().service.deps;
      const lines: string[] = [];
      const original = deps.log;
      deps.log = createLogger({ level: 'trace', destination: { write: (line: string) => lines.push(line) } });
      const merchant = await createMerchant();
      try {
        const first = await put(merchant, { webhook_url: 'https://hooks.merchant.example/logged' });
        expect(first.body.signing_secret).to.match(SECRET);
        await put(merchant, { webhook_url: 'https://hooks.merchant.example/logged-again' });
        const refused = await put(merchant, { webhook_url: 'http://hooks.merchant.example/' });
        expect(refused.status).to.equal(400);
        expect(refused.text).to.not.include('whsec_');
        const key = randomUUID();
        expect((await put(merchant, { webhook_url: 'https://a.merchant.example/' }, key)).status).to.equal(
          200,
        );
        const reused = await put(merchant, { webhook_url: 'https://b.merchant.example/' }, key);
        expect(errorOf(reused).code).to.equal('IDEMPOTENCY_KEY_REUSED');
        expect(reused.text).to.not.include('whsec_');
      } finally {
        deps.log = original;
      }
      expect(lines.some((l) => l.includes('webhook url set'))).to.equal(true);
      for (const line of lines) expect(line).to.not.include('whsec_');
    });

    it('stores and returns the normalised URL it will call', async () => {
      const merchant = await createMerchant();
      const res = await put(merchant, { webhook_url: 'https://Hooks.Merchant.Example:443/Payouts?x=1' });
      expect(res.status).to.equal(200);
      expect(res.body.webhook_url).to.equal('https://hooks.merchant.example/Payouts?x=1');
    });

    it('accepts plain http for exactly localhost and 127.0.0.1', async () => {
      const merchant = await createMerchant();
      for (const url of ['http://localhost:8080/hook', 'http://127.0.0.1:9000/hook']) {
        const res = await put(merchant, { webhook_url: url });
        expect(res.status, url).to.equal(200);
        expect(res.body.webhook_url).to.equal(url);
      }
    });

    it('replays the first response byte for byte, secret included, without issuing another', async () => {
      const merchant = await createMerchant();
      const key = randomUUID();
      const first = await put(merchant, { webhook_url: 'https://hooks.merchant.example/replay' }, key);
      const again = await put(merchant, { webhook_url: 'https://hooks.merchant.example/replay' }, key);
      expect(again.status).to.equal(200);
      expect(again.text).to.equal(first.text);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(await secretInUse(merchant.tenantId)).to.equal(first.body.signing_secret);
    });

    it('keeps the secret out of the stored idempotent response', async () => {
      const merchant = await createMerchant();
      const res = await put(merchant, { webhook_url: 'https://hooks.merchant.example/at-rest' });
      const em = harness().service.deps.orm.em.fork();
      const rows = await em.execute<{ response_body: string }[]>(
        'select response_body from idempotency_keys where tenant_id = ?',
        [merchant.tenantId],
      );
      // One stored response, the PUT's: sealed, so the secret it holds for replays is not in clear.
      expect(rows, 'the stored response of the PUT').to.have.length(1);
      expect(rows[0]!.response_body).to.not.include(res.body.signing_secret);
      expect(rows[0]!.response_body).to.not.include('hooks.merchant.example');
      const opened = decryptSecret(harness().service.deps.secrets.idempotencyKey, rows[0]!.response_body);
      expect(JSON.parse(opened)).to.deep.equal(res.body);
    });
  });

  describe('URL policy', () => {
    const refused: [string, string][] = [
      ['http://hooks.merchant.example/', 'must use https'],
      ['ftp://hooks.merchant.example/', 'must use https'],
      ['hooks.merchant.example/payouts', 'must be an absolute URL'],
      ['https://user:secret@hooks.merchant.example/', 'must not contain credentials'],
      [`https://hooks.merchant.example/${'a'.repeat(2048)}`, 'must be at most 2048 characters'],
      ['https://10.0.0.5/hook', 'must not point to a private address'],
      ['https://172.16.4.2/hook', 'must not point to a private address'],
      ['https://192.168.1.10/hook', 'must not point to a private address'],
      ['https://[fc00::1]/hook', 'must not point to a private address'],
      ['https://127.0.0.2/hook', 'must not point to a loopback address'],
      ['https://[::1]/hook', 'must not point to a loopback address'],
      ['https://[::ffff:127.0.0.1]/hook', 'must not point to a loopback address'],
      ['http://0x7f.1/hook', 'must use https'],
      ['http://2130706433:5432/', 'must use https'],
      ['https://0x7f.1/hook', 'must not point to a loopback address'],
      ['https://2130706433/hook', 'must not point to a loopback address'],
      ['https://0177.0.0.1/hook', 'must not point to a loopback address'],
      ['https://127.1/hook', 'must not point to a loopback address'],
      ['https://0xa.1/hook', 'must not point to a private address'],
      ['https://169.254.10.1/hook', 'must not point to a link-local address'],
      ['https://[fe80::1]/hook', 'must not point to a link-local address'],
      ['https://100.64.0.1/hook', 'must not point to a carrier-grade NAT address'],
      ['https://0.0.0.0/hook', 'must not point to an unspecified address'],
      ['https://169.254.169.254/latest/meta-data/', 'must not point to a cloud metadata endpoint'],
      ['https://[::ffff:a9fe:a9fe]/', 'must not point to a cloud metadata endpoint'],
      ['https://[fd00:ec2::254]/', 'must not point to a cloud metadata endpoint'],
      ['https://metadata.google.internal/computeMetadata/v1/', 'must not point to a cloud metadata endpoint'],
    ];

    let merchant: Merchant;
    before(async () => {
      merchant = await createMerchant();
    });

    for (const [url, issue] of refused) {
      const label = url.length > 60 ? `${url.slice(0, 40)}…` : url;
      it(`refuses ${label} (400 WEBHOOK_URL_INVALID: ${issue})`, async () => {
        const res = await put(merchant, { webhook_url: url });
        expect(res.status).to.equal(400);
        const error = errorOf(res);
        expect(error.code).to.equal('WEBHOOK_URL_INVALID');
        expect(error.details).to.have.length(1);
        expect(error.details[0]?.field).to.equal('webhook_url');
        expect(error.details[0]?.issue).to.include(issue);
      });
    }

    it('saved nothing for any refused URL', async () => {
      expect((await get(merchant)).body).to.include({ webhook_url: null, has_secret: false });
      expect(await storedRow(merchant.tenantId)).to.equal(undefined);
    });

    it('refuses a missing or non-string URL and unknown fields as VALIDATION_FAILED', async () => {
      for (const body of [
        {},
        { webhook_url: 42 },
        { webhook_url: 'https://hooks.merchant.example/', secret: 'x' },
      ]) {
        const res = await put(merchant, body);
        expect(res.status, JSON.stringify(body)).to.equal(400);
        expect(errorOf(res).code).to.equal('VALIDATION_FAILED');
      }
    });

    it('refuses localhost and 127.0.0.1, any scheme, when WEBHOOK_ALLOW_LOCALHOST is off', async () => {
      const other = await createMerchant();
      patchConfig({ WEBHOOK_ALLOW_LOCALHOST: false });
      for (const url of ['http://127.0.0.1:5432/', 'http://localhost:8080/hook', 'https://127.0.0.1/']) {
        const res = await put(other, { webhook_url: url });
        expect(res.status, url).to.equal(400);
        expect(errorOf(res).code).to.equal('WEBHOOK_URL_INVALID');
      }
      patchConfig({ WEBHOOK_ALLOW_LOCALHOST: true });
      expect((await put(other, { webhook_url: 'http://127.0.0.1:5432/' })).status).to.equal(200);
    });

    it('lets WEBHOOK_ALLOW_PRIVATE_URLS lift private addresses, but never metadata endpoints', async () => {
      const other = await createMerchant();
      patchConfig({ WEBHOOK_ALLOW_PRIVATE_URLS: true });
      expect((await put(other, { webhook_url: 'https://10.0.0.5/hook' })).status).to.equal(200);
      expect((await put(other, { webhook_url: 'https://169.254.169.254/' })).status).to.equal(400);
    });
  });

  describe('POST /v1/webhooks/config/rotate-secret', () => {
    it('issues a new secret at once and retires the old one', async () => {
      const merchant = await createMerchant();
      const first = await put(merchant, { webhook_url: 'https://hooks.merchant.example/rotate' });
      const sealedBefore = (await storedRow(merchant.tenantId))?.secret_sealed;

      const res = await rotate(merchant);
      expect(res.status).to.equal(200);
      expect(Object.keys(res.body)).to.deep.equal(WITH_SECRET_KEYS);
      expect(res.body.signing_secret).to.match(SECRET);
      expect(res.body.signing_secret).to.not.equal(first.body.signing_secret);
      expect(res.body).to.include({
        webhook_url: 'https://hooks.merchant.example/rotate',
        has_secret: true,
        secret_version: 2,
        secret_rotated_at: harness().clock.now().toISOString(),
      });

      expect(await secretInUse(merchant.tenantId)).to.equal(res.body.signing_secret);
      const row = await storedRow(merchant.tenantId);
      expect(row?.secret_sealed).to.not.equal(sealedBefore);
      expect(row?.secret_sealed).to.not.include(res.body.signing_secret);
      expect(row?.secret_version).to.equal(2);

      const read = await get(merchant);
      expect(read.body).to.include({ secret_version: 2, has_secret: true });
      expect(read.text).to.not.include('whsec_');
    });

    it('rotates again and again, each secret different', async () => {
      const merchant = await createMerchant();
      const seen = new Set<string>();
      for (let i = 1; i <= 3; i++) {
        const res = await rotate(merchant);
        expect(res.body.secret_version).to.equal(i);
        seen.add(res.body.signing_secret);
      }
      expect(seen.size).to.equal(3);
    });

    it('issues the first secret when nothing is configured (URL stays null), which a later PUT keeps', async () => {
      const merchant = await createMerchant();
      const res = await rotate(merchant);
      expect(res.status).to.equal(200);
      expect(res.body).to.include({
        webhook_url: null,
        has_secret: true,
        secret_version: 1,
        secret_rotated_at: null,
      });
      expect(res.body.signing_secret).to.match(SECRET);

      const set = await put(merchant, { webhook_url: 'https://hooks.merchant.example/later' });
      expect(set.body).to.include({ signing_secret: res.body.signing_secret, secret_version: 1 });
      expect(await secretInUse(merchant.tenantId)).to.equal(res.body.signing_secret);
    });

    it('replays a rotation instead of rotating twice', async () => {
      const merchant = await createMerchant();
      await put(merchant, { webhook_url: 'https://hooks.merchant.example/once' });
      const key = randomUUID();
      const first = await rotate(merchant, key);
      const again = await rotate(merchant, key);
      expect(again.text).to.equal(first.text);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect((await get(merchant)).body.secret_version).to.equal(2);
      expect(await secretInUse(merchant.tenantId)).to.equal(first.body.signing_secret);
    });

    it('takes no body', async () => {
      const merchant = await createMerchant();
      const res = await call('POST', '/v1/webhooks/config/rotate-secret', {
        key: merchant.key,
        body: { force: true },
      });
      expect(res.status).to.equal(400);
      expect(errorOf(res).details.map((d) => d.field)).to.deep.equal(['force']);
    });
  });

  describe('security', () => {
    it("keeps tenants apart: one tenant's writes never touch another's configuration", async () => {
      const alice = await createMerchant();
      const bob = await createMerchant();
      const aliceSet = await put(alice, { webhook_url: 'https://alice.merchant.example/' });
      expect((await get(bob)).body).to.include({ webhook_url: null, has_secret: false });

      const bobRotated = await rotate(bob);
      expect(bobRotated.body.secret_version).to.equal(1);
      expect(await secretInUse(alice.tenantId)).to.equal(aliceSet.body.signing_secret);
      expect((await get(alice)).body).to.include({
        webhook_url: 'https://alice.merchant.example/',
        secret_version: 1,
      });
    });

    it('needs webhooks:manage for reading too', async () => {
      const reader = await createMerchant({ scopes: ['webhooks:read'] });
      const res = await get(reader);
      expect(res.status).to.equal(403);
      expect(errorOf(res).message).to.include('webhooks:manage');
    });

    it('returns no secret for a tenant without one', async () => {
      const merchant = await createMerchant();
      expect(await secretInUse(merchant.tenantId)).to.equal(null);
    });
  });
});
