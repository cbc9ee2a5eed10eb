import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { activeRefundDestination } from '#src/refund-destinations/service.ts';
import { call, createMerchant, errorOf, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';

const TRON_ADDRESS = 'TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7';
const BSC_ADDRESS = '0x52908400098527886E0F7030069857D2E4169EE7';

const RESOURCE_KEYS = [
  'id',
  'currency',
  'type',
  'bank_name',
  'bank_code',
  'account_number_masked',
  'account_name',
  'network',
  'address_masked',
  'is_verified',
  'is_active',
  'created_at',
  'updated_at',
];

const bank = (accountNumber: string, extra: Record<string, unknown> = {}) => ({
  currency: 'NGN',
  type: 'BANK_ACCOUNT',
  bank_code: '058',
  account_number: accountNumber,
  ...extra,
});

const crypto = (network: 'TRON' | 'BSC', address: string, extra: Record<string, unknown> = {}) => ({
  currency: 'USDT',
  type: 'CRYPTO_ADDRESS',
  network,
  address,
  ...extra,
});

const put = (merchant: Merchant, body: unknown, idempotencyKey?: string) =>
  call('PUT', '/v1/refund-destinations', { key: merchant.key, body, idempotencyKey });

const list = (merchant: Merchant) => call('GET', '/v1/refund-destinations', { key: merchant.key });

/** Every stored row of a tenant, replaced ones included, oldest first. */
async function storedRows(tenantId: string) {
  const em = harness().service.deps.orm.em.fork();
  return em.execute<{ id: string; currency: string; is_active: boolean; account_number: string | null }[]>(
    'select id, currency, is_active, account_number from refund_destinations where tenant_id = ? order by created_at, id',
    [tenantId],
  );
}

/**
 * A NUBAN nobody else in the run uses, so that cached name enquiries never interfere. Without
 * `lastFour` it never ends in 0000, the sandbox's "no such account".
 */
function nuban(lastFour = ''): string {
  const random = Array.from({ length: 10 - lastFour.length }, () => Math.floor(Math.random() * 10)).join('');
  const number = random + lastFour;
  return lastFour === '' && number.endsWith('0000') ? `${number.slice(0, -1)}1` : number;
}

describe('refund destinations', () => {
  describe('PUT /v1/refund-destinations: bank accounts (NGN)', () => {
    it('verifies the account by name enquiry and stores the bank-confirmed name, masked in the response', async () => {
      const merchant = await createMerchant();
      const accountNumber = nuban();
      const enquiry = await call('POST', '/v1/banks/resolve', {
        key: merchant.key,
        idempotencyKey: null,
        body: {
          destination_type: 'BANK_ACCOUNT',
          destination_currency: 'NGN',
          destination_account_unique: accountNumber,
          destination_provider_code: '058',
        },
      });
      expect(enquiry.status).to.equal(200);

      const res = await put(merchant, bank(accountNumber));
      expect(res.status).to.equal(200);
      expect(Object.keys(res.body)).to.deep.equal(RESOURCE_KEYS);
      expect(res.body).to.include({
        currency: 'NGN',
        type: 'BANK_ACCOUNT',
        bank_name: 'Guaranty Trust Bank',
        bank_code: '058',
        account_number_masked: `******${accountNumber.slice(-4)}`,
        account_name: enquiry.body.destination_account_name,
        network: null,
        address_masked: null,
        is_verified: true,
        is_active: true,
      });
      expect(res.body.created_at).to.equal(new Date(res.body.created_at).toISOString());
      expect(res.text).to.not.include(accountNumber);
    });

    it('keeps a bank_name the merchant sends (display only; routing uses bank_code)', async () => {
      const merchant = await createMerchant();
      const res = await put(merchant, bank(nuban(), { bank_name: 'GTBank' }));
      expect(res.status).to.equal(200);
      expect(res.body.bank_name).to.equal('GTBank');
    });

    it('refuses an account the bank does not know (…0000): 422, details name account_number, nothing saved', async () => {
      const merchant = await createMerchant();
      const accountNumber = nuban('0000');
      const res = await put(merchant, bank(accountNumber));
      expect(res.status).to.equal(422);
      const error = errorOf(res);
      expect(error.code).to.equal('BANK_ACCOUNT_VERIFICATION_FAILED');
      expect(error.details.map((d) => d.field)).to.deep.equal(['account_number']);
      expect(res.text).to.not.include(accountNumber);
      expect((await list(merchant)).body).to.deep.equal([]);
      expect(await storedRows(merchant.tenantId)).to.deep.equal([]);
    });

    it('refuses an unknown bank code as a verification failure naming bank_code and account_number', async () => {
      const merchant = await createMerchant();
      const res = await put(merchant, bank(nuban(), { bank_code: '999' }));
      expect(res.status).to.equal(422);
      const error = errorOf(res);
      expect(error.code).to.equal('BANK_ACCOUNT_VERIFICATION_FAILED');
      expect(error.details.map((d) => d.field)).to.deep.equal(['bank_code', 'account_number']);
      expect(await storedRows(merchant.tenantId)).to.deep.equal([]);
    });

    it('keeps the current destination when a replacement fails verification', async () => {
      const merchant = await createMerchant();
      const first = await put(merchant, bank(nuban()));
      const failed = await put(merchant, bank(nuban('0000')));
      expect(failed.status).to.equal(422);
      const after = await list(merchant);
      expect(after.body.map((d: { id: string }) => d.id)).to.deep.equal([first.body.id]);
      expect(after.body[0].is_active).to.equal(true);
    });

    it('frees the Idempotency-Key of a failed verification for the corrected request', async () => {
      const merchant = await createMerchant();
      const key = randomUUID();
      expect((await put(merchant, bank(nuban('0000')), key)).status).to.equal(422);
      expect((await put(merchant, bank(nuban()), key)).status).to.equal(200);
    });
  });

  describe('PUT /v1/refund-destinations: crypto addresses (USDT)', () => {
    it('stores a TRON address unverified, masked as first 6 and last 4', async () => {
      const merchant = await createMerchant();
      const res = await put(merchant, crypto('TRON', TRON_ADDRESS));
      expect(res.status).to.equal(200);
      expect(Object.keys(res.body)).to.deep.equal(RESOURCE_KEYS);
      expect(res.body).to.include({
        currency: 'USDT',
        type: 'CRYPTO_ADDRESS',
        bank_name: null,
        bank_code: null,
        account_number_masked: null,
        account_name: null,
        network: 'TRON',
        address_masked: `${TRON_ADDRESS.slice(0, 6)}${'*'.repeat(24)}${TRON_ADDRESS.slice(-4)}`,
        is_verified: false,
        is_active: true,
      });
      expect(res.text).to.not.include(TRON_ADDRESS);
    });

    it('stores a BSC address with a tag, never echoing the address in full', async () => {
      const merchant = await createMerchant();
      const res = await put(merchant, crypto('BSC', BSC_ADDRESS, { tag: 'memo-42' }));
      expect(res.status).to.equal(200);
      expect(res.body.network).to.equal('BSC');
      expect(res.body.is_verified).to.equal(false);
      expect(res.text).to.not.include(BSC_ADDRESS);
      expect(res.text.toLowerCase()).to.not.include(BSC_ADDRESS.toLowerCase());
    });

    it('checks the address format of the network', async () => {
      const merchant = await createMerchant();
      const cases: [ReturnType<typeof crypto>, string][] = [
        [crypto('BSC', TRON_ADDRESS), 'must be a BSC address'],
        [crypto('TRON', BSC_ADDRESS), 'must be a TRON address'],
        [crypto('TRON', `${TRON_ADDRESS.slice(0, -1)}0`), 'must be a TRON address'],
        [crypto('TRON', TRON_ADDRESS.slice(0, -1)), 'must be a TRON address'],
        [crypto('BSC', `${BSC_ADDRESS}00`), 'must be a BSC address'],
      ];
      for (const [body, issue] of cases) {
        const res = await put(merchant, body);
        expect(res.status, body.address).to.equal(400);
        const error = errorOf(res);
        expect(error.code).to.equal('VALIDATION_FAILED');
        expect(error.details).to.have.length(1);
        expect(error.details[0]).to.include({ field: 'address' });
        expect(error.details[0]?.issue).to.include(issue);
      }
      expect(await storedRows(merchant.tenantId)).to.deep.equal([]);
    });

    it('accepts only TRON and BSC', async () => {
      const merchant = await createMerchant();
      const res = await put(merchant, crypto('ETH' as 'TRON', BSC_ADDRESS));
      expect(res.status).to.equal(400);
      expect(errorOf(res).details.map((d) => d.field)).to.deep.equal(['network']);
    });
  });

  describe('PUT /v1/refund-destinations: validation', () => {
    let merchant: Merchant;
    before(async () => {
      merchant = await createMerchant();
    });

    const refusals: [string, unknown, { field: string; issue: string }[]][] = [
      [
        'NGN to a crypto address',
        { currency: 'NGN', type: 'CRYPTO_ADDRESS', network: 'TRON', address: TRON_ADDRESS },
        [{ field: 'type', issue: 'must be BANK_ACCOUNT for NGN' }],
      ],
      [
        'USDT to a bank account',
        { currency: 'USDT', type: 'BANK_ACCOUNT', bank_code: '058', account_number: '0123456789' },
        [{ field: 'type', issue: 'must be CRYPTO_ADDRESS for USDT' }],
      ],
      [
        'a bank account without its fields',
        { currency: 'NGN', type: 'BANK_ACCOUNT' },
        [
          { field: 'bank_code', issue: 'is required for BANK_ACCOUNT' },
          { field: 'account_number', issue: 'is required for BANK_ACCOUNT' },
        ],
      ],
      [
        'a crypto address without its fields',
        { currency: 'USDT', type: 'CRYPTO_ADDRESS', tag: null },
        [
          { field: 'network', issue: 'is required for CRYPTO_ADDRESS' },
          { field: 'address', issue: 'is required for CRYPTO_ADDRESS' },
        ],
      ],
      [
        'a NUBAN of 9 digits',
        bank('012345678'),
        [{ field: 'account_number', issue: 'must be a 10-digit NUBAN, such as 0123456789' }],
      ],
      [
        'a NUBAN with letters',
        bank('01234567AB'),
        [{ field: 'account_number', issue: 'must be a 10-digit NUBAN, such as 0123456789' }],
      ],
      [
        'fields of the other type',
        bank('0123456789', { network: 'TRON', address: TRON_ADDRESS }),
        [
          { field: 'network', issue: 'does not apply to BANK_ACCOUNT' },
          { field: 'address', issue: 'does not apply to BANK_ACCOUNT' },
        ],
      ],
    ];
    for (const [label, body, details] of refusals) {
      it(`refuses ${label} (400, naming each field)`, async () => {
        const res = await put(merchant, body);
        expect(res.status).to.equal(400);
        const error = errorOf(res);
        expect(error.code).to.equal('VALIDATION_FAILED');
        expect(error.details).to.deep.equal(details);
      });
    }

    it('refuses an unknown currency, type or field', async () => {
      const res = await put(merchant, { currency: 'EUR', type: 'IBAN', iban: 'DE89370400440532013000' });
      expect(res.status).to.equal(400);
      expect(errorOf(res).details.map((d) => d.field)).to.have.members(['currency', 'type', 'iban']);
    });

    it('accepts null for the optional fields of the other type', async () => {
      const res = await put(
        merchant,
        crypto('TRON', TRON_ADDRESS, { bank_code: null, account_number: null, tag: null }),
      );
      expect(res.status).to.equal(200);
    });

    it('saved nothing for any refused request', async () => {
      const rows = await storedRows(merchant.tenantId);
      expect(rows.map((r) => r.currency)).to.deep.equal(['USDT']);
    });
  });

  describe('replacing', () => {
    it('replaces the destination of the same currency, keeping the old row inactive as history', async () => {
      const merchant = await createMerchant();
      const firstNumber = nuban();
      const secondNumber = nuban();
      const first = await put(merchant, bank(firstNumber));
      const second = await put(merchant, bank(secondNumber, { bank_code: '044' }));
      expect(second.status).to.equal(200);
      expect(second.body.id).to.not.equal(first.body.id);
      expect(second.body).to.include({ bank_code: '044', bank_name: 'Access Bank', is_active: true });

      const listed = await list(merchant);
      expect(listed.body.map((d: { id: string }) => d.id)).to.deep.equal([second.body.id]);

      const rows = await storedRows(merchant.tenantId);
      expect(rows.map((r) => [r.id, r.is_active])).to.deep.equal([
        [first.body.id, false],
        [second.body.id, true],
      ]);
    });

    it('leaves the destination of the other currency alone', async () => {
      const merchant = await createMerchant();
      const usdt = await put(merchant, crypto('TRON', TRON_ADDRESS));
      await put(merchant, bank(nuban()));
      const ngn = await put(merchant, bank(nuban()));
      const listed = await list(merchant);
      expect(listed.body.map((d: { id: string }) => d.id)).to.deep.equal([ngn.body.id, usdt.body.id]);
    });

    it('can change a USDT destination from TRON to BSC', async () => {
      const merchant = await createMerchant();
      await put(merchant, crypto('TRON', TRON_ADDRESS));
      const bsc = await put(merchant, crypto('BSC', BSC_ADDRESS));
      const listed = await list(merchant);
      expect(listed.body).to.have.length(1);
      expect(listed.body[0]).to.include({ id: bsc.body.id, network: 'BSC' });
    });

    it('exposes the active destination, unmasked, to the payout module', async () => {
      const merchant = await createMerchant();
      const accountNumber = nuban();
      await put(merchant, bank(nuban()));
      const current = await put(merchant, bank(accountNumber));
      const em = harness().service.deps.orm.em.fork();
      const active = await activeRefundDestination(em, merchant.tenantId, 'NGN');
      expect(active).to.include({
        id: current.body.id,
        accountNumber,
        bankCode: '058',
        isVerified: true,
        isActive: true,
      });
      expect(await activeRefundDestination(em, merchant.tenantId, 'USDT')).to.equal(null);
    });
  });

  describe('idempotency', () => {
    it('replays the first response byte for byte and stores nothing twice', async () => {
      const merchant = await createMerchant();
      const key = randomUUID();
      const accountNumber = nuban();
      const first = await put(merchant, bank(accountNumber), key);
      const again = await put(merchant, bank(accountNumber), key);
      expect(first.status).to.equal(200);
      expect(again.status).to.equal(200);
      expect(again.text).to.equal(first.text);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(again.text).to.not.include(accountNumber);
      expect(await storedRows(merchant.tenantId)).to.have.length(1);
    });

    it('refuses the same key with a different body', async () => {
      const merchant = await createMerchant();
      const key = randomUUID();
      await put(merchant, crypto('TRON', TRON_ADDRESS), key);
      const res = await put(merchant, crypto('BSC', BSC_ADDRESS), key);
      expect(res.status).to.equal(422);
      expect(errorOf(res).code).to.equal('IDEMPOTENCY_KEY_REUSED');
    });
  });

  describe('GET /v1/refund-destinations', () => {
    it('returns a bare array of the active destinations, masked, NGN before USDT', async () => {
      const merchant = await createMerchant();
      const accountNumber = nuban();
      await put(merchant, crypto('TRON', TRON_ADDRESS));
      await put(merchant, bank(accountNumber));
      const res = await list(merchant);
      expect(res.status).to.equal(200);
      expect(res.body).to.be.an('array').with.length(2);
      expect(res.body.map((d: { currency: string }) => d.currency)).to.deep.equal(['NGN', 'USDT']);
      for (const destination of res.body) expect(Object.keys(destination)).to.deep.equal(RESOURCE_KEYS);
      expect(res.text).to.not.include(accountNumber);
      expect(res.text).to.not.include(TRON_ADDRESS);
    });

    it('is an empty array before anything is set', async () => {
      const merchant = await createMerchant();
      const res = await list(merchant);
      expect(res.status).to.equal(200);
      expect(res.text).to.equal('[]');
    });

    it('needs refunds:read (refunds:manage alone sets but cannot list)', async () => {
      const writer = await createMerchant({ scopes: ['refunds:manage'] });
      expect((await put(writer, crypto('TRON', TRON_ADDRESS))).status).to.equal(200);
      const res = await list(writer);
      expect(res.status).to.equal(403);
      expect(errorOf(res).message).to.include('refunds:read');
    });

    it('refuses unknown query parameters', async () => {
      const merchant = await createMerchant();
      const res = await call('GET', '/v1/refund-destinations?currency=NGN', { key: merchant.key });
      expect(res.status).to.equal(400);
      expect(errorOf(res).details.map((d) => d.field)).to.deep.equal(['currency']);
    });
  });

  describe('tenant isolation', () => {
    it("never shows or replaces another tenant's destination", async () => {
      const alice = await createMerchant();
      const bob = await createMerchant();
      const aliceNumber = nuban();
      const aliceDestination = await put(alice, bank(aliceNumber));
      expect((await list(bob)).body).to.deep.equal([]);

      const bobDestination = await put(bob, bank(nuban()));
      expect(bobDestination.status).to.equal(200);
      const aliceList = await list(alice);
      expect(aliceList.body.map((d: { id: string }) => d.id)).to.deep.equal([aliceDestination.body.id]);
      const bobList = await list(bob);
      expect(bobList.body.map((d: { id: string }) => d.id)).to.deep.equal([bobDestination.body.id]);
      expect(bobList.text).to.not.include(aliceDestination.body.id);
    });

    it('keeps idempotency keys per tenant', async () => {
      const alice = await createMerchant();
      const bob = await createMerchant();
      const key = randomUUID();
      const a = await put(alice, crypto('TRON', TRON_ADDRESS), key);
      const b = await put(bob, crypto('TRON', TRON_ADDRESS), key);
      expect(b.status).to.equal(200);
      expect(b.headers.get('idempotent-replayed')).to.equal(null);
      expect(b.body.id).to.not.equal(a.body.id);
    });
  });
});
