import { expect } from 'chai';
import { accountFormatIssue } from '#src/corridors/corridors.ts';
import { OutboxEvent } from '#src/events/entities.ts';
import { Task } from '#src/jobs/entities.ts';
import { call, createMerchant, errorOf, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { racesOnlyOnPostgres } from '../races.ts';
import { bankPayout, mobilePayout, payoutReadyMerchant } from './fixtures.ts';

const PAYOUT_FIELDS = [
  'id',
  'tenant_id',
  'status',
  'merchant_reference',
  'metadata',
  'notification_url',
  'destination_type',
  'destination_country',
  'destination_currency',
  'destination_amount',
  'destination_account_unique',
  'destination_provider_name',
  'destination_provider_code',
  'destination_account_name',
  'payee_name_check',
  'settlement_currency',
  'settlement_amount',
  'exchange_rate',
  'platform_fee_amount',
  'platform_fee_currency',
  'network_fee_amount',
  'network_fee_currency',
  'total_fee_amount',
  'total_fee_currency',
  'is_refunded',
  'refund_reference',
  'payment_instruction',
  'status_timeline',
  'created_at',
  'updated_at',
];

describe('POST /v1/payouts', () => {
  let merchant: Merchant;
  before(async () => {
    merchant = await payoutReadyMerchant();
  });

  describe('happy path', () => {
    it('creates the payout in CREATED with settlement_amount 0 and no instruction yet @smoke', async () => {
      const res = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: bankPayout(),
        headers: { 'x-request-id': 'create-trace-1' },
      });
      expect(res.status, res.text).to.equal(201);
      const p = res.body;
      expect(Object.keys(p)).to.have.members(PAYOUT_FIELDS);
      expect(p).to.include({
        tenant_id: merchant.tenantId,
        status: 'CREATED',
        settlement_amount: 0,
        payment_instruction: null,
        settlement_currency: 'USDT',
        destination_amount: 150000,
        destination_provider_code: '058',
        merchant_reference: 'INV-1001',
        is_refunded: false,
        refund_reference: null,
      });
      expect(p.status_timeline).to.deep.equal([
        {
          from_status: null,
          to_status: 'CREATED',
          triggered_by: 'SYSTEM',
          reason_code: 'PAYOUT_CREATED',
          reason_detail: { payee_name_check: 'MATCH' },
          metadata: { request_id: 'create-trace-1' },
          created_at: p.created_at,
        },
      ]);
    });

    it('writes payout.created to the outbox and makes instruction generation due, in the same transaction', async () => {
      const res = await call('POST', '/v1/payouts', { key: merchant.key, body: mobilePayout() });
      const em = harness().service.deps.orm.em.fork();
      const events = await em.find(OutboxEvent, { payoutId: res.body.id });
      expect(events.map((e) => e.eventType)).to.deep.equal(['payout.created']);
      const payload = JSON.parse(events[0]!.payload) as Record<string, any>;
      // Stored as the text merchants receive, the contract's fields in the contract's order.
      expect(Object.keys(payload)).to.deep.equal(['event_id', 'event_type', 'created_at', 'status', 'data']);
      expect(payload.event_id).to.equal(events[0]!.id);
      expect(payload.status).to.equal('CREATED');
      expect(payload.data).to.deep.include({ object: 'payout', id: res.body.id });
      const tasks = await em.find(Task, { subjectId: res.body.id });
      expect(tasks.map((t) => t.kind)).to.deep.equal(['GENERATE_INSTRUCTION']);
    });

    it('settles in NGN on the bank rail when asked, ignoring a network', async () => {
      const res = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: bankPayout({ settlement_currency: 'NGN', settlement_network: 'BSC' }),
      });
      expect(res.status, res.text).to.equal(201);
      expect(res.body.settlement_currency).to.equal('NGN');
    });

    it('pays a crypto wallet with the network as provider name and no provider code', async () => {
      const res = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: {
          destination_type: 'CRYPTO_WALLET',
          destination_country: 'GB',
          destination_currency: 'USDT',
          destination_amount: 250.5,
          destination_account_unique: '0x52908400098527886E0F7030069857D2E4169EE7',
          destination_provider_name: 'BSC',
          settlement_network: 'BSC',
        },
      });
      expect(res.status, res.text).to.equal(201);
      expect(res.body).to.include({
        destination_provider_code: null,
        destination_provider_name: 'BSC',
        destination_account_name: null,
      });
    });

    it('keeps amounts exact: no float artefacts on the wire', async () => {
      const res = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: bankPayout({ destination_amount: 1000.1 }),
      });
      expect(res.text).to.include('"destination_amount":1000.1,');
    });
  });

  describe('errors', () => {
    it('refuses a tenant that is not approved with 403 TENANT_NOT_APPROVED', async () => {
      const pending = await payoutReadyMerchant({ approved: false });
      const res = await call('POST', '/v1/payouts', { key: pending.key, body: bankPayout() });
      expect(res.status).to.equal(403);
      expect(errorOf(res).code).to.equal('TENANT_NOT_APPROVED');
    });

    it('needs a refund destination for the settlement currency (422) and creates nothing', async () => {
      const bare = await createMerchant();
      const res = await call('POST', '/v1/payouts', { key: bare.key, body: bankPayout() });
      expect(res.status).to.equal(422);
      expect(errorOf(res).code).to.equal('REFUND_DESTINATION_REQUIRED');
      const list = await call('GET', '/v1/payouts', { key: bare.key });
      expect(list.body.data).to.deep.equal([]);
    });

    it('requires provider code and account name for bank and mobile money', async () => {
      const body = bankPayout();
      delete body.destination_provider_code;
      delete body.destination_account_name;
      const res = await call('POST', '/v1/payouts', { key: merchant.key, body });
      expect(res.status).to.equal(400);
      expect(errorOf(res).details.map((d) => d.field)).to.have.members([
        'destination_provider_code',
        'destination_account_name',
      ]);
    });

    it('refuses a provider code for a crypto wallet and a network that is not TRON or BSC', async () => {
      const res = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: {
          destination_type: 'CRYPTO_WALLET',
          destination_country: 'GB',
          destination_currency: 'USDT',
          destination_amount: 10,
          destination_account_unique: 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy',
          destination_provider_name: 'ETHEREUM',
          destination_provider_code: 'X',
        },
      });
      expect(res.status).to.equal(400);
      expect(errorOf(res).details.map((d) => d.field)).to.have.members([
        'destination_provider_code',
        'destination_provider_name',
      ]);
    });

    it('refuses a provider code that is not in the corridor directory', async () => {
      const res = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: bankPayout({ destination_provider_code: '999' }),
      });
      expect(res.status).to.equal(422);
      expect(errorOf(res)).to.deep.include({ code: 'PROVIDER_CODE_UNKNOWN' });
      expect(errorOf(res).details[0]?.field).to.equal('destination_provider_code');
    });

    it('refuses a corridor that does not exist, and NGN settlement outside NGN payouts', async () => {
      const fr = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: bankPayout({ destination_country: 'FR', destination_currency: 'EUR' }),
      });
      expect(fr.status).to.equal(400); // EUR is not a currency the service pays out
      const kes = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: mobilePayout({ settlement_currency: 'NGN' }),
      });
      expect(kes.status).to.equal(422);
      expect(errorOf(kes).code).to.equal('CORRIDOR_NOT_SUPPORTED');
    });

    it('refuses amounts that are not positive or carry more decimals than the currency has', async () => {
      for (const amount of [0, -5, 10.123]) {
        const res = await call('POST', '/v1/payouts', {
          key: merchant.key,
          body: bankPayout({ destination_amount: amount }),
        });
        expect(res.status, String(amount)).to.equal(400);
        expect(errorOf(res).details[0]?.field).to.equal('destination_amount');
      }
      const text = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: bankPayout({ destination_amount: '100' }),
      });
      expect(text.status).to.equal(400);
    });

    it('refuses a notification_url that is not HTTPS', async () => {
      const res = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: bankPayout({ notification_url: 'http://hooks.merchant.example/x' }),
      });
      expect(res.status).to.equal(400);
      expect(errorOf(res)).to.deep.include({ code: 'WEBHOOK_URL_INVALID' });
      expect(errorOf(res).details[0]?.field).to.equal('notification_url');
    });
  });

  describe('account identifiers, per corridor and destination type', () => {
    const payoutCount = async () => {
      const [row] = await harness()
        .service.deps.orm.em.fork()
        .execute<{ n: number }[]>('select count(*)::int as n from payouts where tenant_id = ?', [
          merchant.tenantId,
        ]);
      return row?.n;
    };

    it('refuses a Nigerian bank account that is not a 10-digit NUBAN, and creates nothing', async () => {
      const before = await payoutCount();
      for (const account of [
        '<script>alert(1)</script>',
        "' OR 1=1 --",
        '\uff10\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19\uff11',
        '023456789',
        '02345678910',
        '0234 567891',
        '+2340234567891',
      ]) {
        const res = await call('POST', '/v1/payouts', {
          key: merchant.key,
          body: bankPayout({ destination_account_unique: account }),
        });
        expect(res.status, account).to.equal(400);
        expect(errorOf(res)).to.deep.include({
          code: 'VALIDATION_FAILED',
          details: [
            { field: 'destination_account_unique', issue: 'must be a 10-digit NUBAN, such as 0123456789' },
          ],
        });
      }
      expect(await payoutCount()).to.equal(before);
    });

    it('takes the example of every corridor and destination type, and refuses what does not fit', async () => {
      const { corridors } = harness().service.deps;
      for (const corridor of corridors.data.corridors) {
        for (const type of corridor.destination_types) {
          const institution = corridor.institutions.find((i) => i.destination_type === type);
          const networks = type === 'CRYPTO_WALLET' ? (['TRON', 'BSC'] as const) : ([null] as const);
          for (const network of networks) {
            const format = corridors.accountFormat(corridor, type, network);
            expect(format, `${corridor.country}/${type}`).to.not.equal(undefined);
            const body = (account: string) => ({
              destination_type: type,
              destination_country: corridor.country === '*' ? 'GB' : corridor.country,
              destination_currency: corridor.currency,
              destination_amount: 100,
              destination_account_unique: account,
              destination_provider_name: network ?? institution?.provider_name,
              ...(institution && { destination_provider_code: institution.provider_code }),
              ...(type !== 'CRYPTO_WALLET' && { destination_account_name: 'ADAEZE OKONKWO' }),
            });
            const label = `${corridor.country}/${corridor.currency}/${type}${network ? `/${network}` : ''}`;
            const ok = await call('POST', '/v1/payouts', { key: merchant.key, body: body(format!.example) });
            expect(ok.status, `${label}: ${ok.text}`).to.equal(201);
            if (format!.mobile) {
              // The same number as its country writes it at home: trunk 0, spaces.
              const national = format!.example.slice(1 + format!.mobile.countryCode.length);
              const home = `${format!.mobile.trunkPrefix}${national.slice(0, 3)} ${national.slice(3)}`;
              const spelled = await call('POST', '/v1/payouts', { key: merchant.key, body: body(home) });
              expect(spelled.status, `${label} ${home}: ${spelled.text}`).to.equal(201);
              expect(spelled.body.destination_account_unique, label).to.equal(format!.example);
            }
            const bad = await call('POST', '/v1/payouts', {
              key: merchant.key,
              body: body(`x${format!.example}`),
            });
            expect(bad.status, label).to.equal(400);
            expect(errorOf(bad).details, label).to.deep.equal([
              {
                field: 'destination_account_unique',
                issue: accountFormatIssue(format!, `x${format!.example}`),
              },
            ]);
            expect(
              errorOf(bad).details[0]!.issue.startsWith(`must be ${format!.description}, `),
              label,
            ).to.equal(true);
          }
        }
      }
    });

    it('takes a mobile number as people write it, and keeps it in E.164', async () => {
      for (const account of [
        '+254712345678',
        '254712345678',
        '00254712345678',
        '0712345678',
        '0712 345 678',
        '+254 712-345-678',
        '(0712) 345.678',
      ]) {
        const res = await call('POST', '/v1/payouts', {
          key: merchant.key,
          body: mobilePayout({ destination_account_unique: account }),
        });
        expect(res.status, `${account}: ${res.text}`).to.equal(201);
        expect(res.body.destination_account_unique, account).to.equal('+254712345678');
        const read = await call('GET', `/v1/payouts/${res.body.id}`, { key: merchant.key });
        expect(read.body.destination_account_unique, account).to.equal('+254712345678');
      }
    });

    it('refuses what is not a mobile number of the corridor’s country, showing the accepted forms', async () => {
      for (const account of [
        '+2348031234567',
        '2348031234567',
        '+25471234567',
        '071234567',
        '0201234567',
        '+254 712 345 678 9',
        '712345678',
        '+0712345678',
        '0712345678x',
      ]) {
        const before = await payoutCount();
        const res = await call('POST', '/v1/payouts', {
          key: merchant.key,
          body: mobilePayout({ destination_account_unique: account }),
        });
        expect(res.status, account).to.equal(400);
        expect(errorOf(res).details, account).to.deep.equal([
          {
            field: 'destination_account_unique',
            issue:
              'must be a Kenyan mobile number: +254 and 9 digits starting 7, 10 or 11, written +254712345678, ' +
              '254712345678, 00254712345678 or 0712345678; spaces and dashes are allowed',
          },
        ]);
        expect(await payoutCount()).to.equal(before);
      }
    });
  });

  describe('idempotency', () => {
    it('replays the first response byte for byte and creates one payout', async () => {
      const key = crypto.randomUUID();
      const body = bankPayout({ merchant_reference: `idem-${key}` });
      const first = await call('POST', '/v1/payouts', { key: merchant.key, body, idempotencyKey: key });
      const again = await call('POST', '/v1/payouts', { key: merchant.key, body, idempotencyKey: key });
      expect(again.status).to.equal(201);
      expect(again.text).to.equal(first.text);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      const list = await call('GET', '/v1/payouts?limit=100', { key: merchant.key });
      expect(
        list.body.data.filter((p: { merchant_reference: string }) => p.merchant_reference === `idem-${key}`),
      ).to.have.length(1);
    });

    /** 50 simultaneous creates with one key and one body: all get the same 201, one payout exists. */
    async function raceOf(body: Record<string, unknown>, reference: string) {
      const key = crypto.randomUUID();
      const answers = await Promise.all(
        Array.from({ length: 50 }, () =>
          call('POST', '/v1/payouts', { key: merchant.key, body, idempotencyKey: key }),
        ),
      );
      for (const answer of answers) {
        expect(answer.status, answer.text).to.equal(201);
        expect(answer.text).to.equal(answers[0]!.text);
      }
      const list = await call('GET', '/v1/payouts?limit=100', { key: merchant.key });
      expect(
        list.body.data.filter((p: { merchant_reference: string }) => p.merchant_reference === reference),
      ).to.have.length(1);
    }

    it('answers 50 concurrent requests with one key from one write: one payout, the same bytes for all', async function () {
      racesOnlyOnPostgres(this);
      const reference = `race-${crypto.randomUUID()}`;
      await raceOf(bankPayout({ merchant_reference: reference }), reference);
    });

    it('answers 50 concurrent requests with one key and a quote_id from one write, never QUOTE_NOT_ACCEPTABLE', async function () {
      racesOnlyOnPostgres(this);
      const quote = await call('POST', '/v1/rates/quotes', {
        key: merchant.key,
        body: { settlement_currency: 'USDT', destination_currency: 'NGN', destination_amount: 150000 },
      });
      expect(quote.status, quote.text).to.equal(201);
      const reference = `quote-race-${crypto.randomUUID()}`;
      await raceOf(bankPayout({ merchant_reference: reference, quote_id: quote.body.id }), reference);
    });

    it('refuses the same key for a different payout (422) and creates nothing', async () => {
      const key = crypto.randomUUID();
      await call('POST', '/v1/payouts', { key: merchant.key, body: bankPayout(), idempotencyKey: key });
      const res = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: bankPayout({ destination_amount: 1 }),
        idempotencyKey: key,
      });
      expect(res.status).to.equal(422);
      expect(errorOf(res).code).to.equal('IDEMPOTENCY_KEY_REUSED');
    });

    it('lets a key whose request failed be used again once the cause is fixed', async () => {
      const fresh = await createMerchant();
      const key = crypto.randomUUID();
      const refused = await call('POST', '/v1/payouts', {
        key: fresh.key,
        body: bankPayout(),
        idempotencyKey: key,
      });
      expect(errorOf(refused).code).to.equal('REFUND_DESTINATION_REQUIRED');
      await call('PUT', '/v1/refund-destinations', {
        key: fresh.key,
        body: {
          currency: 'USDT',
          type: 'CRYPTO_ADDRESS',
          network: 'TRON',
          address: 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy',
        },
      });
      const created = await call('POST', '/v1/payouts', {
        key: fresh.key,
        body: bankPayout(),
        idempotencyKey: key,
      });
      expect(created.status).to.equal(201);
    });
  });

  describe('with a quote', () => {
    it('uses a pending quote of the same currencies and amount, which becomes USED', async () => {
      const quote = await call('POST', '/v1/rates/quotes', {
        key: merchant.key,
        body: { settlement_currency: 'USDT', destination_currency: 'NGN', destination_amount: 150000 },
      });
      expect(quote.status).to.equal(201);
      const res = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: bankPayout({ quote_id: quote.body.id }),
      });
      expect(res.status, res.text).to.equal(201);
      const after = await call('GET', `/v1/rates/quotes/${quote.body.id}`, { key: merchant.key });
      expect(after.body.status).to.equal('USED');
      const twice = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: bankPayout({ quote_id: quote.body.id }),
      });
      expect(twice.status).to.equal(409);
    });

    it('refuses a quote for another amount and leaves it usable', async () => {
      const quote = await call('POST', '/v1/rates/quotes', {
        key: merchant.key,
        body: { settlement_currency: 'USDT', destination_currency: 'NGN', destination_amount: 999 },
      });
      const res = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: bankPayout({ quote_id: quote.body.id }),
      });
      expect(res.status).to.equal(422);
      expect(errorOf(res).code).to.equal('QUOTE_MISMATCH');
      const after = await call('GET', `/v1/rates/quotes/${quote.body.id}`, { key: merchant.key });
      expect(after.body.status).to.equal('PENDING');
    });
  });
});
