import { createHash, randomBytes } from 'node:crypto';
import Router from '@koa/router';
import { z } from 'zod';
import type { Network } from '#src/corridors/corridors.ts';
import type { Clock } from '#src/lib/clock.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import { ADDRESS_FORMATS, isChainAddress } from '#src/providers/addresses.ts';
import { readJson, SandboxError, validate } from './http.ts';
import {
  amountField,
  hasMagicSuffix,
  listQuery,
  networkField,
  networkOf,
  optionalJson,
  pathParam,
  positionCursors,
  RailError,
  railErrors,
  referenceField,
} from './rail-http.ts';

/**
 * TRON and BSC with USDT on them. Each chain's height follows the injected clock (one block per
 * `blockIntervalMs`, worked out whenever the chain is looked at, so no timer runs and a manual
 * clock moves blocks deterministically) plus any blocks mined on request. A transfer is included
 * in the block after the current tip; its confirmations are `tip - block_number + 1`.
 */

/** Token precision of USDT on each chain (TRC-20 USDT has 6 decimals, BEP-20 USDT 18). */
export const USDT_DECIMALS = { TRON: 6, BSC: 18 } as const satisfies Record<Network, number>;

/** Sends to addresses ending like this are rejected by the network (product decisions §6). */
const REJECTED_SUFFIXES = ['9999', 'dead'];

// Heights near the real chains' at the start of 2024, moved on by a nominal 3 s block since: a
// restarted sandbox resumes near where the last one was instead of at block 1.
const HEIGHT_EPOCH_MS = Date.UTC(2024, 0, 1);
const HEIGHT_AT_EPOCH = { TRON: 57_000_000, BSC: 34_700_000 } as const satisfies Record<Network, number>;
const NOMINAL_BLOCK_MS = 3000;

const MAX_MINE = 10_000;
const MAX_PAGE = 500;
const DEFAULT_PAGE = 100;

/** A USDT transfer recorded on a chain, inbound to the service or not. */
export interface ChainTx {
  seq: number;
  txHash: string;
  network: Network;
  fromAddress: string;
  toAddress: string;
  amount: Decimal;
  blockNumber: number;
  /** Position within its block. */
  index: number;
  /** When its block was produced; null while the block is not mined yet. */
  blockTime: Date | null;
}

/** A send of the service's hot wallet (a refund), by the service's reference. */
export interface ChainSend {
  reference: string;
  network: Network;
  toAddress: string;
  amount: Decimal;
  /** The transaction, or null when the network rejected the send outright. */
  tx: ChainTx | null;
  failureReason: string | null;
}

/** Programmatic access for tests and tools; the HTTP API offers the same. */
export interface SandboxChains {
  router: Router;
  /** Mines `count` blocks on `network` at once; returns the new tip. */
  mine(network: Network, count?: number): number;
  tip(network: Network): number;
  /** The service's receiving address for `label`, as `POST /chains/{network}/addresses` returns it. */
  address(network: Network, label: string): string;
  /** The merchant's side: a USDT transfer, included in the next block. */
  transfer(args: {
    network: Network;
    toAddress: string;
    amount: Decimal | string;
    fromAddress?: string;
  }): ChainTx;
  /** Sends of the service, oldest first. */
  sends(network: Network): readonly ChainSend[];
}

// --- Addresses ---------------------------------------------------------------------------------

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const TRON_PREFIX = 0x41;
// Receiving addresses end in four tag bytes derived from the rest, so the chain recognises the
// service's addresses without remembering them: transfers to them stay listed after a restart.
const RECEIVING_TAG = 'sandbox-receiving-address';

function sha256(...parts: (string | Buffer)[]): Buffer {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
}

function base58(bytes: Buffer): string {
  let n = BigInt(`0x${bytes.toString('hex')}`);
  let out = '';
  while (n > 0n) {
    out = BASE58.charAt(Number(n % 58n)) + out;
    n /= 58n;
  }
  for (const byte of bytes) {
    if (byte !== 0) break;
    out = `1${out}`;
  }
  return out;
}

