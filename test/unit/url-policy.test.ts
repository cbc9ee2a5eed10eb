import { expect } from 'chai';
import {
  type BlockReason,
  blockedAddressReason,
  checkWebhookUrl,
  type HostResolver,
  parseIpv6,
  parseWebhookUrl,
  type UrlPolicyOptions,
} from '#src/webhooks/url-policy.ts';

/** A resolver that answers from a table and records what it was asked. */
function fakeResolver(table: Record<string, string[]>): HostResolver & { asked: string[] } {
  const asked: string[] = [];
  const resolve = async (host: string) => {
    asked.push(host);
    const found = table[host];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return found;
  };
  return Object.assign(resolve, { asked });
}

/** The policy at configuration, with the switches of the sandbox setup unless told otherwise. */
const atConfiguration = (
  resolve: HostResolver,
  allowPrivate = false,
  allowLocalhost = true,
): UrlPolicyOptions => ({ allowPrivate, allowLocalhost, resolve, unresolved: 'accept' });

/** The syntax rules where local test URLs are allowed (the sandbox setup). */
const LOCAL = { allowLocalhost: true };

describe('webhook URL policy', () => {
  describe('syntax', () => {
    it('accepts an https URL and returns its normalised form', () => {
      const parsed = parseWebhookUrl('https://Hooks.Merchant.Example:8443/payouts?source=svc', LOCAL);
      expect(parsed.ok).to.equal(true);
      if (parsed.ok)
        expect(parsed.url.href).to.equal('https://hooks.merchant.example:8443/payouts?source=svc');
    });

    it('accepts plain http only for exactly localhost and 127.0.0.1', () => {
      expect(parseWebhookUrl('http://localhost:8080/hook', LOCAL).ok).to.equal(true);
      expect(parseWebhookUrl('http://127.0.0.1:9000/hook', LOCAL).ok).to.equal(true);
      for (const url of [
        'http://hooks.merchant.example/',
        'http://127.0.0.2/',
        'http://[::1]/',
        'http://localhost./',
        'http://0x7f.1/',
        'http://2130706433/',
        'http://127.1/',
      ]) {
        const parsed = parseWebhookUrl(url, LOCAL);
        expect(parsed, url).to.deep.equal({
          ok: false,
          issue: 'must use https (plain http is allowed only for localhost and 127.0.0.1)',
        });
      }
    });

    const refusals: [string, string][] = [
      ['', 'must not be empty'],
      ['hooks.merchant.example/payouts', 'must be an absolute URL'],
      ['not a url', 'must not contain whitespace'],
      [' https://hooks.merchant.example/', 'must not contain whitespace'],
      ['https://hooks.merchant.example/\t', 'must not contain whitespace'],
      ['ftp://hooks.merchant.example/', 'must use https'],
      ['javascript:alert(1)', 'must use https'],
      ['file:///etc/passwd', 'must use https'],
      ['https://user:pass@hooks.merchant.example/', 'must not contain credentials'],
      ['https://user@hooks.merchant.example/', 'must not contain credentials'],
      ['https://hooks.merchant.example/#frag', 'must not contain a fragment'],
      [`https://hooks.merchant.example/${'a'.repeat(2048)}`, 'must be at most 2048 characters'],
    ];
    for (const [url, issue] of refusals) {
      it(`refuses ${JSON.stringify(url.length > 60 ? `${url.slice(0, 40)}…` : url)}: ${issue}`, () => {
        const parsed = parseWebhookUrl(url, LOCAL);
        expect(parsed.ok).to.equal(false);
        if (!parsed.ok) expect(parsed.issue).to.include(issue);
      });
    }

    it('accepts exactly 2048 characters', () => {
      const prefix = 'https://hooks.merchant.example/';
      const url = prefix + 'a'.repeat(2048 - prefix.length);
      expect(url).to.have.length(2048);
      expect(parseWebhookUrl(url, LOCAL).ok).to.equal(true);
    });
  });

  describe('addresses', () => {
    const table: [string, BlockReason | null][] = [
      ['10.0.0.1', 'private'],
      ['10.255.255.255', 'private'],
      ['172.16.0.1', 'private'],
      ['172.31.255.254', 'private'],
      ['172.32.0.1', null],
      ['172.15.255.255', null],
      ['192.168.1.10', 'private'],
      ['127.0.0.1', 'loopback'],
      ['127.255.0.9', 'loopback'],
      ['169.254.169.254', 'metadata'],
      ['169.254.1.1', 'link-local'],
      ['100.64.0.1', 'cgnat'],
      ['100.127.255.255', 'cgnat'],
      ['100.128.0.1', null],
      ['0.0.0.0', 'unspecified'],
      ['224.0.0.1', 'reserved'],
      ['255.255.255.255', 'reserved'],
      ['8.8.8.8', null],
      ['1.1.1.1', null],
      ['::', 'unspecified'],
      ['::1', 'loopback'],
      ['0:0:0:0:0:0:0:1', 'loopback'],
      ['fc00::1', 'private'],
      ['fd12:3456:789a::1', 'private'],
      ['fe80::1', 'link-local'],
      ['fe80::1%eth0', 'link-local'],
      ['febf::1', 'link-local'],
      ['fd00:ec2::254', 'metadata'],
      ['ff02::1', 'reserved'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:7f00:1', 'loopback'],
      ['::ffff:10.0.0.1', 'private'],
      ['::ffff:a9fe:a9fe', 'metadata'],
      ['::ffff:100.64.0.1', 'cgnat'],
      ['::ffff:8.8.8.8', null],
      ['::10.0.0.1', 'private'],
      ['64:ff9b::a00:1', 'private'],
      ['64:ff9b::808:808', null],
      ['2002:a9fe:a9fe::1', 'metadata'],
      ['2606:4700:4700::1111', null],
      ['2001:4860:4860::8888', null],
    ];
    for (const [address, reason] of table) {
      it(`${address} is ${reason ?? 'public'}`, () => {
        expect(blockedAddressReason(address)).to.equal(reason);
      });
    }

    it('parses every textual IPv6 form to the same bytes', () => {
      const expected = [...(parseIpv6('0:0:0:0:0:ffff:7f00:1') ?? [])];
      expect(expected).to.have.length(16);
      expect([...(parseIpv6('::ffff:127.0.0.1') ?? [])]).to.deep.equal(expected);
      expect([...(parseIpv6('::FFFF:7F00:1') ?? [])]).to.deep.equal(expected);
      expect(parseIpv6('not-an-address')).to.equal(null);
      expect(parseIpv6('1.2.3.4')).to.equal(null);
    });
  });

  describe('the full check', () => {
    it('refuses IP literals in blocked ranges without asking DNS', async () => {
      const resolve = fakeResolver({});
      for (const url of [
        'https://10.0.0.5/hook',
        'https://127.0.0.2/',
        'https://[::1]/',
        'https://169.254.169.254/latest/meta-data/',
        'https://[fd00:ec2::254]/',
        'https://[::ffff:127.0.0.1]/',
        'https://0x7f000002/',
        'https://100.64.0.1/',
        'https://0.0.0.0/',
      ]) {
        const verdict = await checkWebhookUrl(url, atConfiguration(resolve));
        expect(verdict.ok, url).to.equal(false);
        if (!verdict.ok) expect(verdict.issue, url).to.match(/^must not point to /);
      }
      expect(resolve.asked).to.deep.equal([]);
    });

    it('refuses metadata and .localhost names before any lookup', async () => {
      const resolve = fakeResolver({ 'metadata.google.internal': ['8.8.8.8'] });
      for (const url of [
        'https://metadata.google.internal/computeMetadata/v1/',
        'https://METADATA.google.internal./',
        'https://api.localhost/',
      ]) {
        const verdict = await checkWebhookUrl(url, atConfiguration(resolve));
        expect(verdict.ok, url).to.equal(false);
      }
      expect(resolve.asked).to.deep.equal([]);
    });

    it('accepts the literal localhost and 127.0.0.1 of the contract without asking DNS', async () => {
      const resolve = fakeResolver({});
      for (const url of ['http://localhost:8080/hook', 'https://localhost/hook', 'http://127.0.0.1:9000/']) {
        const verdict = await checkWebhookUrl(url, atConfiguration(resolve));
        expect(verdict.ok, url).to.equal(true);
      }
      expect(resolve.asked).to.deep.equal([]);
    });

    it('refuses every other spelling of a loopback or private address, whatever the switches', async () => {
      const resolve = fakeResolver({});
      const spellings = [
        'http://0x7f.1/',
        'http://2130706433/',
        'http://0177.0.0.1/',
        'http://127.1/',
        'http://127.0.0.1./',
        'http://%31%32%37.0.0.1/',
        'http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/',
        'http:0x7f.1/',
        'http:\\\\2130706433\\hook',
        'https://0x7f.1/',
        'https://0x7f000001:5432/',
        'https://017700000001/',
        'https://0x0a.0.0.1/',
        'https://0xc0.0xa8.1/',
        'https://[::ffff:127.0.0.1]/',
        'https://[::ffff:7f00:1]/',
        'https://[0:0:0:0:0:ffff:7f00:1]/',
        'https://[::127.0.0.1]/',
        'https://[::ffff:0a00:1]/',
      ];
      for (const [allowPrivate, allowLocalhost] of [
        [false, true],
        [false, false],
      ] as const) {
        for (const url of spellings) {
          const verdict = await checkWebhookUrl(url, atConfiguration(resolve, allowPrivate, allowLocalhost));
          expect(verdict.ok, `${url} (localhost ${allowLocalhost})`).to.equal(false);
        }
      }
      // Even where private targets are allowed, a disguised address is never accepted.
      for (const url of spellings.slice(0, 14)) {
        const verdict = await checkWebhookUrl(url, atConfiguration(resolve, true, true));
        expect(verdict, url).to.deep.include({ ok: false });
      }
      expect(resolve.asked).to.deep.equal([]);
    });

    it('refuses a public address written other than as four decimal numbers', async () => {
      for (const url of ['https://0x08080808/', 'https://134744072/', 'https://8.8.2056/']) {
        expect(await checkWebhookUrl(url, atConfiguration(fakeResolver({}))), url).to.deep.equal({
          ok: false,
          issue: 'must write an IP address as four decimal numbers, such as 203.0.113.7',
        });
      }
      expect(
        (await checkWebhookUrl('https://8.8.8.8:8443/hook', atConfiguration(fakeResolver({})))).ok,
      ).to.equal(true);
    });

    it('refuses localhost and 127.0.0.1 when the deployment does not allow local test URLs', async () => {
      const resolve = fakeResolver({ localhost: ['127.0.0.1'] });
      for (const url of ['http://localhost:8080/hook', 'http://127.0.0.1:5432/']) {
        expect(await checkWebhookUrl(url, atConfiguration(resolve, false, false)), url).to.deep.equal({
          ok: false,
          issue: 'must use https',
        });
      }
      for (const url of ['https://localhost/hook', 'https://127.0.0.1:5432/']) {
        expect(await checkWebhookUrl(url, atConfiguration(resolve, false, false)), url).to.deep.equal({
          ok: false,
          issue: 'must not point to a loopback address',
        });
      }
      // WEBHOOK_ALLOW_PRIVATE_URLS lifts loopback over https, as for any loopback host; never plain http.
      expect(
        (await checkWebhookUrl('https://127.0.0.1:8443/', atConfiguration(resolve, true, false))).ok,
      ).to.equal(true);
      expect(
        (await checkWebhookUrl('http://127.0.0.1:8080/', atConfiguration(resolve, true, false))).ok,
      ).to.equal(false);
    });

    it('refuses a name that resolves to a private address, without revealing the address', async () => {
      const resolve = fakeResolver({ 'internal.merchant.example': ['10.1.2.3'] });
      const verdict = await checkWebhookUrl(
        'https://internal.merchant.example/hook',
        atConfiguration(resolve),
      );
      expect(verdict).to.deep.equal({ ok: false, issue: 'host resolves to a private address' });
    });

    it('refuses a name when any one of its addresses is blocked', async () => {
      const resolve = fakeResolver({ 'mixed.merchant.example': ['93.184.216.34', '::ffff:169.254.169.254'] });
      const verdict = await checkWebhookUrl('https://mixed.merchant.example/', atConfiguration(resolve));
      expect(verdict).to.deep.equal({ ok: false, issue: 'host resolves to a cloud metadata endpoint' });
    });

    it('accepts a name that resolves to public addresses and reports them', async () => {
      const resolve = fakeResolver({ 'hooks.merchant.example': ['93.184.216.34', '2606:2800:220:1::1'] });
      const verdict = await checkWebhookUrl(
        'https://hooks.merchant.example/payouts',
        atConfiguration(resolve),
      );
      expect(verdict).to.deep.equal({
        ok: true,
        url: 'https://hooks.merchant.example/payouts',
        addresses: ['93.184.216.34', '2606:2800:220:1::1'],
        resolved: true,
      });
    });

    it('accepts an unresolvable name at configuration and refuses it at delivery', async () => {
      const resolve = fakeResolver({});
      const configured = await checkWebhookUrl('https://hooks.merchant.example/', atConfiguration(resolve));
      expect(configured).to.deep.equal({
        ok: true,
        url: 'https://hooks.merchant.example/',
        addresses: [],
        resolved: false,
      });
      const delivered = await checkWebhookUrl('https://hooks.merchant.example/', {
        ...atConfiguration(resolve),
        unresolved: 'reject',
      });
      expect(delivered).to.deep.equal({ ok: false, issue: 'host does not resolve' });
    });

    it('WEBHOOK_ALLOW_PRIVATE_URLS lifts private, loopback, link-local and CGNAT, never metadata or unspecified', async () => {
      const resolve = fakeResolver({ 'nas.office.example': ['192.168.0.20'] });
      for (const url of [
        'https://10.0.0.5/',
        'https://[::1]/',
        'https://[fe80::1]/',
        'https://100.64.0.1/',
        'https://nas.office.example/',
      ]) {
        expect((await checkWebhookUrl(url, atConfiguration(resolve, true))).ok, url).to.equal(true);
      }
      for (const url of [
        'https://169.254.169.254/',
        'https://[fd00:ec2::254]/',
        'https://metadata.google.internal/',
        'https://0.0.0.0/',
      ]) {
        expect((await checkWebhookUrl(url, atConfiguration(resolve, true))).ok, url).to.equal(false);
      }
    });

    it('treats a resolver answer that is not an IP address as refused', async () => {
      const resolve = fakeResolver({ 'odd.merchant.example': ['not-an-ip'] });
      const verdict = await checkWebhookUrl('https://odd.merchant.example/', atConfiguration(resolve));
      expect(verdict.ok).to.equal(false);
    });
  });
});
