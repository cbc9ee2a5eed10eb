import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import fc from 'fast-check';
import {
  type AccountFormat,
  accountFormatIssue,
  Corridors,
  canonicalMobile,
  checkAccount,
  DEFAULT_CORRIDORS_FILE,
  NETWORKS,
  writtenPattern,
} from '#src/corridors/corridors.ts';

const corridors = Corridors.load();
const doc = readFileSync(new URL('../../docs/account-formats.md', import.meta.url), 'utf8');

/** Every account format of the corridors file, named as the doc names it. */
function everyFormat(): { label: string; format: AccountFormat }[] {
  const found: { label: string; format: AccountFormat }[] = [];
  for (const corridor of corridors.data.corridors) {
    for (const type of corridor.destination_types) {
      for (const network of type === 'CRYPTO_WALLET' ? NETWORKS : [null]) {
        const format = corridors.accountFormat(corridor, type, network);
        if (!format) throw new Error(`${corridor.country}/${type} has no account format`);
        found.push({ label: `${corridor.country} ${type}${network ? ` ${network}` : ''}`, format });
      }
    }
  }
  return found;
}

/** The example with its last four characters replaced, as docs/account-formats.md tells merchants. */
const ending = (format: AccountFormat, suffix: string) => `${format.example.slice(0, -4)}${suffix}`;

describe('account formats of the corridors file', () => {
  it('gives every destination type of every corridor a format whose example fits', () => {
    for (const { label, format } of everyFormat()) {
      expect(format.pattern.test(format.example), label).to.equal(true);
      expect(format.pattern.source, label).to.match(/^\^.*\$$/);
    }
  });

  it('stops the start when a format is unanchored, does not compile, misses its example or is missing', () => {
    /** Loading the shipped file with one change to its NG corridor. */
    const withNg = (change: (ng: Record<string, any>) => void) => {
      const raw = JSON.parse(readFileSync(DEFAULT_CORRIDORS_FILE, 'utf8'));
      change(raw.corridors.find((c: { country: string }) => c.country === 'NG'));
      return () => new Corridors(raw);
    };
    expect(withNg((ng) => (ng.account_formats.BANK_ACCOUNT.pattern = '[0-9]{10}'))).to.throw(/anchored/);
    expect(withNg((ng) => (ng.account_formats.BANK_ACCOUNT.pattern = '^[0-9{10}$'))).to.throw(/compile/);
    expect(withNg((ng) => (ng.account_formats.BANK_ACCOUNT.example = '12345'))).to.throw(/does not fit/);
    expect(withNg((ng) => delete ng.account_formats.MOBILE_MONEY)).to.throw(/account format/);
  });

  it('refuses what a hostile or careless client sends, everywhere', () => {
    const hostile = [
      '',
      '<script>alert(1)</script>',
      "' OR 1=1 --",
      '０１２３４５６７８９',
      '0123456789\n',
      '01234\u000056789',
      '+234 803 123 456',
    ];
    for (const { label, format } of everyFormat()) {
      for (const account of hostile) {
        const issue = accountFormatIssue(format, account);
        expect(issue, `${label}: ${JSON.stringify(account)}`).to.be.a('string');
        expect(issue!.startsWith(`must be ${format.description}, `), label).to.equal(true);
        expect(issue, label).to.include(format.example);
      }
    }
  });

  it('still has an identifier for every sandbox magic value in every corridor and destination type', () => {
    for (const corridor of corridors.data.corridors) {
      for (const type of corridor.destination_types) {
        const formats = (type === 'CRYPTO_WALLET' ? NETWORKS : [null]).map(
          (network) => corridors.accountFormat(corridor, type, network) as AccountFormat,
        );
        for (const suffix of ['0000', '1001', '1002', '1003', '1004', '9999']) {
          const fits = formats.some((f) => f.pattern.test(ending(f, suffix)));
          expect(fits, `${corridor.country}/${type} ending ${suffix}`).to.equal(true);
        }
      }
    }
    // Refunds fail on 9999 or dead: a refund destination can end so on either network.
    for (const network of NETWORKS) {
      const format = corridors.addressFormat(network);
      expect(format.pattern.test(ending(format, '9999')), network).to.equal(true);
      expect(format.pattern.test(ending(format, 'dead')), network).to.equal(true);
    }
  });

  it('are the ones docs/account-formats.md lists, with their examples and magic endings', () => {
    for (const { label, format } of everyFormat()) {
      expect(doc, label).to.include(`| ${format.description} | \`${format.example}\` |`);
      if (format.pattern.test(ending(format, '1001'))) {
        for (const suffix of ['0000', '1001', '1004', '9999']) {
          expect(doc, `${label} ${suffix}`).to.include(`\`${ending(format, suffix)}\``);
        }
      }
    }
  });
});

