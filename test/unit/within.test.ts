import { expect } from 'chai';
import { within } from '#src/lib/within.ts';

describe('within (a bounded wait)', () => {
  it('gives the work’s value when it settles in time', async () => {
    expect(await within(Promise.resolve(7), 1000)).to.deep.equal({ late: false, value: 7 });
  });

  it('says late when the time runs out first', async () => {
    expect(await within(new Promise(() => {}), 5)).to.deep.equal({ late: true });
  });

  it('rejects when the work fails in time', async () => {
    const failing = within(Promise.reject(new Error('boom')), 1000);
    await failing.then(
      () => expect.fail('should reject'),
      (err: Error) => expect(err.message).to.equal('boom'),
    );
  });
});