/** The bytes behind a base58 string of exactly `length` bytes, or null. */
function unbase58(text: string, length: number): Buffer | null {
  let n = 0n;
  for (const char of text) {
    const digit = BASE58.indexOf(char);
    if (digit < 0) return null;
    n = n * 58n + BigInt(digit);
  }
  const hex = n.toString(16).padStart(length * 2, '0');
  return hex.length === length * 2 ? Buffer.from(hex, 'hex') : null;
}

/** A 20-byte account as the network writes it: base58check with prefix 0x41 on TRON, lowercase hex on BSC. */
function encodeAccount(network: Network, account: Buffer): string {
  switch (network) {
    case 'TRON': {
      const payload = Buffer.concat([Buffer.from([TRON_PREFIX]), account]);
      return base58(Buffer.concat([payload, sha256(sha256(payload)).subarray(0, 4)]));
    }
    case 'BSC':
      return `0x${account.toString('hex')}`;
  }
}

/** The 20-byte account behind an address, or null when it is not a well-formed one. */
function decodeAccount(network: Network, address: string): Buffer | null {
  if (!isChainAddress(network, address)) return null;
  switch (network) {
    case 'TRON': {
      const raw = unbase58(address, 25);
      if (!raw || raw[0] !== TRON_PREFIX) return null;
      return raw.subarray(1, 21);
    }
    case 'BSC':
      return Buffer.from(address.slice(2), 'hex');
  }
}

function receivingAccount(network: Network, label: string): Buffer {
  const body = sha256(`${network}:${label}`).subarray(0, 16);
  return Buffer.concat([body, sha256(RECEIVING_TAG, body).subarray(0, 4)]);
}

function isReceivingAccount(account: Buffer): boolean {
  return sha256(RECEIVING_TAG, account.subarray(0, 16)).subarray(0, 4).equals(account.subarray(16));
}

/** The service's receiving address for (network, label): the same on every call and every run. */
export function receivingAddress(network: Network, label: string): string {
  return encodeAccount(network, receivingAccount(network, label));
}

/** One spelling per address: BSC addresses compare case-insensitively (EIP-55 mixed case). */
function canonical(network: Network, address: string): string {
  return network === 'BSC' ? address.toLowerCase() : address;
}

// --- One chain ---------------------------------------------------------------------------------

class Chain {
  readonly network: Network;
  readonly #clock: Clock;
  readonly #intervalMs: number;
  /** Per start: makes tx hashes unique across restarts and tells this chain's cursors from others'. */
  readonly #epoch = randomBytes(4).toString('hex');
  readonly #txs: ChainTx[] = [];
  readonly #cursors = positionCursors(this.#epoch, () => this.#txs.length);
  readonly #sends = new Map<string, ChainSend>();
  /** The sends that made a transaction, in chain order: what the hot wallet's history lists. */
  readonly #sent: ChainSend[] = [];
  readonly #sentCursors = positionCursors(randomBytes(4).toString('hex'), () => this.#sent.length);
  readonly #hotWallet: string;
  readonly #payerWallet: string;
  #tip: number;
  #lastBlockAt: number;
  /** When the tip block was produced. */
  #tipAt: number;

  constructor(network: Network, clock: Clock, intervalMs: number) {
    this.network = network;
    this.#clock = clock;
    this.#intervalMs = intervalMs;
    const now = clock.now().getTime();
    this.#tip =
      HEIGHT_AT_EPOCH[network] + Math.max(0, Math.floor((now - HEIGHT_EPOCH_MS) / NOMINAL_BLOCK_MS));
    this.#lastBlockAt = now;
    this.#tipAt = now;
    this.#hotWallet = encodeAccount(network, sha256(`hot-wallet:${network}`).subarray(0, 20));
    this.#payerWallet = encodeAccount(network, sha256(`merchant-wallet:${network}`).subarray(0, 20));
  }

  get intervalMs(): number {
    return this.#intervalMs;
  }