/** Every mobile-money format of the corridors file, with its corridor's country. */
function mobileFormats(): { country: string; format: AccountFormat }[] {
  return corridors.data.corridors.flatMap((c) => {
    const format = c.destination_types.includes('MOBILE_MONEY')
      ? corridors.accountFormat(c, 'MOBILE_MONEY', null)
      : undefined;
    return format ? [{ country: c.country, format }] : [];
  });
}

describe('mobile numbers as people write them, per corridor', () => {
  it('covers every corridor that pays mobile money, each saying how its numbers are written', () => {
    expect(mobileFormats().map((m) => m.country)).to.deep.equal(['NG', 'KE', 'GH']);
    for (const { country, format } of mobileFormats()) expect(format.mobile, country).to.not.equal(undefined);
  });

  // Per corridor: its example's national number and calling code, and numbers it must refuse.
  const table: Record<string, { code: string; national: string; refused: string[] }> = {
    NG: {
      code: '234',
      national: '8031234567',
      refused: [
        '+254712345678',
        '+234803123456',
        '+23480312345678',
        '08231234567',
        '8031234567',
        '0803123456',
      ],
    },
    KE: {
      code: '254',
      national: '712345678',
      refused: ['+2348031234567', '+25471234567', '0201234567', '712345678', '+2540712345678', '0712345678x'],
    },
    GH: {
      code: '233',
      national: '241234567',
      refused: [
        '+254712345678',
        '+23324123456',
        '0341234567',
        '241234567',
        '0241 234 567 8',
        '+233-(0)24-123-4567',
      ],
    },
  };

  for (const [country, { code, national, refused }] of Object.entries(table)) {
    it(`${country}: every common spelling comes to E.164 +${code}${national}`, () => {
      const format = mobileFormats().find((m) => m.country === country)!.format;
      const e164 = `+${code}${national}`;
      expect(format.example).to.equal(e164);
      const grouped = `${national.slice(0, 3)} ${national.slice(3, 6)} ${national.slice(6)}`;
      const spellings = [
        e164,
        `${code}${national}`,
        `00${code}${national}`,
        `0${national}`,
        `+${code} ${grouped}`,
        `${code} ${grouped}`,
        `0${grouped}`,
        `0${grouped.replaceAll(' ', '-')}`,
        `+${code}-${grouped.replaceAll(' ', '-')}`,
        `00 ${code} ${grouped}`,
        `(0${national.slice(0, 3)}) ${national.slice(3)}`,
        `0${national.slice(0, 3)}.${national.slice(3, 6)}.${national.slice(6)}`,
      ];
      for (const written of spellings) {
        expect(canonicalMobile(format.mobile!, written), written).to.equal(e164);
        expect(checkAccount(format, written), written).to.deep.equal({ account: e164, issue: null });
      }
    });

    it(`${country}: refuses what is not one of its mobile numbers, showing the accepted forms`, () => {
      const format = mobileFormats().find((m) => m.country === country)!.format;
      const e164 = `+${code}${national}`;
      for (const written of refused) {
        const { issue } = checkAccount(format, written);
        expect(issue, written).to.equal(
          `must be ${format.description}, written ${e164}, ${code}${national}, 00${code}${national} or 0${national}; ` +
            'spaces and dashes are allowed',
        );
      }
    });
  }

  it('keeps the last four digits, so the sandbox’s magic endings work in any spelling', () => {
    for (const { format } of mobileFormats()) {
      const national = `0${format.example.slice(1 + format.mobile!.countryCode.length, -4)}1001`;
      expect(checkAccount(format, national).account).to.equal(`${format.example.slice(0, -4)}1001`);
    }
  });

  it('stops the start when a mobile format has no numbering, or its spellings do not come to its example', () => {
    const withKe = (change: (ke: Record<string, any>) => void) => {
      const raw = JSON.parse(readFileSync(DEFAULT_CORRIDORS_FILE, 'utf8'));
      change(raw.corridors.find((c: { country: string }) => c.country === 'KE'));
      return () => new Corridors(raw);
    };
    expect(withKe((ke) => delete ke.account_formats.MOBILE_MONEY.mobile)).to.throw(
      /how its numbers are written/,
    );
    expect(withKe((ke) => (ke.account_formats.MOBILE_MONEY.mobile.country_code = '255'))).to.throw(
      /does not come to the example/,
    );
    expect(withKe((ke) => (ke.account_formats.MOBILE_MONEY.mobile.country_code = '+254'))).to.throw(
      /calling code without \+/,
    );
  });
});

