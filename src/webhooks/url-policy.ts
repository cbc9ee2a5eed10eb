import { lookup } from 'node:dns/promises';
import { isIPv4, isIPv6 } from 'node:net';
import type { Config } from '#src/config.ts';
import { within } from '#src/lib/within.ts';

/**
 * Which webhook URLs the service will call: checked when a merchant configures one and again
 * before every delivery, so that a name that later resolves somewhere private is still refused.
 * Nothing here throws an API error: callers turn a refusal into WEBHOOK_URL_INVALID or a failed
 * delivery.
 */

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/**
 * Hosts the contract lets merchants use for local testing, over plain http too, when the
 * deployment allows it (`WEBHOOK_ALLOW_LOCALHOST`). Only these spellings, as written: `0x7f.1`,
 * `2130706433` or `127.1` reach the same address but are judged like any other loopback host.
 */
const LOCAL_TEST_HOSTS = new Set(['localhost', '127.0.0.1']);

/** Names of cloud metadata services that must never be reachable, whatever they resolve to. */
const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata.goog']);

/**
 * Why an address is refused. The first four are what `WEBHOOK_ALLOW_PRIVATE_URLS` lifts (a
 * deployment whose merchants sit on a private network); the others are never a valid target.
 */
export type BlockReason =
  | 'private'
  | 'loopback'
  | 'link-local'
  | 'cgnat'
  | 'metadata'
  | 'unspecified'
  | 'reserved';

const LIFTED_BY_ALLOW_PRIVATE: ReadonlySet<BlockReason> = new Set([
  'private',
  'loopback',
  'link-local',
  'cgnat',
]);

const REASON_TEXT: Record<BlockReason, string> = {
  private: 'a private address',
  loopback: 'a loopback address',
  'link-local': 'a link-local address',
  cgnat: 'a carrier-grade NAT address (100.64.0.0/10)',
  metadata: 'a cloud metadata endpoint',
  unspecified: 'an unspecified address',
  reserved: 'a reserved, multicast or documentation address',
};

/** Resolves a host name to its IP addresses; throws when the name does not resolve. */
export type HostResolver = (host: string) => Promise<string[]>;

/** How long configuration waits for DNS before treating a name as unresolved. */
const LOOKUP_TIMEOUT_MS = 3000;

/** The system resolver (getaddrinfo, so /etc/hosts counts), bounded in time. */
export const systemResolver: HostResolver = async (host) => {
  const found = await within(lookup(host, { all: true, verbatim: true }), LOOKUP_TIMEOUT_MS);
  if (found.late) throw new Error(`DNS lookup of ${host} timed out`);
  return found.value.map((a) => a.address);
};

/** What a deployment lets webhooks reach beyond the public internet. */
export interface UrlPolicySwitches {
  /** `WEBHOOK_ALLOW_PRIVATE_URLS`: accept private, loopback, link-local and CGNAT targets (https). */
  allowPrivate: boolean;
  /**
   * `WEBHOOK_ALLOW_LOCALHOST`: the contract's local-testing exception, `http(s)://localhost` and
   * `http(s)://127.0.0.1` on any port. Off, those hosts are loopback like any other.
   */
  allowLocalhost: boolean;
}

/** The policy switches a configuration sets: every caller of the policy takes them from here. */
export function urlPolicyOf(
  config: Pick<Config, 'WEBHOOK_ALLOW_PRIVATE_URLS' | 'WEBHOOK_ALLOW_LOCALHOST'>,
): UrlPolicySwitches {
  return { allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_URLS, allowLocalhost: config.WEBHOOK_ALLOW_LOCALHOST };
}

export interface UrlPolicyOptions extends UrlPolicySwitches {
  resolve: HostResolver;
  /**
   * What a name that does not resolve means. Configuration accepts it (the merchant may set the
   * URL before publishing DNS, and this service may run without DNS); delivery refuses it.
   */
  unresolved: 'accept' | 'reject';
}

