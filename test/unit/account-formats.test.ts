import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import {
  type AccountFormat,
  accountFormatIssue,
  Corridors,
  DEFAULT_CORRIDORS_FILE,
  NETWORKS,
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
      '+234 803 123 4567',
    ];
    for (const { label, format } of everyFormat()) {
      for (const account of hostile) {
        expect(accountFormatIssue(format, account), `${label}: ${JSON.stringify(account)}`).to.equal(
          `must be ${format.description}, such as ${format.example}`,
        );
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
