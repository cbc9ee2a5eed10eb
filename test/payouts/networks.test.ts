import { expect } from 'chai';
import { NETWORK_STANDARDS } from '#src/corridors/corridors.ts';
import { openApiDocument } from '#src/http/openapi.ts';
import { appRouter } from '#src/router.ts';
import { call, errorOf, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import {
  confirmationsOf,
  getPayout,
  merchantInflows,
  mine,
  payoutWithInstruction,
  sandbox,
  settle,
} from '../settlement/fixtures.ts';
import { payoutReadyMerchant } from './fixtures.ts';

const TRON_ADDRESS = 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy';
const BSC_ADDRESS = '0x52908400098527886E0F7030069857D2E4169EE7';

const cryptoPayout = (providerName: string, overrides: Record<string, unknown> = {}) => ({
  destination_type: 'CRYPTO_WALLET',
  destination_country: 'GB',
  destination_currency: 'USDT',
  destination_amount: 25,
  destination_account_unique: providerName.toUpperCase().startsWith('B') ? BSC_ADDRESS : TRON_ADDRESS,
  destination_provider_name: providerName,
  ...overrides,
});

/** A network by its chain (TRON, BSC) or by USDT's token standard on it (TRC20, BEP20), wherever one is named. */
describe('network names: the chain and its token standard alike', () => {
  let merchant: Merchant;
  before(async () => {
    merchant = await payoutReadyMerchant();
  });

  describe('happy', () => {
    it('settles on the network settlement_network names, by either name; the instruction shows the standard', async () => {
      for (const [name, chain] of [
        ['TRC20', 'TRON'],
        ['BEP20', 'BSC'],
        ['BSC', 'BSC'],
      ] as const) {
        const { id } = await payoutWithInstruction(merchant, { settlement_network: name });
        const instruction = (await getPayout(merchant, id)).payment_instruction;
        expect(instruction.network, name).to.equal(NETWORK_STANDARDS[chain]);
        expect(instruction.account_unique, name).to.match(chain === 'TRON' ? /^T/ : /^0x/);
      }
    });

    it('pays a crypto wallet named by its token standard, in any case, and records the chain', async () => {
      for (const [name, chain] of [
        ['TRC20', 'TRON'],
        ['bep20', 'BSC'],
        ['tron', 'TRON'],
      ] as const) {
        const res = await call('POST', '/v1/payouts', { key: merchant.key, body: cryptoPayout(name) });
        expect(res.status, res.text).to.equal(201);
        expect(res.body.destination_provider_name).to.equal(chain);
      }
    });

    it('takes a refund destination on TRC20 or BEP20 and names its chain', async () => {
      for (const [name, chain, address] of [
        ['TRC20', 'TRON', TRON_ADDRESS],
        ['BEP20', 'BSC', BSC_ADDRESS],
      ] as const) {
        const res = await call('PUT', '/v1/refund-destinations', {
          key: merchant.key,
          body: { currency: 'USDT', type: 'CRYPTO_ADDRESS', network: name, address },
        });
        expect(res.status, res.text).to.equal(200);
        expect(res.body.network).to.equal(chain);
      }
    });

    it('lets the merchant pay the sandbox with the instruction’s own network value', async () => {
      const { id, instruction } = await payoutWithInstruction(merchant, { settlement_network: 'TRON' });
      const payout = await getPayout(merchant, id);
      expect(payout.payment_instruction.network).to.equal('TRC20');
      const sent = await sandbox('/sandbox/crypto/transfers', {
        network: payout.payment_instruction.network,
        to_address: instruction.account_unique,
        amount: instruction.expected,
        currency: 'USDT',
      });
      expect(sent.status, sent.text).to.equal(201);
      expect(sent.body.network).to.equal('TRON');
      // The chain's path segment takes the standard too.
      const blocks = await sandbox('/sandbox/chains/trc20/blocks', { count: 1 });
      expect(blocks.status, blocks.text).to.equal(200);
      expect(blocks.body.network).to.equal('TRON');
      await mine('TRON', confirmationsOf('TRON'));
      await settle();
      expect((await getPayout(merchant, id)).status).to.equal('PAYMENT_RECEIVED');
      const inflow = (await merchantInflows(merchant)).find((i) => i.payout_id === id);
      // Inflows keep naming the chain, as they always have.
      expect(inflow.network).to.equal('TRON');
    });

    it('says so in the OpenAPI document, wherever a request names a network', () => {
      const doc = openApiDocument(appRouter, { baseUrl: harness().url }) as {
        components: { schemas: Record<string, { enum?: string[]; properties?: Record<string, any> }> };
      };
      const schemas = doc.components.schemas;
      expect(schemas.NetworkName!.enum).to.deep.equal(['TRON', 'TRC20', 'BSC', 'BEP20']);
      expect(schemas.CryptoWalletPayoutRequest!.properties!.destination_provider_name.enum).to.deep.equal([
        'TRON',
        'TRC20',
        'BSC',
        'BEP20',
      ]);
      // Responses keep naming the chain.
      expect(schemas.Network!.enum).to.deep.equal(['TRON', 'BSC']);
    });
  });

  describe('error', () => {
    it('refuses a network that is neither, listing the names it takes', async () => {
      const wallet = await call('POST', '/v1/payouts', { key: merchant.key, body: cryptoPayout('ERC20') });
      expect(wallet.status, wallet.text).to.equal(400);
      expect(errorOf(wallet).details).to.deep.include({
        field: 'destination_provider_name',
        issue: 'must be the network, TRON, TRC20, BSC, BEP20, for CRYPTO_WALLET',
      });
      const settlement = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: cryptoPayout('TRON', { settlement_network: 'ERC20' }),
      });
      expect(settlement.status, settlement.text).to.equal(400);
      expect(errorOf(settlement).details).to.deep.equal([
        { field: 'settlement_network', issue: 'must be one of TRON, TRC20, BSC, BEP20' },
      ]);
      const sent = await sandbox('/sandbox/crypto/transfers', {
        network: 'ERC20',
        to_address: TRON_ADDRESS,
        amount: '1',
        currency: 'USDT',
      });
      expect(sent.status, sent.text).to.equal(400);
      expect(sent.text).to.include('TRC20');
    });

    it('checks the address against the network either name stands for', async () => {
      const wallet = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: cryptoPayout('TRC20', { destination_account_unique: BSC_ADDRESS }),
      });
      expect(wallet.status, wallet.text).to.equal(400);
      expect(errorOf(wallet).details.map((d) => d.field)).to.deep.equal(['destination_account_unique']);
      const destination = await call('PUT', '/v1/refund-destinations', {
        key: merchant.key,
        body: { currency: 'USDT', type: 'CRYPTO_ADDRESS', network: 'BEP20', address: TRON_ADDRESS },
      });
      expect(destination.status, destination.text).to.equal(400);
      expect(errorOf(destination).details.map((d) => d.field)).to.deep.equal(['address']);
    });
  });
});