export type WebhookUrlVerdict =
  | {
      ok: true;
      /** The normalised URL (WHATWG serialisation): store and call exactly this. */
      url: string;
      /** Addresses the host resolved to and that passed the checks; empty when unresolved. */
      addresses: string[];
      resolved: boolean;
    }
  | { ok: false; issue: string };

/**
 * Syntax rules only (length, scheme, credentials, fragment): no DNS, no address checks. Plain
 * http is accepted only for the local test hosts, and only when `allowLocalhost` is on.
 */
export function parseWebhookUrl(
  raw: string,
  switches: Pick<UrlPolicySwitches, 'allowLocalhost'>,
): { ok: true; url: URL } | { ok: false; issue: string } {
  if (raw.length === 0) return { ok: false, issue: 'must not be empty' };
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) {
    return { ok: false, issue: `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters` };
  }
  // The WHATWG parser quietly strips surrounding whitespace and tabs; a URL that needs that is
  // not the URL the merchant thinks they configured.
  if (/\s/.test(raw) || hasControlCharacter(raw)) {
    return { ok: false, issue: 'must not contain whitespace or control characters' };
  }
  const url = URL.parse(raw);
  if (!url) return { ok: false, issue: 'must be an absolute URL such as https://example.com/webhooks' };
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, issue: 'must use https' };
  if (url.protocol === 'http:' && !(switches.allowLocalhost && isLocalTestHost(raw, url))) {
    return {
      ok: false,
      issue: switches.allowLocalhost
        ? 'must use https (plain http is allowed only for localhost and 127.0.0.1)'
        : 'must use https',
    };
  }
  if (url.username || url.password) {
    return { ok: false, issue: 'must not contain credentials (user:password@)' };
  }
  if (url.hash) {
    return { ok: false, issue: 'must not contain a fragment (#...); it is never sent to the server' };
  }
  if (!url.hostname) return { ok: false, issue: 'must name a host' };
  if (url.href.length > MAX_WEBHOOK_URL_LENGTH) {
    return { ok: false, issue: `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters once normalised` };
  }
  return { ok: true, url };
}

/**
 * The host as the merchant wrote it, lower-cased, without user info or port: what the WHATWG
 * parser reads as the host of an http(s) URL before it decodes and normalises it (it skips any
 * run of slashes or backslashes after the scheme, and ends the host at `/`, `\`, `?` or `#`).
 */
