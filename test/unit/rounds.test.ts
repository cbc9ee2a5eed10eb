import { expect } from 'chai';
import { inRounds } from '#src/lib/rounds.ts';

describe('inRounds', () => {
  /** A round that takes the next of `counts` each time, and the list of rounds run. */
  const rounds = (counts: number[]) => {
    const ran: number[] = [];
    const round = async () => {
      const count = counts[ran.length] ?? 0;
      ran.push(count);
      return count;
    };
    return { ran, round };
  };

  it('runs rounds while they come back full, stops after the first short one, and sums what they took', async () => {
    const { ran, round } = rounds([3, 3, 2, 3]);
    expect(await inRounds({ batch: 3, maxRounds: 10 }, round)).to.equal(8);
    expect(ran).to.deep.equal([3, 3, 2]);
  });

  it('stops after an empty first round', async () => {
    const { ran, round } = rounds([]);
    expect(await inRounds({ batch: 3, maxRounds: 10 }, round)).to.equal(0);
    expect(ran).to.deep.equal([0]);
  });

  it('runs no more than maxRounds rounds, however full they come back', async () => {
    const { ran, round } = rounds([3, 3, 3, 3]);
    expect(await inRounds({ batch: 3, maxRounds: 2 }, round)).to.equal(6);
    expect(ran).to.deep.equal([3, 3]);
  });
});
