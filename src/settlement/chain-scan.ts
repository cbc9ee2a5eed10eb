import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '#src/config.ts';
import type { Network } from '#src/corridors/corridors.ts';
import type { Deps } from '#src/deps.ts';
import { newId } from '#src/lib/ids.ts';
import type { ChainTransfer } from '#src/providers/rails.ts';

/**
 * Chain scanning: reads each network's transfers into the service's addresses after the
 * persisted cursor, records each one exactly once as a PENDING_CONFIRMATION inflow, and counts
 * confirmations from the tip until the network's required number moves the inflow to CONFIRMED.
 * Matching (`matching.ts`) takes it from there.
 */

/** Transfers asked for per page; one page is one transaction. */
export const SCAN_PAGE_SIZE = 200;
/** Pages read per network and run, so that one run never scans for ever behind a busy chain. */
const MAX_PAGES_PER_RUN = 50;

/** Confirmations a transfer on `network` needs before it counts (CONFIRMATIONS_TRON / _BSC). */
export function confirmationsRequired(config: Config, network: Network): number {
  switch (network) {
    case 'TRON':
      return config.CONFIRMATIONS_TRON;
    case 'BSC':
      return config.CONFIRMATIONS_BSC;
  }
}

/** One spelling per address: BSC addresses are hex and compare case-insensitively (EIP-55). */
export function canonicalAddress(network: Network, address: string): string {
  return network === 'BSC' ? address.toLowerCase() : address;
}

/** What one scan of one network did. */
export interface ChainScan {
  network: Network;
  /** False when another instance held the network's cursor: it is scanning right now. */
  scanned: boolean;
  /** Transfers recorded as new inflows (a transfer seen before is never recorded again). */
  recorded: number;
  /** Inflows that reached their required confirmations in this scan. */
  confirmed: number;
  tip: number | null;
}

/** How long one instance may hold a network's scan before another may take it over. */
const SCAN_LEASE_MS = 60_000;

/**
 * Scans `network` from its cursor to the chain's present, a page at a time. The network's cursor
 * row is leased (a token and an expiry, set in a short transaction), so two instances never scan
 * one network at once and no transaction stays open while the chain is asked; each page's
 * inflows are saved with the new cursor and tip in one transaction that first checks the lease
 * is still ours. A crash mid-way re-reads the page once the lease lapses, and the unique
 * (rail, external_ref) index makes the re-read record nothing twice.
 */
export async function scanChain(
  deps: Deps,
  network: Network,
  options: { pageSize?: number; maxPages?: number } = {},
): Promise<ChainScan> {
  const pageSize = options.pageSize ?? SCAN_PAGE_SIZE;
  const scan: ChainScan = { network, scanned: false, recorded: 0, confirmed: 0, tip: null };
  const em = deps.orm.em.fork();
  const lease = await takeLease(deps, em, network);
  if (!lease) return scan;
  try {
    let cursor = lease.cursor;
    for (let page = 0; page < (options.maxPages ?? MAX_PAGES_PER_RUN); page++) {
      const listed = await deps.rails.chains.listTransfers(network, { cursor, limit: pageSize });
      const step = await em.transactional((tx) => savePage(deps, tx, network, lease.token, cursor, listed));
      if (!step) break;
      scan.scanned = true;
      scan.recorded += step.recorded;
      scan.confirmed += step.confirmed;
      scan.tip = listed.tip;
      const more = listed.transfers.length >= pageSize && step.cursor !== cursor;
      cursor = step.cursor;
      if (!more) break;
    }
  } finally {
    await em.execute(
      'update chain_cursors set lease_token = null, lease_until = null where network = ? and lease_token = ?',
      [network, lease.token],
    );
  }
  return scan;
}

/** Leases the network's cursor row, creating it on first use; null when another instance holds it. */
async function takeLease(
  deps: Deps,
  em: EntityManager,
  network: Network,
): Promise<{ token: string; cursor: string | null } | null> {
  const now = deps.clock.now();
  await em.execute(
    `insert into chain_cursors (network, cursor, tip, created_at, updated_at)
     values (?, null, 0, ?, ?) on conflict (network) do nothing`,
    [network, now, now],
  );
  const token = newId();
  const [leased] = await em.execute<{ cursor: string | null }[]>(
    // SKIP LOCKED: a row being saved by the lease holder right now is simply not ours to take.
    `update chain_cursors set lease_token = ?, lease_until = ?, updated_at = ?
      where network = (select network from chain_cursors
                        where network = ? and (lease_until is null or lease_until < ?)
                        for update skip locked)
      returning cursor`,
    [token, new Date(now.getTime() + SCAN_LEASE_MS), now, network, now],
  );
  return leased ? { token, cursor: leased.cursor } : null;
}

