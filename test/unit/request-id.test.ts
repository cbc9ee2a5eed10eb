import { expect } from 'chai';
import { newRequestId } from '#src/lib/ids.ts';

describe('newRequestId', () => {
  it('is req_ and 32 hex digits: the millisecond, then 80 random bits, never twice', () => {
    const before = Date.now();
    const ids = Array.from({ length: 10_000 }, () => newRequestId());
    const after = Date.now();
    for (const id of ids) expect(id).to.match(/^req_[0-9a-f]{32}$/);
    expect(new Set(ids).size).to.equal(ids.length);
    const times = ids.map((id) => Number.parseInt(id.slice(4, 16), 16));
    expect(times[0]).to.be.within(before, after);
    expect(times.at(-1)).to.be.within(before, after);
    for (let i = 1; i < times.length; i++) expect(times[i]).to.be.at.least(times[i - 1]!);
  });
});
