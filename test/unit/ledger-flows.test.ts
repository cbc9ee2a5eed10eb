import { expect } from 'chai';
import { ACCOUNT_KINDS, accountName } from '#src/ledger/chart.ts';
import {
  type Flow,
  type FlowFacts,
  flowNamed,
  flowTransaction,
  kindsOf,
  postedFlowNames,
  postingsOf,
  transitionLedger,
} from '#src/ledger/flows.ts';
import { toDecimal } from '#src/lib/money.ts';

/** The ledger's pure parts: account names and flows turned into entries, without a database. */

const TENANT = '0199aaaa-0000-7000-8000-000000000001';
const PAYOUT = '0199aaaa-0000-7000-8000-000000000002';

/** A flow like a payout's success: the destination amount leaves, the fee is kept, nothing else moves. */
const paid: Flow = {
  cause: 'outflow',
  name: 'SUCCEEDED',
  description: 'The processor paid the beneficiary.',
  legs: [
    {
      from: 'payout',
      to: 'beneficiaries',
      amount: 'destination',
      currency: 'destination',
      movement: { type: 'paid_out', on: 'from' },
    },
    { from: ['virtualAccount', 'payout'], to: 'merchant', amount: 'fee', currency: 'settlement' },
    {
      from: 'payout',
      to: 'merchant',
      amount: 'nothing',
      currency: 'settlement',
      movement: { type: 'refunded', on: 'to' },
    },
  ],
};

const facts = (overrides: Partial<FlowFacts> = {}): FlowFacts => ({
  accounts: {
    payout: accountName('payout', { tenant: TENANT, payout: PAYOUT }),
    beneficiaries: accountName('beneficiaries', {}),
    merchant: accountName('merchant', { tenant: TENANT }),
  },
  amounts: { destination: toDecimal('150000.50'), fee: toDecimal('1.25'), nothing: toDecimal(0) },
  currencies: { destination: 'NGN', settlement: 'USDT' },
  ...overrides,
});

const plain = (postings: ReturnType<typeof postingsOf>) =>
  postings.map((p) => [p.account, p.currency, p.amount.toFixed(), p.movement]);

