import { expect } from 'chai';
import { runInstructionsOnce } from '#src/instructions/job.ts';
import { newId } from '#src/lib/ids.ts';
import { toDecimal } from '#src/lib/money.ts';
import { checkPayeeAtCreate } from '#src/payees/check.ts';
import { Payout } from '#src/payouts/entities.ts';
import { insertNewPayout } from '#src/payouts/lifecycle.ts';
import { accountHolderName } from '#src/sandbox/names.ts';
import { call, errorOf, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { approvedMove, cliAs, trpcCall } from '../operators/fixtures.ts';
import { bankPayout } from '../payouts/fixtures.ts';
import { merchantWithPolicy, OTHER_NAME_ACCOUNT } from './fixtures.ts';

const deps = () => harness().service.deps;

/** The sandbox holds 0123456203 at GTBank (058) as ADAEZE OKONKWO, the fixture's name. */
const MATCHING = '0123456203';
const OTHER = OTHER_NAME_ACCOUNT;

async function create(merchant: Merchant, overrides: Record<string, unknown> = {}) {
  return call('POST', '/v1/payouts', { key: merchant.key, body: bankPayout(overrides) });
}

async function payout(merchant: Merchant, id: string) {
  return (await call('GET', `/v1/payouts/${id}`, { key: merchant.key })).body;
}

const reasons = (p: { status_timeline: { reason_code: string }[] }) =>
  p.status_timeline.map((t) => t.reason_code);

describe('payee name check', () => {
  it('checks the name at creation and shows the verdict on the payout and its first timeline row', async () => {
    expect(accountHolderName('NG', '058', MATCHING)).to.equal('ADAEZE OKONKWO');
    const merchant = await merchantWithPolicy('allow');
    const res = await create(merchant, {
      destination_account_unique: MATCHING,
      destination_account_name: 'Okonkwo, Adaeze',
    });
    expect(res.status, res.text).to.equal(201);
    expect(res.body.payee_name_check).to.include({ result: 'MATCH', institution_name: null });
    expect(res.body.payee_name_check.checked_at).to.be.a('string');
    expect(res.body.status_timeline[0].reason_detail).to.deep.equal({ payee_name_check: 'MATCH' });
  });

  it("gives the institution's name with a CLOSE_MATCH, as Confirmation of Payee does", async () => {
    const merchant = await merchantWithPolicy('hold');
    const res = await create(merchant, {
      destination_account_unique: MATCHING,
      destination_account_name: 'Adaze Okonkwo',
    });
    expect(res.status, res.text).to.equal(201);
    expect(res.body.payee_name_check).to.include({
      result: 'CLOSE_MATCH',
      institution_name: 'ADAEZE OKONKWO',
    });
    await runInstructionsOnce(deps());
    expect((await payout(merchant, res.body.id)).status).to.equal('PENDING_PAYMENT');
  });

  it('pays a NO_MATCH under the default policy, allow, without showing the institution’s name', async () => {
    const merchant = await merchantWithPolicy('allow');
    const res = await create(merchant, { destination_account_unique: OTHER });
    expect(res.status, res.text).to.equal(201);
    expect(res.body.payee_name_check).to.include({ result: 'NO_MATCH', institution_name: null });
    await runInstructionsOnce(deps());
    expect((await payout(merchant, res.body.id)).status).to.equal('PENDING_PAYMENT');
  });

  it('refuses a NO_MATCH at creation under refuse: PAYEE_NAME_MISMATCH, and nothing is created', async () => {
    const merchant = await merchantWithPolicy('refuse');
    const res = await create(merchant, {
      destination_account_unique: OTHER,
      merchant_reference: 'refused-name',
    });
    expect(res.status).to.equal(422);
    expect(errorOf(res)).to.include({ code: 'PAYEE_NAME_MISMATCH' });
    expect(errorOf(res).details).to.deep.equal([
      {
        field: 'destination_account_name',
        issue: 'does not match the name the institution holds for this account (NO_MATCH)',
      },
    ]);
    expect(await deps().orm.em.fork().count(Payout, { tenant: merchant.tenantId })).to.equal(0);
    // A matching name passes the same policy.
    expect((await create(merchant, { destination_account_unique: MATCHING })).status).to.equal(201);
  });

  describe('under hold', () => {
    let merchant: Merchant;
    before(async () => {
      merchant = await merchantWithPolicy('hold');
    });

    async function heldPayout(): Promise<string> {
      const res = await create(merchant, { destination_account_unique: OTHER });
      expect(res.status, res.text).to.equal(201);
      await runInstructionsOnce(deps());
      const p = await payout(merchant, res.body.id);
      expect(p.status).to.equal('CREATED');
      expect(p.payment_instruction).to.equal(null);
      expect(reasons(p)).to.deep.equal(['PAYOUT_CREATED', 'PAYEE_NAME_HELD']);
      return res.body.id;
    }

    it('holds a NO_MATCH before any instruction, in the queue PAYOUTS_HELD_PAYEE_NAME', async () => {
      const id = await heldPayout();
      const held = await cliAs()('payee', 'held', '--limit', '100');
      const row = held.data.find((r: { payout_id: string }) => r.payout_id === id);
      expect(row).to.include({
        tenant_id: merchant.tenantId,
        given_name: 'ADAEZE OKONKWO',
        institution_name: accountHolderName('NG', '058', OTHER),
        check: 'NO_MATCH',
      });
      const queues = (await trpcCall('admin.exceptions', 'query', undefined, harness().adminToken)).body
        .result.data;
      const queue = queues.queues.find((q: { code: string }) => q.code === 'PAYOUTS_HELD_PAYEE_NAME');
      expect(queue.count).to.be.greaterThan(0);
      // Another pass of the job leaves it alone: it waits for an operator.
      await runInstructionsOnce(deps());
      expect((await payout(merchant, id)).status).to.equal('CREATED');
    });

    it('an approved acceptance sends it on to its instruction, and the name is not held again', async () => {
      const id = await heldPayout();
      const result = await approvedMove('payee', 'accept', id);
      expect(result.payout).to.include({ id, status: 'CREATED', payee_name_check: 'NO_MATCH' });
      await runInstructionsOnce(deps());
      const p = await payout(merchant, id);
      expect(p.status).to.equal('PENDING_PAYMENT');
      expect(reasons(p)).to.deep.equal([
        'PAYOUT_CREATED',
        'PAYEE_NAME_HELD',
        'PAYEE_NAME_ACCEPTED',
        'INSTRUCTION_GENERATED',
      ]);
      expect(p.status_timeline[2].triggered_by).to.equal('ADMIN');
    });

    it('an approved failure fails it with nothing to refund', async () => {
      const id = await heldPayout();
      await approvedMove('payout', 'fail', id);
      const p = await payout(merchant, id);
      expect(p).to.include({ status: 'FAILED', is_refunded: false });
      expect(reasons(p)).to.deep.equal(['PAYOUT_CREATED', 'PAYEE_NAME_HELD', 'PAYEE_NAME_REJECTED']);
      expect(p.status_timeline[2].reason_detail).to.deep.equal({ payee_name_check: 'NO_MATCH' });
    });

    it('refuses to propose accepting a payout that is not held', async () => {
      const res = await create(merchant, { destination_account_unique: MATCHING });
      const err = await cliAs()('payee', 'accept', res.body.id, '--note', 'not held').catch(
        (e: unknown) => e,
      );
      expect((err as { data?: { app_code?: string } }).data?.app_code).to.equal('VALIDATION_FAILED');
    });
  });

  it('answers at once from what the directory already knows, without asking again', async () => {
    let asked = 0;
    const known = {
      ...deps(),
      providers: {
        ...deps().providers,
        directory: {
          ...deps().providers.directory,
          nameEnquiry: async () => {
            asked++;
            return { accountName: 'SOMEONE ELSE' };
          },
          knownName: () => ({ accountName: 'ADAEZE OKONKWO' }),
        },
      },
    };
    const subject = {
      destinationType: 'BANK_ACCOUNT',
      currency: 'NGN',
      accountNumber: MATCHING,
      providerCode: '058',
    } as const;
    const close = await checkPayeeAtCreate(known, { ...subject, accountName: 'Adaze Okonkwo' });
    expect(close).to.deep.include({ check: 'CLOSE_MATCH', institutionName: 'ADAEZE OKONKWO' });
    expect(close?.checkedAt).to.be.instanceOf(Date);
    const none = await checkPayeeAtCreate(known, { ...subject, accountName: 'Chinedu Eze' });
    expect(none).to.deep.include({ check: 'NO_MATCH', institutionName: 'ADAEZE OKONKWO' });
    // The same pair again: the same verdict.
    expect(await checkPayeeAtCreate(known, { ...subject, accountName: 'Adaze Okonkwo' })).to.deep.include({
      check: 'CLOSE_MATCH',
    });
    expect(asked).to.equal(0);
  });

  describe('when the institution is slow', () => {
    it('answers the create with the check PENDING rather than waiting', async () => {
      const slow = {
        ...deps(),
        config: { ...deps().config, PAYEE_CHECK_WAIT_MS: 20 },
        providers: {
          ...deps().providers,
          directory: {
            ...deps().providers.directory,
            nameEnquiry: () =>
              new Promise<{ accountName: string }>((r) => setTimeout(() => r({ accountName: 'X' }), 500)),
            // Nothing at hand: the institution must be asked.
            knownName: () => undefined,
          },
        },
      };
      const started = Date.now();
      const check = await checkPayeeAtCreate(slow, {
        destinationType: 'BANK_ACCOUNT',
        currency: 'NGN',
        accountNumber: MATCHING,
        providerCode: '058',
        accountName: 'ADAEZE OKONKWO',
      });
      expect(check).to.deep.equal({ check: 'PENDING', institutionName: null, checkedAt: null });
      expect(Date.now() - started).to.be.lessThan(400);
    });

    for (const [policy, end, reason] of [
      ['hold', 'CREATED', 'PAYEE_NAME_HELD'],
      ['refuse', 'FAILED', 'PAYEE_NAME_MISMATCH'],
      ['allow', 'PENDING_PAYMENT', 'INSTRUCTION_GENERATED'],
    ] as const) {
      it(`completes a PENDING check before the instruction: a NO_MATCH under ${policy} ends ${end}`, async () => {
        const merchant = await merchantWithPolicy(policy);
        const id = newId();
        await insertNewPayout(
          deps().sql,
          {
            id,
            tenantId: merchant.tenantId,
            merchantReference: `pending-${policy}`,
            notificationUrl: null,
            destinationType: 'BANK_ACCOUNT',
            destinationCountry: 'NG',
            destinationCurrency: 'NGN',
            destinationAmount: toDecimal('150000'),
            destinationAccountUnique: OTHER,
            destinationProviderName: 'Guaranty Trust Bank',
            destinationProviderCode: '058',
            destinationAccountName: 'ADAEZE OKONKWO',
            settlementCurrency: 'USDT',
            settlementNetwork: 'TRON',
            quoteId: null,
            metadata: {},
            payee: { check: 'PENDING', institutionName: null, checkedAt: null },
          },
          { now: deps().clock.now() },
        );
        expect((await payout(merchant, id)).payee_name_check).to.deep.equal({
          result: 'PENDING',
          institution_name: null,
          checked_at: null,
        });
        await runInstructionsOnce(deps());
        const p = await payout(merchant, id);
        expect(p.payee_name_check.result).to.equal('NO_MATCH');
        expect(p.status).to.equal(end);
        expect(reasons(p)).to.deep.equal(['PAYOUT_CREATED', reason]);
      });
    }
  });
});
