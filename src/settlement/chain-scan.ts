import type { Config } from '#src/config.ts';
import type { Network } from '#src/corridors/corridors.ts';
import { columnsOf, type Sql, statement } from '#src/db/sql.ts';
import type { Deps } from '#src/deps.ts';
import { post } from '#src/ledger/ledger.ts';
import { arrivalTime } from '#src/lib/clock.ts';
import { newId } from '#src/lib/ids.ts';
import { toDecimal } from '#src/lib/money.ts';
import type { ChainTransfer } from '#src/providers/rails.ts';
import { type InflowMachineRow, newInflow, stepInflowOrThrow } from './lifecycle.ts';
import { inflowLedger } from './money.ts';
import { readRail } from './rail-reader.ts';

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

/**
 * Scans `network` from its cursor to the chain's present, a page at a time, through the rail's
 * leased cursor (`rail-reader.ts`): two instances never scan one network at once, and each
 * page's inflows are saved with the new cursor, the tip and the time the chain is now read
 * through (the tip block's time, or the last transfer's on a full page) in one transaction.
 */
export async function scanChain(
  deps: Deps,
  network: Network,
  options: { pageSize?: number; maxPages?: number } = {},
): Promise<ChainScan> {
  let confirmed = 0;
  let tip: number | null = null;
  const read = await readRail<ChainTransfer>(
    deps,
    {
      source: network,
      intervalMs: null,
      async list(cursor, limit) {
        const listed = await deps.rails.chains.listTransfers(network, { cursor, limit });
        return {
          items: listed.transfers,
          nextCursor: listed.nextCursor,
          asOf: listed.tipTime,
          tip: listed.tip,
        };
      },
      timeOf: (transfer) => transfer.blockTime,
      async save(tx, page, now) {
        tip = page.tip ?? 0;
        const recorded = await recordTransfers(deps, tx, network, page.items, tip, now);
        confirmed += await countConfirmations(tx, network, tip, now);
        return recorded;
      },
    },
    { pageSize: options.pageSize ?? SCAN_PAGE_SIZE, maxPages: options.maxPages ?? MAX_PAGES_PER_RUN },
  );
  return { network, scanned: read.read, recorded: read.recorded, confirmed, tip };
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
       state, snapshot, is_matched, is_underpaid, overpayment_amount, arrived_at, created_at, updated_at)
   select t.id, t.tenant_id, 'CRYPTO', $1, $2, t.amount, 'USDT', t.external_ref, t.to_account, null,
          t.payer_account, t.block_number, t.confirmations, $3, $14, $15::jsonb, false, false, 0,
          t.arrived_at, $4, $4
     from unnest($5::uuid[], $6::uuid[], $7::numeric[], $8::text[], $9::text[], $10::text[], $11::int[],
                 $12::int[], $13::timestamptz[])
          as t(id, tenant_id, amount, external_ref, to_account, payer_account, block_number, confirmations,
               arrived_at)
    order by t.id
   on conflict (rail, external_ref, tenant_id) do nothing
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
  const rows: unknown[][] = [];
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
    rows.push([
      newId(),
      owner.tenant_id,
      transfer.amount.toFixed(),
      transfer.txHash,
      // The address as the service spells it, so that it equals the instructions' account_unique.
      owner.address,
      transfer.fromAddress,
      transfer.blockNumber,
      Math.max(0, tip - transfer.blockNumber + 1),
      arrivalTime(transfer.blockTime, now),
    ]);
  }
  if (seen.size === 0) return 0;
  const required = confirmationsRequired(deps.config, network);
  // Every transfer starts where the machine starts it; the confirmations below move it on.
  const start = newInflow({ confirmationsRequired: required });
  const inserted = await tx.rows<{ id: string }>(insertInflows, [
    `USDT on ${network}`,
    network,
    required,
    now,
    ...columnsOf(rows, 9),
    start.state,
    JSON.stringify(start.snapshot),
  ]);
  return inserted.length;
}

// Counts never go down: a tip that seems lower (a provider lagging behind another) changes nothing.
// Returned: the inflows that now have their required confirmations, for the machine to confirm.
const countConfirmationsTo = statement(
  'chain_scan_count_confirmations',
  `with counted as (
     update inflows
        set confirmations_received = greatest(confirmations_received, $1::int - block_number + 1), updated_at = $2
      where rail = 'CRYPTO' and network = $3 and state = 'PENDING_CONFIRMATION'
        and ($1::int - block_number + 1 > confirmations_received
             or $1::int - block_number + 1 >= confirmations_required)
      returning id, tenant_id, to_account, amount, currency, state, snapshot, confirmations_received,
                confirmations_required
   )
   select id, tenant_id, to_account, amount, currency, state, snapshot, confirmations_received from counted
    where confirmations_received >= confirmations_required`,
);

// One JSON array of `[id, state, snapshot, tenant_id]` rows, as the instructions' and payouts'
// steps are written: each row found by its primary key.
const writeInflowSteps = statement(
  'chain_scan_confirm',
  `update inflows f set state = u->>1, snapshot = u->2, updated_at = $2
     from jsonb_array_elements($1::jsonb) as u
    where f.id = (u->>0)::uuid and f.tenant_id = (u->>3)::uuid`,
);

/**
 * Brings `confirmations_received` of the network's PENDING_CONFIRMATION inflows up to the tip, and
 * sends CONFIRMATIONS to those that reached their required number, which the machine moves to
 * CONFIRMED. Returns how many became CONFIRMED.
 */
async function countConfirmations(tx: Sql, network: Network, tip: number, now: Date): Promise<number> {
  const reached = await tx.rows<
    InflowMachineRow & {
      confirmations_received: number;
      tenant_id: string;
      to_account: string;
      amount: string;
      currency: string;
    }
  >(countConfirmationsTo, [tip, now, network]);
  const steps = reached.map((inflow) => ({
    inflow,
    done: stepInflowOrThrow(inflow, { type: 'CONFIRMATIONS', received: inflow.confirmations_received, now }),
  }));
  if (steps.length > 0) {
    await tx.rows(writeInflowSteps, [
      JSON.stringify(steps.map((s) => [s.inflow.id, s.done.to, s.done.snapshot, s.inflow.tenant_id])),
      now,
    ]);
    // Confirmed, the money counts: one ledger transaction per inflow, in one statement.
    await post(
      tx,
      steps.flatMap(({ inflow, done }) =>
        inflowLedger(
          {
            id: inflow.id,
            tenantId: inflow.tenant_id,
            rail: 'CRYPTO',
            network,
            toAccount: inflow.to_account,
            amount: toDecimal(inflow.amount),
            currency: inflow.currency,
            payoutId: null,
          },
          done,
          'CONFIRMATIONS',
          now,
        ),
      ),
    );
  }
  return steps.length;
}