  /** The tip after producing every block the clock says is due (never backwards if the clock is). */
  tip(): number {
    if (this.#intervalMs > 0) {
      const due = Math.floor((this.#clock.now().getTime() - this.#lastBlockAt) / this.#intervalMs);
      if (due > 0) {
        this.#produce(due, this.#lastBlockAt + this.#intervalMs, this.#lastBlockAt + due * this.#intervalMs);
        this.#lastBlockAt += due * this.#intervalMs;
      }
    }
    return this.#tip;
  }

  /** When the tip block was produced: a listing that reaches the tip has every transfer before it. */
  tipTime(): Date {
    this.tip();
    return new Date(this.#tipAt);
  }

  mine(count: number): number {
    this.tip();
    const now = this.#clock.now().getTime();
    this.#produce(count, now, now);
    return this.#tip;
  }

  /**
   * Produces `count` blocks, the first at `firstAt` and the last at `lastAt` (block times never go
   * backwards). Transfers wait in the block after the tip, so the first new block is theirs.
   */
  #produce(count: number, firstAt: number, lastAt: number): void {
    const first = this.#tip + 1;
    const at = new Date(Math.max(firstAt, this.#tipAt));
    for (let i = this.#txs.length - 1; i >= 0 && this.#txs[i]!.blockNumber === first; i--) {
      this.#txs[i]!.blockTime = at;
    }
    this.#tip += count;
    this.#tipAt = Math.max(lastAt, this.#tipAt);
  }

  confirmations(tx: ChainTx): number {
    return Math.max(0, this.tip() - tx.blockNumber + 1);
  }

  /** Records a transfer in the block after the tip: the order of submission is the chain's order. */
  include(args: { fromAddress?: string; toAddress: string; amount: Decimal }): ChainTx {
    const blockNumber = this.tip() + 1;
    const last = this.#txs.at(-1);
    const seq = this.#txs.length + 1;
    const hash = sha256(`${this.#epoch}:${this.network}:${seq}`).toString('hex');
    const tx: ChainTx = {
      seq,
      txHash: this.network === 'BSC' ? `0x${hash}` : hash,
      network: this.network,
      fromAddress: canonical(this.network, args.fromAddress ?? this.#payerWallet),
      toAddress: canonical(this.network, args.toAddress),
      amount: args.amount,
      blockNumber,
      index: last?.blockNumber === blockNumber ? last.index + 1 : 0,
      blockTime: null,
    };
    this.#txs.push(tx);
    return tx;
  }

  findTx(txHash: string): ChainTx | undefined {
    const wanted = txHash.toLowerCase();
    return this.#txs.find((tx) => tx.txHash === wanted);
  }

  /**
   * Mined transfers into receiving addresses after `cursor`. Transfers are appended in (block,
   * index) order and blocks are mined in order, so the mined ones are a prefix of the list and a
   * position in it is a safe cursor. A cursor from an earlier run of the sandbox (another chain)
   * starts this chain from its beginning: all of it is new to the caller.
   */
  list(
    cursor: string | undefined,
    limit: number,
  ): { txs: ChainTx[]; nextCursor: string | null; tip: number; tipTime: Date } {
    const tip = this.tip();
    const after = this.#cursors.after(cursor);
    const txs: ChainTx[] = [];
    let scanned = after;
    for (let i = after; i < this.#txs.length && txs.length < limit; i++) {
      const tx = this.#txs[i]!;
      if (tx.blockNumber > tip) break;
      scanned = tx.seq;
      const account = decodeAccount(this.network, tx.toAddress);
      if (account && isReceivingAccount(account)) txs.push(tx);
    }
    // Resume after everything scanned, the transfers to others' addresses included.
    const nextCursor = scanned > 0 ? this.#cursors.encode(scanned) : null;
    return { txs, nextCursor, tip, tipTime: this.tipTime() };
  }

  /** A send from the hot wallet; the first send with a reference is the only one. */
  send(args: { reference: string; toAddress: string; amount: Decimal }): {
    send: ChainSend;
    created: boolean;
  } {
    const existing = this.#sends.get(args.reference);
    if (existing) return { send: existing, created: false };
    let failureReason: string | null = null;
    if (!isChainAddress(this.network, args.toAddress)) {
      failureReason = `destination rejected by the network: not a ${this.network} address`;
    } else if (hasMagicSuffix(args.toAddress, REJECTED_SUFFIXES)) {
      failureReason = 'destination rejected by the network';
    }
    const send: ChainSend = {
      reference: args.reference,
      network: this.network,
      toAddress: args.toAddress,
      amount: args.amount,
      tx: failureReason
        ? null
        : this.include({ fromAddress: this.#hotWallet, toAddress: args.toAddress, amount: args.amount }),
      failureReason,
    };
    this.#sends.set(args.reference, send);
    if (send.tx) this.#sent.push(send);
    return { send, created: true };
  }

  /**
   * The hot wallet's mined sends after `cursor`, in chain order: sends are included in the next
   * block and blocks are mined in order, so the mined ones are a prefix of the list.
   */
  listSends(
    cursor: string | undefined,
    limit: number,
  ): { sends: ChainSend[]; nextCursor: string | null; tip: number; tipTime: Date } {
    const tip = this.tip();
    const after = this.#sentCursors.after(cursor);
    const sends: ChainSend[] = [];
    let position = after;
    for (let i = after; i < this.#sent.length && sends.length < limit; i++) {
      const send = this.#sent[i]!;
      if (send.tx!.blockNumber > tip) break;
      sends.push(send);
      position = i + 1;
    }
    return {
      sends,
      nextCursor: position > 0 ? this.#sentCursors.encode(position) : null,
      tip,
      tipTime: this.tipTime(),
    };
  }

  findSend(reference: string): ChainSend | undefined {
    return this.#sends.get(reference);
  }

  sends(): ChainSend[] {
    return [...this.#sends.values()];
  }

  /** A send is PENDING until its block is mined, then SUCCESSFUL: a refund waits one block. */
  sendStatus(send: ChainSend): 'PENDING' | 'SUCCESSFUL' | 'FAILED' {
    if (!send.tx) return 'FAILED';
    return send.tx.blockNumber <= this.tip() ? 'SUCCESSFUL' : 'PENDING';
  }
}

// --- HTTP --------------------------------------------------------------------------------------

const addressBody = z.object({ label: z.string().min(1).max(200) });

const transfersQuery = listQuery({ maxPage: MAX_PAGE, defaultPage: DEFAULT_PAGE });

const sendBody = z.object({
  reference: referenceField,
  to_address: z.string().min(1).max(128),
  amount: z.unknown().optional(),
});

const simulatedTransferBody = z.object({
  network: networkField,
  to_address: z.string(),
  amount: z.unknown().optional(),
  currency: z.literal('USDT'),
  from_address: z.string().optional(),
});

const mineBody = z.object({ count: z.number().int().min(1).max(MAX_MINE).default(1) });

function amountOn(network: Network, amount: unknown): Decimal {
  return validate(z.object({ amount: amountField(USDT_DECIMALS[network]) }), { amount }).amount;
}

function addressOn(network: Network, field: string, address: string): string {
  if (!isChainAddress(network, address)) {
    throw new SandboxError(
      'INVALID_REQUEST',
      `${field}: is not a ${network} address (${ADDRESS_FORMATS[network]})`,
    );
  }
  return canonical(network, address);
}

function transferJson(tx: ChainTx) {
  return {
    tx_hash: tx.txHash,
    network: tx.network,
    to_address: tx.toAddress,
    from_address: tx.fromAddress,
    amount: tx.amount.toFixed(),
    currency: 'USDT',
    block_number: tx.blockNumber,
    block_time: tx.blockTime?.toISOString() ?? null,
  };
}

function sendJson(chain: Chain, send: ChainSend) {
  return {
    reference: send.reference,
    status: chain.sendStatus(send),
    provider_reference: send.tx?.txHash ?? null,
    failure_reason: send.failureReason,
    network: send.network,
    to_address: send.toAddress,
    amount: send.amount.toFixed(),
    currency: 'USDT',
    block_number: send.tx?.blockNumber ?? null,
  };
}

function simulatedJson(chain: Chain, tx: ChainTx) {
  const confirmations = chain.confirmations(tx);
  return { ...transferJson(tx), confirmations, status: confirmations > 0 ? 'MINED' : 'PENDING' };
}

/** Both chains: the provider API the service calls, and the merchant-side simulation endpoints. */
export function chainsParty(options: { clock: Clock; blockIntervalMs: number }): SandboxChains {
  const chains = {
    TRON: new Chain('TRON', options.clock, options.blockIntervalMs),
    BSC: new Chain('BSC', options.clock, options.blockIntervalMs),
  } satisfies Record<Network, Chain>;
  const router = new Router();
  router.use(railErrors);

  const transfer: SandboxChains['transfer'] = (args) => {
    const chain = chains[args.network];
    return chain.include({
      toAddress: args.toAddress,
      fromAddress: args.fromAddress,
      amount: toDecimal(args.amount),
    });
  };

  router.post('/chains/:network/addresses', async (ctx) => {
    const network = networkOf(ctx.params);
    const { label } = validate(addressBody, await readJson(ctx));
    ctx.body = { network, address: receivingAddress(network, label) };
  });

  router.get('/chains/:network/transfers', (ctx) => {
    const chain = chains[networkOf(ctx.params)];
    const query = validate(transfersQuery, ctx.query);
    const page = chain.list(query.cursor || undefined, query.limit);
    ctx.body = {
      transfers: page.txs.map(transferJson),
      next_cursor: page.nextCursor,
      tip: page.tip,
      tip_time: page.tipTime.toISOString(),
    };
  });

  router.post('/chains/:network/sends', async (ctx) => {
    const chain = chains[networkOf(ctx.params)];
    const body = validate(sendBody, await readJson(ctx));
    const { send, created } = chain.send({
      reference: body.reference,
      toAddress: body.to_address,
      amount: amountOn(chain.network, body.amount),
    });
    ctx.status = created ? 201 : 200;
    ctx.body = sendJson(chain, send);
  });

  router.get('/chains/:network/sends', (ctx) => {
    const chain = chains[networkOf(ctx.params)];
    const query = validate(transfersQuery, ctx.query);
    const page = chain.listSends(query.cursor || undefined, query.limit);
    ctx.body = {
      sends: page.sends.map((send) => ({
        reference: send.reference,
        tx_hash: send.tx!.txHash,
        network: send.network,
        from_address: send.tx!.fromAddress,
        to_address: send.toAddress,
        amount: send.amount.toFixed(),
        currency: 'USDT',
        block_number: send.tx!.blockNumber,
        block_time: send.tx!.blockTime?.toISOString() ?? null,
      })),
      next_cursor: page.nextCursor,
      tip: page.tip,
      tip_time: page.tipTime.toISOString(),
    };
  });

  router.get('/chains/:network/sends/:reference', (ctx) => {
    const chain = chains[networkOf(ctx.params)];
    const send = chain.findSend(pathParam(ctx.params, 'reference'));
    if (!send) throw new RailError(404, 'TRANSFER_NOT_FOUND', 'No send with that reference on this chain.');
    ctx.body = sendJson(chain, send);
  });

  router.post('/sandbox/crypto/transfers', async (ctx) => {
    const body = validate(simulatedTransferBody, await readJson(ctx));
    const chain = chains[body.network];
    const tx = chain.include({
      toAddress: addressOn(body.network, 'to_address', body.to_address),
      fromAddress:
        body.from_address === undefined
          ? undefined
          : addressOn(body.network, 'from_address', body.from_address),
      amount: amountOn(body.network, body.amount),
    });
    ctx.status = 201;
    ctx.body = simulatedJson(chain, tx);
  });

  router.get('/sandbox/crypto/transfers/:txHash', (ctx) => {
    for (const chain of Object.values(chains)) {
      const tx = chain.findTx(pathParam(ctx.params, 'txHash'));
      if (tx) {
        ctx.body = simulatedJson(chain, tx);
        return;
      }
    }
    throw new RailError(404, 'TRANSFER_NOT_FOUND', 'No transfer with that hash on either chain.');
  });

  router.get('/sandbox/chains/:network', (ctx) => {
    const chain = chains[networkOf(ctx.params)];
    ctx.body = { network: chain.network, tip: chain.tip(), block_interval_ms: chain.intervalMs };
  });

  router.post('/sandbox/chains/:network/blocks', async (ctx) => {
    const chain = chains[networkOf(ctx.params)];
    const { count } = validate(mineBody, await optionalJson(ctx));
    ctx.body = { network: chain.network, tip: chain.mine(count), block_interval_ms: chain.intervalMs };
  });

  return {
    router,
    mine: (network, count = 1) => chains[network].mine(count),
    tip: (network) => chains[network].tip(),
    address: receivingAddress,
    transfer,
    sends: (network) => chains[network].sends(),
  };
}