describe('the pattern of every spelling, as the OpenAPI document states it', () => {
  it('gives bank accounts and addresses their own pattern', () => {
    for (const { label, format } of everyFormat().filter((f) => !f.format.mobile))
      expect(writtenPattern(format), label).to.equal(format.pattern.source);
  });

  for (const { country, format } of mobileFormats()) {
    it(`${country}: accepts exactly what the server accepts, spelling by spelling`, () => {
      const written = new RegExp(writtenPattern(format), 'u');
      const accepts = (s: string) => checkAccount(format, s.trim()).issue === null;
      const { countryCode, trunkPrefix } = format.mobile!;
      const national = format.example.slice(1 + countryCode.length);
      // Pieces a number is written with, right ones and wrong ones, separators between any two.
      const piece = fc.oneof(
        fc.constantFrom('+', '00', '0', countryCode, trunkPrefix, national, national.slice(0, 4), '1', '7'),
        fc.stringMatching(/^[0-9]{1,3}$/),
      );
      const separator = fc.constantFrom('', '', '', ' ', '-', '.', '(', ')', '  ', 'x', '/');
      const pieces = fc
        .array(fc.tuple(separator, piece), { minLength: 1, maxLength: 6 })
        .map((parts) => parts.map(([s, p]) => s + p).join(''));
      // A prefix and a national number, right or nearly, with separators cut in anywhere.
      const nearly = fc
        .record({
          prefix: fc.constantFrom(
            `+${countryCode}`,
            countryCode,
            `00${countryCode}`,
            trunkPrefix,
            '',
            '+',
            `0${countryCode}`,
            '+0',
          ),
          number: fc.constantFrom(
            national,
            national,
            national.slice(1),
            `${national}5`,
            `9${national.slice(1)}`,
          ),
          cuts: fc.array(fc.tuple(fc.nat(20), separator), { maxLength: 4 }),
        })
        .map(({ prefix, number, cuts }) => {
          let s = prefix + number;
          for (const [at, sep] of cuts) {
            const i = at % (s.length + 1);
            s = s.slice(0, i) + sep + s.slice(i);
          }
          return s;
        });
      const spelling = fc.oneof(pieces, nearly);
      let accepted = 0;
      fc.assert(
        fc.property(spelling, (s) => {
          expect(written.test(s), s).to.equal(accepts(s));
          if (accepts(s)) accepted++;
        }),
        { numRuns: 3000, seed: 20_261_128 },
      );
      // The walk must reach both sides of the line, or it shows nothing.
      expect(accepted, 'spellings accepted').to.be.greaterThan(50);
      for (const s of [format.example, `0${national}`, `00 ${countryCode} ${national}`, `(0${national})`])
        expect(written.test(s), s).to.equal(true);
    });
  }
});
