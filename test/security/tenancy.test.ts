import { expect } from 'chai';
import { restRoutes } from '#src/http/rest.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import { appRouter } from '#src/router.ts';
import { call, errorOf, type Merchant } from '../client.ts';
import { deps, dispatch, merchantWith, paidPayout, payoutTo } from '../dispatch/fixtures.ts';

/**
 * Cross-tenant reads, generated for every merchant route as the auth checks are
 * (test/security/routes.test.ts): one merchant's payout that was paid, failed at the processor
 * and was refunded, and its quote, give an id for every path parameter; another merchant asks
 * for each and gets 404 with nothing of the first merchant's in the answer, while the owner gets
 * it. A route with a path parameter this table does not know fails the test until it is added.
 */
describe('every merchant route keeps each merchant’s objects to that merchant', () => {
  const routes = restRoutes(appRouter);
  let owner: Merchant;
  let stranger: Merchant;
  let ids: Record<string, string>;

  before(async () => {
    owner = await merchantWith();
    stranger = await merchantWith();
    const payoutId = await paidPayout(owner, payoutTo('1001', 'USDT'));
    const [outflow] = await dispatch(owner, payoutId);
    await runRefundsOnce(deps());
    const refunds = await call('GET', `/v1/payouts/${payoutId}/refunds`, { key: owner.key });
    const refund = refunds.body[0];
    const quote = await call('POST', '/v1/rates/quotes', {
      key: owner.key,
      body: { settlement_currency: 'USDT', destination_currency: 'NGN', destination_amount: 150000 },
    });
    expect(quote.status, quote.text).to.equal(201);
    ids = {
      '/v1/payouts/{id}': payoutId,
      '/v1/payouts/{payout_id}/payment-instruction': payoutId,
      '/v1/payouts/{payout_id}/outflows': payoutId,
      '/v1/payouts/{payout_id}/refunds': payoutId,
      '/v1/payouts/{payout_id}/money-movements': payoutId,
      '/v1/outflows/{id}': outflow.id,
      '/v1/inflows/{id}': refund.inflow_id,
      '/v1/refunds/{id}': refund.id,
      '/v1/rates/quotes/{id}': quote.body.id,
      '/v1/rates/quotes/{id}/accept': quote.body.id,
    };
    for (const [path, id] of Object.entries(ids)) expect(id, path).to.be.a('string');
  });

  const withParameter = routes.filter((r) => r.path.includes('{'));
  const lists = routes.filter((r) => r.method === 'GET' && !r.path.includes('{'));

  it('knows an object for every route with a path parameter', () => {
    expect(withParameter.map((r) => r.path).sort()).to.deep.equal(Object.keys(ids).sort());
  });

  for (const route of withParameter) {
    it(`${route.method} ${route.path}: 404 for another merchant, the object for its own`, async () => {
      const path = route.path.replace(/\{\w+\}/, ids[route.path]!);
      const body = route.method === 'GET' ? undefined : {};
      const theirs = await call(route.method, path, { key: stranger.key, body });
      expect(theirs.status, theirs.text).to.equal(404);
      expect(errorOf(theirs).code).to.match(/_NOT_FOUND$/);
      for (const id of Object.values(ids)) expect(theirs.text).to.not.include(id);
      if (route.method === 'GET') {
        const own = await call(route.method, path, { key: owner.key });
        expect(own.status, own.text).to.equal(200);
      }
    });
  }

  for (const route of lists) {
    it(`${route.method} ${route.path}: nothing of another merchant’s in the list`, async () => {
      const theirs = await call(route.method, route.path, { key: stranger.key });
      if (theirs.status === 200) {
        for (const id of Object.values(ids)) expect(theirs.text).to.not.include(id);
      } else {
        // A list that needs a filter (or a configured webhook) refuses without listing anything.
        expect(theirs.status, theirs.text).to.be.oneOf([400, 404]);
      }
    });
  }

  it('the fixture is real: the owner sees its objects in its lists', async () => {
    const inflows = await call('GET', '/v1/inflows', { key: owner.key });
    expect(inflows.status, inflows.text).to.equal(200);
    expect(inflows.text).to.include(ids['/v1/inflows/{id}']!);
    const refunds = await call('GET', '/v1/refunds', { key: owner.key });
    expect(refunds.text).to.include(ids['/v1/refunds/{id}']!);
  });
});
