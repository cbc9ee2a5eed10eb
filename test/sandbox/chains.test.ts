import { expect } from 'chai';
import { ManualClock } from '#src/lib/clock.ts';
import { receivingAddress } from '#src/sandbox/chains.ts';
import type { RunningSandbox } from '#src/sandbox/server.ts';
import { callJson, startRailsSandbox } from './rails-fixtures.ts';

const TRON_RE = /^T[1-9A-HJ-NP-Za-km-z]{33}$/;
const BSC_RE = /^0x[0-9a-f]{40}$/;
// Made-up addresses of merchants' wallets: format-valid, not the service's.
const OUTSIDE_TRON = 'TJRabPrwbZy45sbavfcjinPJC18kjpRTv8';
const OUTSIDE_BSC = '0x55d398326f99059ff775485246999027b3197955';

describe('sandbox chains', () => {
  const clock = new ManualClock(new Date('2026-03-02T09:00:00Z'));
  let sandbox: RunningSandbox;
  const call = (method: 'GET' | 'POST', path: string, body?: unknown) =>
    callJson(sandbox.url, method, path, body);
  const address = async (network: string, label: string): Promise<string> =>
    (await call('POST', `/chains/${network}/addresses`, { label })).body.address;
  const pay = (network: string, to: string, amount: unknown) =>
    call('POST', '/sandbox/crypto/transfers', { network, to_address: to, amount, currency: 'USDT' });
  const listed = (network: string, query = '') => call('GET', `/chains/${network}/transfers${query}`);

  before(async () => {
    sandbox = await startRailsSandbox(clock);
  });

  after(() => sandbox.close());

  describe('receiving addresses', () => {
    it('look like real TRON and BSC addresses', async () => {
      expect(await address('TRON', 'tenant-a')).to.match(TRON_RE);
      expect(await address('BSC', 'tenant-a')).to.match(BSC_RE);
    });

    it('are the same for the same network and label, on every call and every run', async () => {
      // Pinned: the service stores these; a change strands every sandbox tenant's address.
      expect(await address('TRON', 'tenant-a')).to.equal('TCikGjDXDdW9d4Stm1ianeSXHA1MnCYqvb');
      expect(await address('tron', 'tenant-a')).to.equal('TCikGjDXDdW9d4Stm1ianeSXHA1MnCYqvb');
      expect(await address('BSC', 'tenant-a')).to.equal('0xdde702675ab69082a9aa766e5e53c1f57f889330');
      expect(sandbox.chains.address('TRON', 'tenant-a')).to.equal(await address('TRON', 'tenant-a'));
    });

    it('differ between labels and between networks', async () => {
      const all = [
        await address('TRON', 'tenant-a'),
        await address('TRON', 'tenant-b'),
        await address('BSC', 'tenant-a'),
        await address('BSC', 'tenant-b'),
      ];
      expect(new Set(all).size).to.equal(4);
    });

    it('rejects an unknown network or a missing label', async () => {
      const eth = await call('POST', '/chains/ETH/addresses', { label: 'x' });
      expect(eth.status).to.equal(400);
      expect(eth.body.error.message).to.match(/network/);
      expect((await call('POST', '/chains/TRON/addresses', {})).status).to.equal(400);
    });
  });

  describe('merchant transfers and confirmations', () => {
    it('includes a transfer in the next block and lists it once that block is mined', async () => {
      const to = await address('TRON', 'confirmations');
      const tip = sandbox.chains.tip('TRON');
      const sent = await pay('TRON', to, '25.123457');
      expect(sent.status).to.equal(201);
      expect(sent.body).to.include({
        network: 'TRON',
        to_address: to,
        amount: '25.123457',
        currency: 'USDT',
        block_number: tip + 1,
        confirmations: 0,
        status: 'PENDING',
      });
      expect(sent.body.tx_hash).to.match(/^[0-9a-f]{64}$/);
      expect(sent.body.from_address).to.match(TRON_RE);

      const before = await listed('TRON');
      expect(before.body.transfers.map((t: any) => t.tx_hash)).to.not.include(sent.body.tx_hash);

      clock.advance(1500);
      sandbox.chains.mine('TRON');
      const after = await listed('TRON');
      expect(after.body.tip).to.equal(tip + 1);
      expect(after.body.tip_time).to.equal(clock.now().toISOString());
      expect(after.body.transfers.find((t: any) => t.tx_hash === sent.body.tx_hash)).to.deep.equal({
        tx_hash: sent.body.tx_hash,
        network: 'TRON',
        to_address: to,
        from_address: sent.body.from_address,
        amount: '25.123457',
        currency: 'USDT',
        block_number: tip + 1,
        block_time: clock.now().toISOString(),
      });
    });

    it('grows confirmations by one per block, mined on request through the blocks endpoint', async () => {
      const sent = await pay('BSC', await address('BSC', 'confirmations'), '10');
      expect(sent.body.tx_hash).to.match(/^0x[0-9a-f]{64}$/);
      const mined = await call('POST', '/sandbox/chains/BSC/blocks', { count: 1 });
      expect(mined.status).to.equal(200);
      expect(mined.body).to.deep.equal({ network: 'BSC', tip: sent.body.block_number, block_interval_ms: 0 });
      const seen = await call('GET', `/sandbox/crypto/transfers/${sent.body.tx_hash}`);
      expect(seen.body).to.include({ confirmations: 1, status: 'MINED' });

      await call('POST', '/sandbox/chains/bsc/blocks', { count: 14 });
      expect(
        (await call('GET', `/sandbox/crypto/transfers/${sent.body.tx_hash}`)).body.confirmations,
      ).to.equal(15);
      expect((await call('GET', '/sandbox/chains/BSC')).body).to.deep.equal({
        network: 'BSC',
        tip: sent.body.block_number + 14,
        block_interval_ms: 0,
      });
    });

    it('mines one block when the blocks endpoint gets no body, and refuses a count out of range', async () => {
      const tip = sandbox.chains.tip('TRON');
      const response = await fetch(`${sandbox.url}/sandbox/chains/TRON/blocks`, { method: 'POST' });
      expect(((await response.json()) as any).tip).to.equal(tip + 1);
      expect((await call('POST', '/sandbox/chains/TRON/blocks', { count: 0 })).status).to.equal(400);
      expect((await call('POST', '/sandbox/chains/TRON/blocks', { count: 100_001 })).status).to.equal(400);
    });

    it('answers an unknown transaction hash with 404', async () => {
      const missing = await call('GET', `/sandbox/crypto/transfers/${'ab'.repeat(32)}`);
      expect(missing.status).to.equal(404);
      expect(missing.body.error.code).to.equal('TRANSFER_NOT_FOUND');
    });

    it('validates the simulated transfer and names the field', async () => {
      const to = await address('TRON', 'validation');
      const cases: [unknown, RegExp][] = [
        [{ network: 'ETH', to_address: to, amount: '1', currency: 'USDT' }, /^network/],
        [{ network: 'TRON', to_address: to, amount: '1', currency: 'USDC' }, /^currency/],
        [
          { network: 'TRON', to_address: OUTSIDE_BSC, amount: '1', currency: 'USDT' },
          /^to_address: is not a TRON/,
        ],
        [{ network: 'BSC', to_address: to, amount: '1', currency: 'USDT' }, /^to_address: is not a BSC/],
        [
          { network: 'TRON', to_address: to, amount: '0', currency: 'USDT' },
          /^amount: must be greater than 0/,
        ],
        [
          { network: 'TRON', to_address: to, amount: '-5', currency: 'USDT' },
          /^amount: must be a positive decimal/,
        ],
        [{ network: 'TRON', to_address: to, amount: '1.1234567', currency: 'USDT' }, /6 decimal places/],
        [{ network: 'TRON', to_address: to, currency: 'USDT' }, /^amount: is required/],
      ];
      for (const [body, message] of cases) {
        const answer = await call('POST', '/sandbox/crypto/transfers', body);
        expect(answer.status, JSON.stringify(body)).to.equal(400);
        expect(answer.body.error.code).to.equal('INVALID_REQUEST');
        expect(answer.body.error.message).to.match(message);
      }
    });

    it('takes USDT to each chain’s token precision, and JSON numbers as their decimal literal', async () => {
      const bsc = await pay('BSC', await address('BSC', 'precision'), '1.123456789012345678');
      expect(bsc.status).to.equal(201);
      expect(bsc.body.amount).to.equal('1.123456789012345678');
      const tron = await pay('TRON', await address('TRON', 'precision'), 65.123457);
      expect(tron.body.amount).to.equal('65.123457');
    });
  });

  describe('the transfer list the service polls', () => {
    it('lists only transfers into the service’s addresses, in chain order, page by page', async () => {
      const ours = await address('TRON', 'paging');
      sandbox.chains.mine('TRON');
      const start = (await listed('TRON', '?limit=500')).body.next_cursor;
      await pay('TRON', ours, '1');
      await pay('TRON', OUTSIDE_TRON, '2');
      await pay('TRON', ours, '3');
      sandbox.chains.mine('TRON');
      await pay('TRON', ours, '4');
      sandbox.chains.mine('TRON');

      const first = await listed('TRON', `?cursor=${start}&limit=2`);
      expect(first.body.transfers.map((t: any) => t.amount)).to.deep.equal(['1', '3']);
      expect(first.body.transfers[0].block_number).to.equal(first.body.transfers[1].block_number);
      const second = await listed('TRON', `?cursor=${first.body.next_cursor}&limit=2`);
      expect(second.body.transfers.map((t: any) => t.amount)).to.deep.equal(['4']);
      expect(second.body.transfers[0].block_number).to.equal(first.body.transfers[0].block_number + 1);

      const empty = await listed('TRON', `?cursor=${second.body.next_cursor}`);
      expect(empty.body.transfers).to.deep.equal([]);
      expect(empty.body.next_cursor).to.equal(second.body.next_cursor);
      expect(empty.body.tip).to.equal(sandbox.chains.tip('TRON'));
    });

    it('keeps each chain’s transfers to itself', async () => {
      const tx = sandbox.chains.transfer({
        network: 'BSC',
        toAddress: await address('BSC', 'apart'),
        amount: '7',
      });
      sandbox.chains.mine('BSC');
      const tron = await listed('TRON');
      expect(tron.body.transfers.map((t: any) => t.tx_hash)).to.not.include(tx.txHash);
      const bsc = await listed('BSC', '?limit=500');
      expect(bsc.body.transfers.map((t: any) => t.tx_hash)).to.include(tx.txHash);
    });

    it('refuses a cursor it did not issue and a limit out of range', async () => {
      expect((await listed('TRON', '?cursor=not-a-cursor')).status).to.equal(400);
      expect((await listed('TRON', '?limit=0')).status).to.equal(400);
      expect((await listed('TRON', '?limit=501')).status).to.equal(400);
    });

    it('after a restart, still lists transfers to the addresses it gave out, from the new chain’s start', async () => {
      const ours = await address('BSC', 'restart');
      const oldCursor = (await listed('BSC')).body.next_cursor;
      const restarted = await startRailsSandbox(clock);
      try {
        const tx = restarted.chains.transfer({ network: 'BSC', toAddress: ours, amount: '12.5' });
        restarted.chains.mine('BSC');
        const page = await callJson(restarted.url, 'GET', `/chains/BSC/transfers?cursor=${oldCursor}`);
        expect(page.status).to.equal(200);
        expect(page.body.transfers.map((t: any) => t.tx_hash)).to.deep.equal([tx.txHash]);
      } finally {
        await restarted.close();
      }
    });
  });

  describe('block time', () => {
    it('produces one block per interval of the injected clock, and never goes back', async () => {
      const own = new ManualClock(new Date('2026-03-02T09:00:00Z'));
      const timed = await startRailsSandbox(own, { blockIntervalMs: 3000 });
      try {
        const tip = timed.chains.tip('TRON');
        own.advance(2999);
        expect(timed.chains.tip('TRON')).to.equal(tip);
        own.advance(1);
        expect(timed.chains.tip('TRON')).to.equal(tip + 1);
        own.advance(9000);
        expect((await callJson(timed.url, 'GET', '/sandbox/chains/TRON')).body).to.deep.equal({
          network: 'TRON',
          tip: tip + 4,
          block_interval_ms: 3000,
        });
        own.advance(-60_000);
        expect(timed.chains.tip('TRON')).to.equal(tip + 4);
      } finally {
        await timed.close();
      }
    });

    it('dates each block: a transfer gets its block’s time, the listing the tip’s', async () => {
      const start = new Date('2026-03-02T09:00:00Z');
      const own = new ManualClock(start);
      const timed = await startRailsSandbox(own, { blockIntervalMs: 3000 });
      try {
        const to = receivingAddress('TRON', 'dated');
        own.advance(1000);
        const tx = timed.chains.transfer({ network: 'TRON', toAddress: to, amount: '5' });
        // Produced on the interval: the transfer's block at 09:00:03, the tip three blocks later.
        own.advance(11_000);
        const page = await callJson(timed.url, 'GET', '/chains/TRON/transfers');
        expect(page.body.transfers.map((t: any) => [t.tx_hash, t.block_time])).to.deep.equal([
          [tx.txHash, '2026-03-02T09:00:03.000Z'],
        ]);
        expect(page.body.tip_time).to.equal('2026-03-02T09:00:12.000Z');
        // Mined on request: the blocks are as of now, and block times never go back.
        own.advance(-5000);
        timed.chains.mine('TRON', 2);
        expect((await callJson(timed.url, 'GET', '/chains/TRON/transfers')).body.tip_time).to.equal(
          '2026-03-02T09:00:12.000Z',
        );
        own.advance(7000);
        const later = timed.chains.transfer({ network: 'TRON', toAddress: to, amount: '6' });
        timed.chains.mine('TRON');
        const next = await callJson(
          timed.url,
          'GET',
          `/chains/TRON/transfers?cursor=${page.body.next_cursor}`,
        );
        expect(next.body.transfers.map((t: any) => [t.tx_hash, t.block_time])).to.deep.equal([
          [later.txHash, '2026-03-02T09:00:14.000Z'],
        ]);
        expect(next.body.tip_time).to.equal('2026-03-02T09:00:14.000Z');
      } finally {
        await timed.close();
      }
    });
  });

  describe('sends (refunds out of the service’s hot wallet)', () => {
    const send = (network: string, reference: string, to: string, amount = '10') =>
      call('POST', `/chains/${network}/sends`, { reference, to_address: to, amount });

    it('are PENDING until the next block, then SUCCESSFUL, with the transaction hash', async () => {
      const sent = await send('TRON', 'refund-1', OUTSIDE_TRON, '99.5');
      expect(sent.status).to.equal(201);
      expect(sent.body).to.include({
        reference: 'refund-1',
        status: 'PENDING',
        failure_reason: null,
        to_address: OUTSIDE_TRON,
        amount: '99.5',
      });
      expect(sent.body.provider_reference).to.match(/^[0-9a-f]{64}$/);
      sandbox.chains.mine('TRON');
      const status = await call('GET', '/chains/TRON/sends/refund-1');
      expect(status.body).to.include({
        status: 'SUCCESSFUL',
        provider_reference: sent.body.provider_reference,
      });
    });

    it('are idempotent on the reference: a repeat returns the first send and moves nothing more', async () => {
      const first = await send('BSC', 'refund-2', OUTSIDE_BSC, '5');
      const again = await send('BSC', 'refund-2', OUTSIDE_BSC, '500');
      expect(again.status).to.equal(200);
      expect(again.body).to.deep.equal(first.body);
      expect(sandbox.chains.sends('BSC').filter((s) => s.reference === 'refund-2')).to.have.length(1);
    });

    it('fail when the address ends in 9999 or dead, in any case', async () => {
      for (const [reference, to] of [
        ['refund-dead', '0x000000000000000000000000000000000000dEaD'],
        ['refund-9999', '0x1111111111111111111111111111111111119999'],
      ]) {
        const sent = await send('BSC', reference!, to!);
        expect(sent.body).to.deep.include({
          status: 'FAILED',
          provider_reference: null,
          failure_reason: 'destination rejected by the network',
        });
      }
      const tron = await send('TRON', 'refund-tron-dead', 'TJRabPrwbZy45sbavfcjinPJC18kjpdead');
      expect(tron.body.status).to.equal('FAILED');
    });

    it('fail when the address belongs to another chain', async () => {
      const sent = await send('TRON', 'refund-wrong-chain', OUTSIDE_BSC);
      expect(sent.status).to.equal(201);
      expect(sent.body).to.include({ status: 'FAILED' });
      expect(sent.body.failure_reason).to.match(/not a TRON address/);
    });

    it('answer 404 for a reference the chain never saw, and 400 for a malformed send', async () => {
      const missing = await call('GET', '/chains/TRON/sends/never-sent');
      expect(missing.status).to.equal(404);
      expect(missing.body.error.code).to.equal('TRANSFER_NOT_FOUND');
      expect((await send('TRON', 'bad amount', OUTSIDE_TRON)).status).to.equal(400);
      expect((await send('TRON', 'refund-bad', OUTSIDE_TRON, 'ten')).status).to.equal(400);
    });
  });
});