/**
 * Saves one listed page: the new inflows, the cursor and the tip, and the confirmations the tip
 * brings, in the caller's transaction. Null when the lease was lost (another instance took over
 * after it lapsed): nothing is written, that instance re-reads the page.
 */
async function savePage(
  deps: Deps,
  tx: EntityManager,
  network: Network,
  token: string,
  from: string | null,
  listed: { transfers: readonly ChainTransfer[]; nextCursor: string | null; tip: number },
): Promise<{ recorded: number; confirmed: number; cursor: string | null } | null> {
  const now = deps.clock.now();
  const [held] = await tx.execute<{ network: string }[]>(
    'select network from chain_cursors where network = ? and lease_token = ? for update',
    [network, token],
  );
  if (!held) return null;
  const recorded = await recordTransfers(deps, tx, network, listed.transfers, listed.tip, now);
  const cursor = listed.nextCursor ?? from;
  await tx.execute(
    'update chain_cursors set cursor = ?, tip = ?, lease_until = ?, updated_at = ? where network = ?',
    [cursor, listed.tip, new Date(now.getTime() + SCAN_LEASE_MS), now, network],
  );
  const confirmed = await countConfirmations(tx, network, listed.tip, now);
  return { recorded, confirmed, cursor };
}

/**
 * Records the page's transfers into the tenants' deposit addresses, once each (insert ... on
 * conflict do nothing), and returns how many were new. A transfer to an address the service has
 * no deposit address for names no tenant and cannot be recorded; it is logged for operations.
 */
async function recordTransfers(
  deps: Deps,
  tx: EntityManager,
  network: Network,
  transfers: readonly ChainTransfer[],
  tip: number,
  now: Date,
): Promise<number> {
  if (transfers.length === 0) return 0;
  const wanted = [...new Set(transfers.map((t) => canonicalAddress(network, t.toAddress)))];
  const column = network === 'BSC' ? 'lower(address)' : 'address';
  const owners = await tx.execute<{ tenant_id: string; address: string }[]>(
    `select tenant_id, address from deposit_addresses
      where network = ? and ${column} in (${wanted.map(() => '?').join(', ')})`,
    [network, ...wanted],
  );
  const byAddress = new Map(owners.map((o) => [canonicalAddress(network, o.address), o]));
  const required = confirmationsRequired(deps.config, network);
  let recorded = 0;
  for (const transfer of transfers) {
    const owner = byAddress.get(canonicalAddress(network, transfer.toAddress));
    if (!owner) {
      deps.log.warn(
        {
          network,
          tx_hash: transfer.txHash,
          to_address: transfer.toAddress,
          amount: transfer.amount.toFixed(),
        },
        'transfer to an address that is no deposit address of ours; not recorded',
      );
      continue;
    }
    const inserted = await tx.execute<{ id: string }[]>(
      `insert into inflows (id, tenant_id, rail, provider_name, network, amount, currency, external_ref,
         to_account, payer_name, payer_account, block_number, confirmations_received, confirmations_required,
         state, is_matched, is_underpaid, overpayment_amount, created_at, updated_at)
       values (?, ?, 'CRYPTO', ?, ?, ?, 'USDT', ?, ?, null, ?, ?, ?, ?, 'PENDING_CONFIRMATION', false, false, 0, ?, ?)
       on conflict (rail, external_ref) do nothing
       returning id`,
      [
        newId(),
        owner.tenant_id,
        `USDT on ${network}`,
        network,
        transfer.amount.toFixed(),
        transfer.txHash,
        // The address as the service spells it, so that it equals the instructions' account_unique.
        owner.address,
        transfer.fromAddress,
        transfer.blockNumber,
        Math.max(0, tip - transfer.blockNumber + 1),
        required,
        now,
        now,
      ],
    );
    recorded += inserted.length;
  }
  return recorded;
}

/**
 * Brings `confirmations_received` of the network's PENDING_CONFIRMATION inflows up to the tip and
 * moves those that reached their required confirmations to CONFIRMED (the one edge of the inflow
 * state table written in bulk). Counts never go down: a tip that seems lower (a provider lagging
 * behind another) changes nothing. Returns how many became CONFIRMED.
 */
async function countConfirmations(
  tx: EntityManager,
  network: Network,
  tip: number,
  now: Date,
): Promise<number> {
  const rows = await tx.execute<{ state: string }[]>(
    `update inflows
        set confirmations_received = greatest(confirmations_received, ?::int - block_number + 1),
            state = case when ?::int - block_number + 1 >= confirmations_required then 'CONFIRMED' else state end,
            updated_at = ?
      where rail = 'CRYPTO' and network = ? and state = 'PENDING_CONFIRMATION'
        and (?::int - block_number + 1 > confirmations_received
             or ?::int - block_number + 1 >= confirmations_required)
      returning state`,
    [tip, tip, now, network, tip, tip],
  );
  return rows.filter((r) => r.state === 'CONFIRMED').length;
}
