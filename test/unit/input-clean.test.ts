import { expect } from 'chai';
import { alreadyClean, controlCharacterIssue, type TextRule, wellFormed } from '#src/http/input.ts';

/** What the full checks say of an input: nothing to replace and nothing refused. */
const fullyClean = (input: unknown, rule: TextRule) =>
  wellFormed(input) === input && controlCharacterIssue(input, rule) === null;

const TEXTS = [
  '',
  'Ada',
  'naïve – ₦ 1,000 😀',
  'a\nb',
  'tab\there',
  'nul\u0000',
  'c1\u0085',
  'del\u007f',
  'lone\ud800',
  '\udc00x',
];

/** Inputs built from every text as value and as key, flat, nested and in arrays. */
function inputs(): unknown[] {
  const out: unknown[] = [null, 1, true, 'x', [], {}];
  for (const t of TEXTS) {
    out.push(
      t,
      [t],
      { v: t },
      { [t]: 1 },
      { a: { b: t } },
      { a: [{ [t]: 'x' }] },
      { a: { b: { c: { d: { e: t } } } } },
    );
  }
  out.push(JSON.parse('{"__proto__": 1}'), JSON.parse('{"metadata": {"__proto__": "x"}}'));
  out.push({
    destination_type: 'BANK_ACCOUNT',
    destination_amount: 50_123,
    destination_account_name: 'ADAEZE OKONKWO',
    metadata: { order: 'A-1', note: 'ok' },
  });
  return out;
}

describe('alreadyClean: the inputs that need nothing from the full checks', () => {
  for (const rule of ['single-line', 'multi-line'] as const) {
    it(`never passes what the full checks would change or refuse (${rule})`, () => {
      for (const input of inputs()) {
        if (alreadyClean(input, rule)) expect(fullyClean(input, rule), JSON.stringify(input)).to.equal(true);
      }
    });
  }

  it('tells every character of the Basic Multilingual Plane as the full checks and Unicode do, as text and as a key', () => {
    for (const rule of ['single-line', 'multi-line'] as const)
      for (let c = 0; c <= 0xffff; c++) {
        const text = `a${String.fromCharCode(c)}b`;
        expect(alreadyClean(text, rule), `U+${c.toString(16)} ${rule}`).to.equal(fullyClean(text, rule));
        // Both against Unicode's own definition of a control character (Cc).
        const refused = rule === 'single-line' ? /\p{Cc}/u : /(?![\t\n\r])\p{Cc}/u;
        expect(fullyClean(text, rule), `Cc U+${c.toString(16)} ${rule}`).to.equal(
          text.isWellFormed() && !refused.test(text),
        );
        expect(alreadyClean({ [text]: 1 }, rule), `key U+${c.toString(16)} ${rule}`).to.equal(
          fullyClean({ [text]: 1 }, rule),
        );
      }
  });

  it('passes the common request: flat fields and a metadata object of plain text', () => {
    const body = {
      destination_type: 'BANK_ACCOUNT',
      destination_amount: 50_123,
      destination_account_name: 'ADAEZE OKONKWO',
      metadata: { order: 'A-1' },
      tags: ['a', 1, null, true],
    };
    expect(alreadyClean(body, 'single-line')).to.equal(true);
  });

  it('leaves to the full checks a line break in a single-line input, not in a multi-line one', () => {
    expect(alreadyClean({ note: 'a\nb' }, 'single-line')).to.equal(false);
    expect(alreadyClean({ note: 'a\nb' }, 'multi-line')).to.equal(true);
  });

  it('leaves inputs nested past its depth to the full checks', () => {
    expect(alreadyClean({ a: { b: { c: { d: { e: 'x' } } } } }, 'single-line')).to.equal(false);
    expect(fullyClean({ a: { b: { c: { d: { e: 'x' } } } } }, 'single-line')).to.equal(true);
  });
});
