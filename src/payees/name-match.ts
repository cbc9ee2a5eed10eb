/**
 * The payee name check's matcher (Confirmation of Payee in the UK, Verification of Payee in the
 * EU): the name a merchant gave against the name the institution holds. Pure: no I/O, no clock.
 *
 * Case, diacritics, punctuation, word order, titles ("Mr", "Alhaji"), company suffixes ("Ltd",
 * "Limited") and generational suffixes ("Jnr") never make names differ; an initial stands for any
 * word with that first letter. A small spelling difference, or a word the merchant left out (a
 * middle name), is a CLOSE_MATCH; anything else is a NO_MATCH.
 */

export const PAYEE_VERDICTS = ['MATCH', 'CLOSE_MATCH', 'NO_MATCH'] as const;
export type PayeeVerdict = (typeof PAYEE_VERDICTS)[number];

/**
 * A payout's check as stored: a verdict, PENDING while the institution has not answered, or
 * UNAVAILABLE when it could not answer before the instruction was due.
 */
export const PAYEE_CHECKS = ['PENDING', ...PAYEE_VERDICTS, 'UNAVAILABLE'] as const;
export type PayeeCheck = (typeof PAYEE_CHECKS)[number];

/** What a tenant does with a NO_MATCH: pay anyway, hold it for an operator, or refuse it. */
export const PAYEE_POLICIES = ['allow', 'hold', 'refuse'] as const;
export type PayeePolicy = (typeof PAYEE_POLICIES)[number];

/** Words that say nothing about who holds the account. */
const IGNORED = new Set([
  'mr',
  'mrs',
  'ms',
  'miss',
  'mx',
  'dr',
  'prof',
  'sir',
  'madam',
  'chief',
  'alhaji',
  'alhaja',
  'engr',
  'rev',
  'pastor',
  'jr',
  'jnr',
  'sr',
  'snr',
  'ltd',
  'limited',
  'plc',
  'inc',
  'llc',
  'co',
]);

/** Letters that Unicode's decomposition leaves whole. */
const FOLDED: Record<string, string> = { ß: 'ss', æ: 'ae', œ: 'oe', ø: 'o', đ: 'd', ł: 'l', þ: 'th', ı: 'i' };

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** A name as lower-case ASCII-ish words, apostrophes dropped, other punctuation a word break. */
export function nameWords(name: string): string[] {
  // Printable ASCII (most names) has nothing to decompose or fold: its letters and digits are a-z
  // and 0-9 once lower-cased, the same words the Unicode path gives, for a fraction of its cost.
  const ascii = PRINTABLE_ASCII.test(name);
  const folded = ascii
    ? name.toLowerCase().replace(/['`]/g, '')
    : name
        .normalize('NFKD')
        .replace(/\p{M}/gu, '')
        .toLowerCase()
        .replace(/[ßæœøđłþı]/g, (c) => FOLDED[c] ?? c)
        .replace(/['’`]/g, '');
  const words = folded.split(ascii ? /[^a-z0-9]+/ : /[^\p{L}\p{N}]+/u).filter((w) => w.length > 0);
  const kept = words.filter((w) => !IGNORED.has(w));
  return kept.length > 0 ? kept : words;
}

/** Rows of the distance table, reused across calls (grown when a longer word comes). */
let table = new Int32Array(0);

/** Damerau-Levenshtein distance (adjacent swaps count once), for short words. */
function distance(a: string, b: string): number {
  const width = b.length + 1;
  const size = (a.length + 1) * width;
  if (table.length < size) table = new Int32Array(Math.max(size, 256));
  const d = table;
  for (let j = 0; j <= b.length; j++) d[j] = j;
  for (let i = 1; i <= a.length; i++) {
    const row = i * width;
    d[row] = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[row - width + j]! + 1, d[row + j - 1]! + 1, d[row - width + j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[row - 2 * width + j - 2]! + 1);
      d[row + j] = best;
    }
  }
  return d[a.length * width + b.length]!;
}

/** How many spelling differences a word of this length may have and still be "close". */
const tolerance = (length: number): number => (length >= 8 ? 2 : length >= 3 ? 1 : 0);

type Pairing = 'exact' | 'initial' | 'close';

function pairing(a: string, b: string): Pairing | null {
  if (a === b) return 'exact';
  if ((a.length === 1 && b.startsWith(a)) || (b.length === 1 && a.startsWith(b))) return 'initial';
  if (a.length < 2 || b.length < 2) return null;
  const allowed = tolerance(Math.min(a.length, b.length));
  // The distance is at least the difference in length: no need to work it out past that.
  if (Math.abs(a.length - b.length) > allowed) return null;
  if (distance(a, b) <= allowed) return 'close';
  return null;
}

/**
 * Pairs each given word with a distinct held word, best kinds first (exact, then initials, then
 * close spellings), so that word order never matters.
 */
function pairWords(given: string[], held: string[]) {
  const freeGiven = new Set(given.keys());
  const freeHeld = new Set(held.keys());
  // Each pair's kind worked out once (a distance is the costly part), then taken best kinds first.
  const kindOf = given.map((a) => held.map((b) => pairing(a, b)));
  const kinds: Pairing[] = [];
  for (const kind of ['exact', 'initial', 'close'] as const) {
    for (const i of [...freeGiven]) {
      for (const j of freeHeld) {
        if (kindOf[i]![j] === kind) {
          kinds.push(kind);
          freeGiven.delete(i);
          freeHeld.delete(j);
          break;
        }
      }
    }
  }
  return { kinds, givenLeft: [...freeGiven].map((i) => given[i]!), heldLeft: freeHeld.size };
}

/** The verdict on `given` (the merchant's name for the payee) against `held` (the institution's). */
export function matchPayeeName(given: string, held: string): PayeeVerdict {
  const a = nameWords(given);
  const b = nameWords(held);
  if (a.length === 0 || b.length === 0) return 'NO_MATCH';
  // "MacDonald" and "Mac Donald": the same letters, split differently.
  if (a.join('') === b.join('') || [...a].sort().join(' ') === [...b].sort().join(' ')) return 'MATCH';
  const { kinds, givenLeft, heldLeft } = pairWords(a, b);
  const fullWords = kinds.filter((k) => k !== 'initial').length;
  if (fullWords === 0) return 'NO_MATCH';
  if (givenLeft.length === 0 && heldLeft === 0) return kinds.includes('close') ? 'CLOSE_MATCH' : 'MATCH';
  // A middle name left out, or one initial the institution does not hold: close, when two words agree.
  const leftOver = givenLeft.length === 0 || (givenLeft.length === 1 && givenLeft[0]!.length === 1);
  if (kinds.length >= 2 && leftOver) return 'CLOSE_MATCH';
  return 'NO_MATCH';
}
