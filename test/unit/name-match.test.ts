import { expect } from 'chai';
import { matchPayeeName, nameWords, type PayeeVerdict } from '#src/payees/name-match.ts';

/** [name the merchant gave, name the institution holds, verdict]: pairs as payers type them. */
const PAIRS: readonly [string, string, PayeeVerdict][] = [
  // The same name, written differently: never a NO_MATCH.
  ['ADAEZE OKONKWO', 'ADAEZE OKONKWO', 'MATCH'],
  ['Adaeze Okonkwo', 'ADAEZE OKONKWO', 'MATCH'],
  ['  adaeze   okonkwo ', 'ADAEZE OKONKWO', 'MATCH'],
  ['OKONKWO Adaeze', 'ADAEZE OKONKWO', 'MATCH'],
  ['Okonkwo, Adaeze', 'ADAEZE OKONKWO', 'MATCH'],
  ['Wanjiku Kamau', 'KAMAU WANJIKU', 'MATCH'],
  ['José Álvarez', 'JOSE ALVAREZ', 'MATCH'],
  ['Nguyễn Văn An', 'NGUYEN VAN AN', 'MATCH'],
  ['Zoë Ørsted', 'ZOE ORSTED', 'MATCH'],
  ['Strauß Jürgen', 'JURGEN STRAUSS', 'MATCH'],
  ['Seán O’Brien', 'SEAN OBRIEN', 'MATCH'],
  ["Sean O'Brien", 'SEAN OBRIEN', 'MATCH'],
  ['Mary-Jane Watson', 'MARY JANE WATSON', 'MATCH'],
  ['Angus MacDonald', 'ANGUS MAC DONALD', 'MATCH'],
  ['Mr John Smith', 'JOHN SMITH', 'MATCH'],
  ['Alhaji Ibrahim Musa', 'IBRAHIM MUSA', 'MATCH'],
  ['Chief Emeka Okafor', 'EMEKA OKAFOR', 'MATCH'],
  ['Kwame Mensah Jnr', 'KWAME MENSAH', 'MATCH'],
  ['Acme Trading Ltd', 'ACME TRADING LIMITED', 'MATCH'],
  // Initials stand for a word with that first letter.
  ['A. Okonkwo', 'ADAEZE OKONKWO', 'MATCH'],
  ['A Okonkwo', 'ADAEZE OKONKWO', 'MATCH'],
  ['J. R. R. Tolkien', 'JOHN RONALD REUEL TOLKIEN', 'MATCH'],
  ['Okonkwo A.', 'ADAEZE OKONKWO', 'MATCH'],
  // Close: a spelling difference, a middle name left out, one initial too many.
  ['Adaze Okonkwo', 'ADAEZE OKONKWO', 'CLOSE_MATCH'],
  ['Mohammed Abubakar', 'MUHAMMAD ABUBAKAR', 'CLOSE_MATCH'],
  ['Jon Smith', 'JOHN SMITH', 'CLOSE_MATCH'],
  ['Muller Hans', 'HANS MUELLER', 'CLOSE_MATCH'],
  ['Adaeze Okonkwo', 'ADAEZE CHIOMA OKONKWO', 'CLOSE_MATCH'],
  ['Oluwaseun Adeyemi', 'OLUWASEUN ADEYEMI-BELLO', 'CLOSE_MATCH'],
  ['A Okonkwo', 'ADAEZE CHIOMA OKONKWO', 'CLOSE_MATCH'],
  ['Adaeze N Okonkwo', 'ADAEZE OKONKWO', 'CLOSE_MATCH'],
  // Someone else.
  ['ADAEZE OKONKWO', 'IFEANYI AFOLABI', 'NO_MATCH'],
  ['Adaeze Afolabi', 'ADAEZE OKONKWO', 'NO_MATCH'],
  ['Chinedu', 'CHINEDU OKAFOR', 'NO_MATCH'],
  ['B. Okonkwo', 'ADAEZE OKONKWO', 'NO_MATCH'],
  ['A. O.', 'ADAEZE OKONKWO', 'NO_MATCH'],
  ['Ann Lee', 'ANNA LEEDS', 'NO_MATCH'],
  ['John Smith', 'JANE SMYTHE', 'NO_MATCH'],
  ['Acme Trading Ltd', 'ACME HOLDINGS LTD', 'NO_MATCH'],
  ['', 'ADAEZE OKONKWO', 'NO_MATCH'],
  ['...', 'ADAEZE OKONKWO', 'NO_MATCH'],
];

describe('payee name check: the matcher', () => {
  for (const [given, held, verdict] of PAIRS) {
    it(`${JSON.stringify(given)} against ${JSON.stringify(held)} is ${verdict}`, () => {
      expect(matchPayeeName(given, held)).to.equal(verdict);
    });
  }

  it('gives the same verdict whichever way round two names of the same length are compared', () => {
    for (const [given, held] of PAIRS) {
      if (nameWords(given).length !== nameWords(held).length) continue;
      expect(matchPayeeName(held, given), `${given} / ${held}`).to.equal(matchPayeeName(given, held));
    }
  });

  it('reads a name as words without case, accents, titles or punctuation', () => {
    expect(nameWords("Mrs. Ọlá-Adébáyọ̀ O'Neil")).to.deep.equal(['ola', 'adebayo', 'oneil']);
    // A name made only of ignored words keeps them, so that "Chief" is not nobody.
    expect(nameWords('Chief')).to.deep.equal(['chief']);
  });

  it('reads a printable ASCII name as the Unicode path reads it, whatever its characters', () => {
    // A combining accent at the end sends a name through the Unicode path, which then drops it.
    for (let code = 0x20; code <= 0x7e; code++) {
      const c = String.fromCharCode(code);
      for (const name of [`Ada${c}eze Okonkwo`, `${c}MR ${c}o${c}${c}BRIEN 2${c}`, c, `Jr${c}Chief`]) {
        expect(nameWords(name), JSON.stringify(name)).to.deep.equal(nameWords(`${name}\u0301`));
      }
    }
  });
});