function writtenHost(raw: string): string {
  const rest = raw.slice(raw.indexOf(':') + 1).replace(/^[/\\]*/, '');
  const authority = rest.split(/[/\\?#]/, 1)[0] ?? '';
  const host = authority.slice(authority.lastIndexOf('@') + 1);
  return (
    host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d*$/, '')
  ).toLowerCase();
}

/** `localhost` or `127.0.0.1` exactly as the contract spells them, not another way to reach them. */
function isLocalTestHost(raw: string, url: URL): boolean {
  return LOCAL_TEST_HOSTS.has(url.hostname) && writtenHost(raw) === url.hostname;
}

/**
 * An IPv4 host written any other way than four decimal numbers: hexadecimal (`0x7f.1`), octal
 * (`0177.0.0.1`), one number (`2130706433`), short forms (`127.1`), percent-encoded or full-width
 * digits. The parser turns each into an ordinary address; nobody writes one for a real receiver,
 * and each is a classic way past filters that compare text, so it is refused outright.
 */
function isDisguisedIpv4(raw: string, url: URL): boolean {
  return isIPv4(url.hostname) && writtenHost(raw) !== url.hostname;
}

/**
 * The full policy: syntax, then the host by name, then every address it resolves to. A host
 * with several addresses is refused if any one of them is refused (the caller cannot choose
 * which one a connection will use).
 */
export async function checkWebhookUrl(raw: string, options: UrlPolicyOptions): Promise<WebhookUrlVerdict> {
  const parsed = parseWebhookUrl(raw, options);
  if (!parsed.ok) return parsed;
  const { url } = parsed;
  if (isDisguisedIpv4(raw, url)) {
    // Refused whatever the switches; the issue names the range when the address is in one.
    const reason = blockedAddressReason(url.hostname);
    return {
      ok: false,
      issue: reason
        ? `must not point to ${REASON_TEXT[reason]}`
        : 'must write an IP address as four decimal numbers, such as 203.0.113.7',
    };
  }
  // Exactly these two spellings: `localhost.` or `[::1]` are judged like any other loopback host,
  // and so are these two when the deployment does not allow local test URLs.
  if (options.allowLocalhost && isLocalTestHost(raw, url)) {
    return { ok: true, url: url.href, addresses: ['127.0.0.1'], resolved: true };
  }

  const host = hostOf(url);
  const named = blockedNameReason(host);
  if (named && !allowed(named, options)) {
    return { ok: false, issue: `must not point to ${REASON_TEXT[named]}` };
  }

  if (isIPv4(host) || isIPv6(host)) {
    const reason = blockedAddressReason(host);
    if (reason && !allowed(reason, options)) {
      return { ok: false, issue: `must not point to ${REASON_TEXT[reason]}` };
    }
    return { ok: true, url: url.href, addresses: [host], resolved: true };
  }

  let addresses: string[];
  try {
    addresses = await options.resolve(host);
  } catch {
    addresses = [];
  }
  if (addresses.length === 0) {
    if (options.unresolved === 'accept') return { ok: true, url: url.href, addresses: [], resolved: false };
    return { ok: false, issue: 'host does not resolve' };
  }
  for (const address of addresses) {
    const reason = blockedAddressReason(address) ?? (isIPv4(address) || isIPv6(address) ? null : 'reserved');
    // The resolved address is not named: the merchant knows their host, and our resolver's view
    // of private names is nobody else's business.
    if (reason && !allowed(reason, options)) {
      return { ok: false, issue: `host resolves to ${REASON_TEXT[reason]}` };
    }
  }
  return { ok: true, url: url.href, addresses, resolved: true };
}

function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

function allowed(reason: BlockReason, options: UrlPolicyOptions): boolean {
  return options.allowPrivate && LIFTED_BY_ALLOW_PRIVATE.has(reason);
}

/** The hostname without IPv6 brackets or a trailing dot (`example.com.` is `example.com`). */
function hostOf(url: URL): string {
  const h = url.hostname;
  if (h.startsWith('[') && h.endsWith(']')) return h.slice(1, -1);
  return h.endsWith('.') ? h.slice(0, -1) : h;
}

/** Names refused before any lookup: metadata services and the `.localhost` special-use domain. */
export function blockedNameReason(host: string): BlockReason | null {
  const name = host.toLowerCase().replace(/\.$/, '');
  if (METADATA_HOSTS.has(name)) return 'metadata';
  if (name === 'localhost' || name.endsWith('.localhost')) return 'loopback';
  return null;
}

type Range = { bytes: number[]; prefix: number; reason: BlockReason };

const v4 = (cidr: string, reason: BlockReason): Range => {
  const [addr, prefix] = cidr.split('/');
  return { bytes: (addr ?? '').split('.').map(Number), prefix: Number(prefix), reason };
};

const v6 = (cidr: string, reason: BlockReason): Range => {
  const [addr, prefix] = cidr.split('/');
  return { bytes: [...(parseIpv6(addr ?? '') ?? [])], prefix: Number(prefix), reason };
};

// Most specific first: the first match wins.
const IPV4_RANGES: Range[] = [
  v4('169.254.169.254/32', 'metadata'),
  v4('0.0.0.0/8', 'unspecified'),
  v4('10.0.0.0/8', 'private'),
  v4('172.16.0.0/12', 'private'),
  v4('192.168.0.0/16', 'private'),
  v4('127.0.0.0/8', 'loopback'),
  v4('169.254.0.0/16', 'link-local'),
  v4('100.64.0.0/10', 'cgnat'),
  v4('192.0.0.0/24', 'reserved'),
  v4('192.0.2.0/24', 'reserved'),
  v4('198.18.0.0/15', 'reserved'),
  v4('198.51.100.0/24', 'reserved'),
  v4('203.0.113.0/24', 'reserved'),
  v4('224.0.0.0/4', 'reserved'),
  v4('240.0.0.0/4', 'reserved'),
];

const IPV6_RANGES: Range[] = [
  v6('fd00:ec2::254/128', 'metadata'),
  v6('::/128', 'unspecified'),
  v6('::1/128', 'loopback'),
  v6('fc00::/7', 'private'),
  v6('fec0::/10', 'private'),
  v6('fe80::/10', 'link-local'),
  v6('ff00::/8', 'reserved'),
  v6('100::/64', 'reserved'),
  v6('2001:db8::/32', 'reserved'),
];

/**
 * IPv6 prefixes that carry an IPv4 address, and where: mapped (::ffff:a.b.c.d), the deprecated
 * compatible form (::a.b.c.d), NAT64 (64:ff9b::a.b.c.d) and 6to4 (2002:aabb:ccdd::). Each is
 * judged by the IPv4 address it reaches.
 */
const EMBEDDED_IPV4: { prefix: Range; offset: number }[] = [
  { prefix: v6('::ffff:0:0/96', 'reserved'), offset: 12 },
  { prefix: v6('::/96', 'reserved'), offset: 12 },
  { prefix: v6('64:ff9b::/96', 'reserved'), offset: 12 },
  { prefix: v6('2002::/16', 'reserved'), offset: 2 },
];

/** Why an IP address (v4 or v6, optionally with a %zone) is refused, or null when it is public. */
export function blockedAddressReason(address: string): BlockReason | null {
  const ip = address.replace(/%.*$/, '');
  if (isIPv4(ip)) return matchRanges(ip.split('.').map(Number), IPV4_RANGES);
  const bytes = parseIpv6(ip);
  if (!bytes) return null;
  const direct = matchRanges([...bytes], IPV6_RANGES);
  if (direct) return direct;
  for (const { prefix, offset } of EMBEDDED_IPV4) {
    if (inRange([...bytes], prefix)) {
      return matchRanges([...bytes.subarray(offset, offset + 4)], IPV4_RANGES);
    }
  }
  return null;
}

function matchRanges(bytes: number[], ranges: Range[]): BlockReason | null {
  return ranges.find((r) => inRange(bytes, r))?.reason ?? null;
}

function inRange(bytes: number[], range: Range): boolean {
  if (bytes.length !== range.bytes.length) return false;
  let bits = range.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if (((bytes[i] ?? 0) & mask) !== ((range.bytes[i] ?? 0) & mask)) return false;
  }
  return true;
}

