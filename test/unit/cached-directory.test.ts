import { expect } from 'chai';
import type { Institution } from '#src/corridors/corridors.ts';
import { ManualClock } from '#src/lib/clock.ts';
import { cachedDirectory } from '#src/providers/cached-directory.ts';
import type { DirectoryProvider } from '#src/providers/providers.ts';

const ENQUIRY = {
  destinationType: 'BANK_ACCOUNT',
  currency: 'NGN',
  accountNumber: '0123456203',
  providerCode: '058',
} as const;
const LIST = { country: 'NG', currency: 'NGN', destinationType: 'BANK_ACCOUNT' } as const;
const GTBANK = { provider_code: '058', provider_name: 'Guaranty Trust Bank' } as unknown as Institution;

/** A directory that counts what it is asked. */
function countingDirectory(answer: { accountName: string } | null) {
  const asked = { names: 0, lists: 0 };
  const directory: DirectoryProvider = {
    async nameEnquiry() {
      asked.names++;
      return answer;
    },
    async listInstitutions() {
      asked.lists++;
      return [GTBANK];
    },
  };
  return { directory, asked };
}

describe('the cached directory', () => {
  it('knows a name only once it was asked, and only while the entry is fresh', async () => {
    const clock = new ManualClock();
    const { directory, asked } = countingDirectory({ accountName: 'ADAEZE OKONKWO' });
    const cached = cachedDirectory(directory, { nameEnquiryTtlMs: 1000, clock });
    expect(cached.knownName?.(ENQUIRY)).to.equal(undefined);
    expect(await cached.nameEnquiry(ENQUIRY)).to.deep.equal({ accountName: 'ADAEZE OKONKWO' });
    expect(cached.knownName?.(ENQUIRY)).to.deep.equal({ accountName: 'ADAEZE OKONKWO' });
    expect(cached.knownName?.({ ...ENQUIRY, accountNumber: '0123456204' })).to.equal(undefined);
    clock.advance(1000);
    expect(cached.knownName?.(ENQUIRY)).to.equal(undefined);
    expect(asked.names).to.equal(1);
  });

  it('knows "no such account" as null, distinct from not knowing', async () => {
    const { directory } = countingDirectory(null);
    const cached = cachedDirectory(directory, { nameEnquiryTtlMs: 1000, clock: new ManualClock() });
    await cached.nameEnquiry(ENQUIRY);
    expect(cached.knownName?.(ENQUIRY)).to.equal(null);
  });

  it('knows nothing when names are not cached (a TTL of 0)', async () => {
    const { directory } = countingDirectory({ accountName: 'ADAEZE OKONKWO' });
    const cached = cachedDirectory(directory, { nameEnquiryTtlMs: 0, clock: new ManualClock() });
    await cached.nameEnquiry(ENQUIRY);
    expect(cached.knownName?.(ENQUIRY)).to.equal(undefined);
  });

  it("knows a corridor's institutions for a minute after they were listed", async () => {
    const clock = new ManualClock();
    const { directory, asked } = countingDirectory(null);
    const cached = cachedDirectory(directory, { nameEnquiryTtlMs: 1000, clock });
    expect(cached.knownInstitutions?.(LIST)).to.equal(undefined);
    await cached.listInstitutions(LIST);
    expect(cached.knownInstitutions?.(LIST)).to.deep.equal([GTBANK]);
    clock.advance(59_999);
    expect(cached.knownInstitutions?.(LIST)).to.deep.equal([GTBANK]);
    clock.advance(1);
    expect(cached.knownInstitutions?.(LIST)).to.equal(undefined);
    expect(asked.lists).to.equal(1);
  });
});