describe('ledger (pure)', () => {
  describe('accountName', () => {
    it('fills the kind’s pattern with its parts', () => {
      expect(accountName('payout', { tenant: 't1', payout: 'p1' })).to.equal('tenants:t1:payouts:p1');
      expect(accountName('depositAddress', { network: 'TRON', address: 'TX1' })).to.equal(
        'collection:crypto:TRON:TX1',
      );
      expect(accountName('beneficiaries', {})).to.equal('world:beneficiaries');
      expect(ACCOUNT_KINDS.payout.group).to.equal('tenant');
    });

    it('refuses a missing, empty or colon-bearing part, naming it', () => {
      expect(() => accountName('payout', { tenant: 't1' } as never)).to.throw(
        'account payout: part payout is undefined',
      );
      expect(() => accountName('payout', { tenant: '', payout: 'p1' })).to.throw(
        'account payout: part tenant is ""',
      );
      expect(() => accountName('merchant', { tenant: 'a:b' })).to.throw(
        'account merchant: part tenant is "a:b"',
      );
    });
  });

  describe('postingsOf', () => {
    it('turns each leg into two entries that cancel, in the leg’s currency, skipping zero legs', () => {
      expect(plain(postingsOf(paid, facts()))).to.deep.equal([
        [`tenants:${TENANT}:payouts:${PAYOUT}`, 'NGN', '-150000.5', 'paid_out'],
        ['world:beneficiaries', 'NGN', '150000.5', null],
        [`tenants:${TENANT}:payouts:${PAYOUT}`, 'USDT', '-1.25', null],
        [`world:merchants:${TENANT}`, 'USDT', '1.25', null],
      ]);
    });

    it('shows a movement on the side the leg names', () => {
      const received: Flow = {
        ...paid,
        legs: [
          {
            from: 'payout',
            to: 'merchant',
            amount: 'fee',
            currency: 'settlement',
            movement: { type: 'refunded', on: 'to' },
          },
        ],
      };
      expect(postingsOf(received, facts()).map((p) => p.movement)).to.deep.equal([null, 'refunded']);
    });

    it('takes the first account the facts name among a leg’s kinds', () => {
      const withVa = facts();
      withVa.accounts.virtualAccount = accountName('virtualAccount', { account_number: '9000000001' });
      expect(postingsOf(paid, withVa)[2]!.account).to.equal('collection:bank:9000000001');
      expect(kindsOf('payout')).to.deep.equal(['payout']);
      expect(kindsOf(['virtualAccount', 'payout'])).to.deep.equal(['virtualAccount', 'payout']);
    });

    it('refuses missing facts, a negative amount and an account nobody named, naming the flow', () => {
      expect(() =>
        postingsOf(paid, facts({ amounts: { fee: toDecimal(1), nothing: toDecimal(0) } })),
      ).to.throw('flow outflow.SUCCEEDED: no destination or destination given');
      expect(() => postingsOf(paid, facts({ currencies: { settlement: 'USDT' } }))).to.throw(
        'flow outflow.SUCCEEDED: no destination or destination given',
      );
      expect(() =>
        postingsOf(
          paid,
          facts({ amounts: { destination: toDecimal('-1'), fee: toDecimal(1), nothing: toDecimal(0) } }),
        ),
      ).to.throw('flow outflow.SUCCEEDED: destination is negative');
      const noPayout = facts();
      delete noPayout.accounts.payout;
      expect(() => postingsOf(paid, noPayout)).to.throw('flow outflow.SUCCEEDED: no account for payout');
      expect(() => postingsOf({ ...paid, legs: [paid.legs[1]!] }, noPayout)).to.throw(
        'flow outflow.SUCCEEDED: no account for virtualAccount or payout',
      );
    });
  });

  describe('flowNamed and flowTransaction', () => {
    it('finds a flow by its cause and name, and refuses one that does not exist', () => {
      const other: Flow = { ...paid, cause: 'refund' };
      expect(flowNamed([other, paid], 'outflow', 'SUCCEEDED')).to.equal(paid);
      expect(flowNamed([paid, other], 'refund', 'SUCCEEDED')).to.equal(other);
      expect(() => flowNamed([paid], 'outflow', 'FAILED')).to.throw('no outflow flow is named FAILED');
      expect(() => flowNamed([paid], 'payout', 'SUCCEEDED')).to.throw('no payout flow is named SUCCEEDED');
    });

    it('builds the ledger transaction of one transition: its cause and its entries', () => {
      const at = new Date('2026-03-01T12:00:00.000Z');
      const tx = flowTransaction(paid, facts(), {
        causeId: PAYOUT,
        transition: 'PROCESSOR_SUCCEEDED (PROCESSING → SUCCESSFUL)',
        tenantId: TENANT,
        payoutId: PAYOUT,
        approvalId: null,
        at,
      });
      expect(tx.cause).to.deep.equal({
        object: 'outflow',
        id: PAYOUT,
        transition: 'PROCESSOR_SUCCEEDED (PROCESSING → SUCCESSFUL)',
      });
      expect(tx).to.include({ tenantId: TENANT, payoutId: PAYOUT, at });
      expect(tx).to.not.have.property('causeId');
      expect(plain(tx.entries)).to.deep.equal(plain(postingsOf(paid, facts())));
    });
  });

  describe('postedFlowNames and transitionLedger', () => {
    const at = new Date('2026-03-01T12:00:00.000Z');
    /** A second flow of the same cause, moving only the fee. */
    const feeOnly: Flow = { ...paid, name: 'FEE_KEPT', legs: [paid.legs[1]!] };
    const post = (flow: string) => ({ type: 'post', params: { flow } });
    const others = [
      { type: 'timeline', params: { reasonCode: 'PAYOUT_SUCCEEDED' } },
      { type: 'emit', params: { event: 'payout.successful' } },
    ];
    /** transitionLedger's arguments, counting how often it asks for the facts. */
    const ledgerOf = (actions: { type: string; params: unknown }[], approvalId?: string | null) => {
      let asked = 0;
      const txs = transitionLedger({
        flows: [paid, feeOnly],
        cause: 'outflow',
        causeId: PAYOUT,
        actions,
        event: 'PROCESSOR_SUCCEEDED',
        from: 'PROCESSING',
        to: 'SUCCESSFUL',
        facts: () => {
          asked++;
          return facts();
        },
        tenantId: TENANT,
        payoutId: PAYOUT,
        at,
        ...(approvalId === undefined ? {} : { approvalId }),
      });
      return { txs, asked };
    };

    it('names the flows of the post actions only, in their order', () => {
      expect(postedFlowNames([others[0]!, post('SUCCEEDED'), others[1]!, post('FEE_KEPT')])).to.deep.equal([
        'SUCCEEDED',
        'FEE_KEPT',
      ]);
      expect(postedFlowNames(others)).to.deep.equal([]);
    });

    it('moves no money, and asks for no facts, when the transition posts nothing', () => {
      expect(ledgerOf(others)).to.deep.equal({ txs: [], asked: 0 });
      expect(ledgerOf([])).to.deep.equal({ txs: [], asked: 0 });
    });

    it('writes one transaction per posted flow, named by the transition, with the facts asked once', () => {
      const { txs, asked } = ledgerOf([post('FEE_KEPT'), ...others, post('SUCCEEDED')]);
      expect(asked).to.equal(1);
      const transition = 'PROCESSOR_SUCCEEDED (PROCESSING → SUCCESSFUL)';
      expect(txs.map((tx) => ({ ...tx, entries: plain(tx.entries) }))).to.deep.equal([
        {
          tenantId: TENANT,
          payoutId: PAYOUT,
          cause: { object: 'outflow', id: PAYOUT, transition },
          at,
          approvalId: null,
          entries: plain(postingsOf(feeOnly, facts())),
        },
        {
          tenantId: TENANT,
          payoutId: PAYOUT,
          cause: { object: 'outflow', id: PAYOUT, transition },
          at,
          approvalId: null,
          entries: plain(postingsOf(paid, facts())),
        },
      ]);
      expect(txs[0]!.entries).to.have.length(2);
    });

    it('records the four-eyes proposal that made the move, and none when there is none', () => {
      expect(ledgerOf([post('SUCCEEDED')], 'approval-1').txs[0]!.approvalId).to.equal('approval-1');
      expect(ledgerOf([post('SUCCEEDED')], null).txs[0]!.approvalId).to.equal(null);
      expect(ledgerOf([post('SUCCEEDED')]).txs[0]!.approvalId).to.equal(null);
    });

    it('refuses a post action that names no flow, or a flow its cause does not have', () => {
      expect(() => ledgerOf([{ type: 'post', params: null }])).to.throw('no outflow flow is named undefined');
      expect(() => ledgerOf([post('REFUNDED')])).to.throw('no outflow flow is named REFUNDED');
    });
  });
});
