import type { Network } from '#src/corridors/corridors.ts';

/**
 * What an address looks like on each chain the service settles on. Format only, no checksum:
 * the sandbox's magic addresses (ending in `dead` or `9999`) are made up by hand.
 */
const ADDRESS_PATTERNS = {
  TRON: /^T[1-9A-HJ-NP-Za-km-z]{33}$/,
  BSC: /^0x[0-9a-fA-F]{40}$/,
} as const satisfies Record<Network, RegExp>;

/** How each network's addresses are written, for error messages. */
export const ADDRESS_FORMATS = {
  TRON: 'T followed by 33 base58 characters',
  BSC: '0x followed by 40 hex digits',
} as const satisfies Record<Network, string>;

/** Whether `address` is well-formed for `network`. */
export function isChainAddress(network: Network, address: string): boolean {
  return ADDRESS_PATTERNS[network].test(address);
}
