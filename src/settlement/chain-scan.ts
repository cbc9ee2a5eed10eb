import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '#src/config.ts';
import type { Network } from '#src/corridors/corridors.ts';
import { type Sql, statement } from '#src/db/sql.ts';
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
      const step = await deps.sql.transaction((tx) =>
        savePage(deps, tx, network, lease.token, cursor, listed),
      );
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

const holdLease = statement(
  'chain_scan_hold_lease',
  'select network from chain_cursors where network = $1 and lease_token = $2 for update',
);

const moveCursor = statement(
  'chain_scan_move_cursor',
  'update chain_cursors set cursor = $2, tip = $3, lease_until = $4, updated_at = $5 where network = $1',
);

/**
 * Saves one listed page: the new inflows, the cursor and the tip, and the confirmations the tip
 * brings, in the caller's transaction. Null when the lease was lost (another instance took over
 * after it lapsed): nothing is written, that instance re-reads the page.
 */
async function savePage(
  deps: Deps,
  tx: Sql,
  network: Network,
  token: string,
  from: string | null,
  listed: { transfers: readonly ChainTransfer[]; nextCursor: string | null; tip: number },
): Promise<{ recorded: number; confirmed: number; cursor: string | null } | null> {
  const now = deps.clock.now();
  const [held] = await tx.rows(holdLease, [network, token]);
  if (!held) return null;
  const recorded = await recordTransfers(deps, tx, network, listed.transfers, listed.tip, now);
  const cursor = listed.nextCursor ?? from;
  await tx.rows(moveCursor, [network, cursor, listed.tip, new Date(now.getTime() + SCAN_LEASE_MS), now]);
  const confirmed = await countConfirmations(tx, network, listed.tip, now);
  return { recorded, confirmed, cursor };
}

const ownersByAddress = statement(
  'chain_scan_owners',
  'select tenant_id, address from deposit_addresses where network = $1 and address = any($2::text[])',
);
// BSC addresses are hex, compared case-insensitively.
const ownersByHexAddress = statement(
  'chain_scan_owners_hex',
  'select tenant_id, address from deposit_addresses where network = $1 and lower(address) = any($2::text[])',
);

// Listing order is kept in the ids (time-ordered), which is the order matching meets the money in.
const insertInflows = statement(
  'chain_scan_insert_inflows',
  `insert into inflows (id, tenant_id, rail, provider_name, network, amount, currency, external_ref,
       to_account, payer_name, payer_account, block_number, confirmations_received, confirmations_required,
       state, is_matched, is_underpaid, overpayment_amount, created_at, updated_at)
   select t.id, t.tenant_id, 'CRYPTO', $1, $2, t.amount, 'USDT', t.external_ref, t.to_account, null,
          t.payer_account, t.block_number, t.confirmations, $3, 'PENDING_CONFIRMATION', false, false, 0, $4, $4
     from unnest($5::uuid[], $6::uuid[], $7::numeric[], $8::text[], $9::text[], $10::text[], $11::int[],
                 $12::int[])
          as t(id, tenant_id, amount, external_ref, to_account, payer_account, block_number, confirmations)
    order by t.id
   on conflict (rail, external_ref) do nothing
   returning id`,
);

/**
 * Records the page's transfers into the tenants' deposit addresses, once each (insert ... on
 * conflict do nothing, one statement for the page), and returns how many were new. A transfer
 * to an address the service has no deposit address for names no tenant and cannot be recorded;
 * it is logged for operations.
 */
async function recordTransfers(
  deps: Deps,
  tx: Sql,
  network: Network,
  transfers: readonly ChainTransfer[],
  tip: number,
  now: Date,
): Promise<number> {
  if (transfers.length === 0) return 0;
  const wanted = [...new Set(transfers.map((t) => canonicalAddress(network, t.toAddress)))];
  const owners = await tx.rows<{ tenant_id: string; address: string }>(
    network === 'BSC' ? ownersByHexAddress : ownersByAddress,
    [network, wanted],
  );
  const byAddress = new Map(owners.map((o) => [canonicalAddress(network, o.address), o]));
  const rows: unknown[][] = [[], [], [], [], [], [], [], []];
  const seen = new Set<string>();
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
    // A transfer listed twice in one page is one transfer.
    if (seen.has(transfer.txHash)) continue;
    seen.add(transfer.txHash);
    const row = [
      newId(),
      owner.tenant_id,
      transfer.amount.toFixed(),
      transfer.txHash,
      // The address as the service spells it, so that it equals the instructions' account_unique.
      owner.address,
      transfer.fromAddress,
      transfer.blockNumber,
      Math.max(0, tip - transfer.blockNumber + 1),
    ];
    for (let i = 0; i < row.length; i++) rows[i]!.push(row[i]);
  }
  if (seen.size === 0) return 0;
  const inserted = await tx.rows<{ id: string }>(insertInflows, [
    `USDT on ${network}`,
    network,
    confirmationsRequired(deps.config, network),
    now,
    ...rows,
  ]);
  return inserted.length;
}

const confirm = statement(
  'chain_scan_confirm',
  `update inflows
      set confirmations_received = greatest(confirmations_received, $1::int - block_number + 1),
          state = case when $1::int - block_number + 1 >= confirmations_required then 'CONFIRMED' else state end,
          updated_at = $2
    where rail = 'CRYPTO' and network = $3 and state = 'PENDING_CONFIRMATION'
      and ($1::int - block_number + 1 > confirmations_received
           or $1::int - block_number + 1 >= confirmations_required)
    returning state`,
);

/**
 * Brings `confirmations_received` of the network's PENDING_CONFIRMATION inflows up to the tip and
 * moves those that reached their required confirmations to CONFIRMED (the one edge of the inflow
 * state table written in bulk). Counts never go down: a tip that seems lower (a provider lagging
 * behind another) changes nothing. Returns how many became CONFIRMED.
 */
async function countConfirmations(tx: Sql, network: Network, tip: number, now: Date): Promise<number> {
  const rows = await tx.rows<{ state: string }>(confirm, [tip, now, network]);
  return rows.filter((r) => r.state === 'CONFIRMED').length;
}