/** The 16 bytes of an IPv6 address (any textual form, including a dotted IPv4 tail), or null. */
export function parseIpv6(text: string): Uint8Array | null {
  const ip = text.replace(/%.*$/, '');
  if (!isIPv6(ip)) return null;
  let head = ip;
  const tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(ip);
  if (dotted?.[1]) {
    const [a = 0, b = 0, c = 0, d = 0] = dotted[1].split('.').map(Number);
    tail.push((a << 8) | b, (c << 8) | d);
    head = ip.slice(0, -dotted[1].length);
    if (head.endsWith(':') && !head.endsWith('::')) head = head.slice(0, -1);
  }
  const toGroups = (s: string) => (s === '' ? [] : s.split(':').map((g) => Number.parseInt(g, 16)));
  let groups: number[];
  if (head.includes('::')) {
    const [left = '', right = ''] = head.split('::');
    const l = toGroups(left);
    const r = [...toGroups(right), ...tail];
    groups = [...l, ...new Array<number>(8 - l.length - r.length).fill(0), ...r];
  } else {
    groups = [...toGroups(head), ...tail];
  }
  if (groups.length !== 8) return null;
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    bytes[i * 2] = g >> 8;
    bytes[i * 2 + 1] = g & 0xff;
  });
  return bytes;
}
