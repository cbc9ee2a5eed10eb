import { NETWORKS } from '#src/corridors/corridors.ts';
import { type Sql, statement } from '#src/db/sql.ts';
import type { Deps } from '#src/deps.ts';
import { dayEnd, dayOf, dayStart } from '#src/lib/days.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import type { Movement } from './compare.ts';
import type { ReconRail } from './entities.ts';

/**
 * The two sides a run compares, read for one UTC day: the rail's own record (read over HTTP,
 * outside any transaction) and the books (the service's record of the same movements). Rail
 * accounts are named as the ledger names them: `collection:bank` for the bank's virtual accounts
 * together, `collection:crypto:<network>:<address>` per deposit address, `transit:processor:<name>`.
 */

const PAGE = 500;

/** What a rail's record says about a day, and whether that day is over at the rail. */
export interface RailRecord {
  movements: Movement[];
  complete: boolean;
  /**
   * Everything the rail has ever shown arriving on each collection account (its whole record,
   * reversals taken off), by account and currency; empty for the processor.
   */
  balances: Map<string, { currency: string; amount: Decimal }>;
}

function addTo(balances: RailRecord['balances'], account: string, currency: string, amount: Decimal): void {
  const before = balances.get(account);
  balances.set(account, { currency, amount: before ? before.amount.plus(amount) : amount });
}

/** Reads the rail's own record of `day`. */
export async function readRail(deps: Deps, rail: ReconRail, day: string): Promise<RailRecord> {
  switch (rail) {
    case 'BANK_TRANSFER':
      return readStatement(deps, day);
    case 'CRYPTO':
      return readChains(deps, day);
    case 'PROCESSOR':
      return readSettlementReport(deps, day);
  }
}

const inDay = (at: Date, day: string) => dayOf(at) === day;

/** The bank's statement: its credits of the day, and its reversals of the day (of credits of any day). */
async function readStatement(deps: Deps, day: string): Promise<RailRecord> {
  const movements: Movement[] = [];
  const balances: RailRecord['balances'] = new Map();
  let cursor: string | null = null;
  let asOf = new Date(0);
  for (;;) {
    const page = await deps.rails.bank.listCredits({ cursor, limit: PAGE });
    asOf = page.asOf;
    for (const c of page.credits) {
      addTo(balances, 'collection:bank', c.currency, c.amount);
      if (!inDay(c.occurredAt, day)) continue;
      movements.push({
        account: 'collection:bank',
        ledgerAccount: `collection:bank:${c.accountNumber}`,
        reference: c.sessionId,
        amount: c.amount,
        currency: c.currency,
        state: 'CREDITED',
        inPeriod: true,
      });
    }
    for (const r of page.reversals) {
      addTo(balances, 'collection:bank', r.currency, r.amount.negated());
      if (!inDay(r.occurredAt, day)) continue;
      // Compared with the credit it takes back; not counted as money of the day.
      movements.push({
        account: 'collection:bank',
        ledgerAccount: `collection:bank:${r.accountNumber}`,
        reference: r.reversesSessionId,
        amount: r.amount,
        currency: r.currency,
        state: 'REVERSED',
        inPeriod: false,
      });
    }
    if (page.lines < PAGE || page.nextCursor === null || page.nextCursor === cursor) break;
    cursor = page.nextCursor;
  }
  return { movements, complete: asOf >= dayEnd(day), balances };
}

/** Each chain's mined transfers of the day into the service's deposit addresses. */
async function readChains(deps: Deps, day: string): Promise<RailRecord> {
  const movements: Movement[] = [];
  const balances: RailRecord['balances'] = new Map();
  let complete = true;
  for (const network of NETWORKS) {
    let cursor: string | null = null;
    let tipTime = new Date(0);
    for (;;) {
      const page = await deps.rails.chains.listTransfers(network, { cursor, limit: PAGE });
      tipTime = page.tipTime;
      for (const t of page.transfers) {
        if (t.blockNumber > page.tip) continue;
        const account = `collection:crypto:${network}:${t.toAddress}`;
        addTo(balances, account, t.currency, t.amount);
        if (!inDay(t.blockTime, day)) continue;
        movements.push({
          account,
          reference: t.txHash,
          amount: t.amount,
          currency: t.currency,
          state: 'CREDITED',
          inPeriod: true,
        });
      }
      if (page.transfers.length < PAGE || page.nextCursor === null || page.nextCursor === cursor) break;
      cursor = page.nextCursor;
    }
    if (tipTime < dayEnd(day)) complete = false;
  }
  return { movements, complete, balances };
}

/** The processor's settlement report of the day. */
async function readSettlementReport(deps: Deps, day: string): Promise<RailRecord> {
  const processor = deps.rails.processor;
  const movements: Movement[] = [];
  let cursor: string | null = null;
  let complete = false;
  for (;;) {
    const page = await processor.settlementReport(day, { cursor, limit: PAGE });
    complete = page.complete;
    for (const p of page.payouts) {
      movements.push({
        account: `transit:processor:${processor.name}`,
        reference: p.reference,
        amount: p.amount,
        currency: p.currency,
        state: p.status,
        // A payout settled earlier and returned today is compared, not counted as today's money.
        inPeriod: inDay(p.settledAt, day),
      });
    }
    if (page.nextCursor === null) break;
    cursor = page.nextCursor;
  }
  return { movements, complete, balances: new Map() };
}

// The books of a day. A movement the rail lists outside the day (a reversal of an older credit,
// a return of an older payout) is looked up by its reference as well.

const inflowBooks = statement(
  'recon_inflow_books',
  `select id, tenant_id, payout_id, external_ref, amount::text, currency, network, to_account,
          (arrived_at >= $1 and arrived_at < $2) as in_period
     from inflows
    where rail = $4
      and ((arrived_at >= $1 and arrived_at < $2) or external_ref = any($3::text[]))`,
);

// An outflow is final on the day it succeeded (settled_at) or failed (its last change: a
// terminal outflow never changes again).
const processorBooks = statement(
  'recon_processor_books',
  `select id, tenant_id, payout_id, processor, status, destination_amount::text as amount,
          destination_currency as currency,
          ((status = 'SUCCESSFUL' and settled_at >= $1 and settled_at < $2)
            or (status = 'FAILED' and updated_at >= $1 and updated_at < $2)) as in_period
     from outflows
    where (status = 'SUCCESSFUL' and settled_at >= $1 and settled_at < $2)
       or (status = 'FAILED' and updated_at >= $1 and updated_at < $2)
       or id = any($3::uuid[])`,
);

// The same books, of the references given only: what a run reads again on the primary when the
// replica's answer differs from the rail (src/reconciliation/service.ts).
const inflowBooksOf = statement(
  'recon_inflow_books_of',
  `select id, tenant_id, payout_id, external_ref, amount::text, currency, network, to_account,
          (arrived_at >= $1 and arrived_at < $2) as in_period
     from inflows
    where rail = $4 and external_ref = any($3::text[])`,
);

const processorBooksOf = statement(
  'recon_processor_books_of',
  `select id, tenant_id, payout_id, processor, status, destination_amount::text as amount,
          destination_currency as currency,
          ((status = 'SUCCESSFUL' and settled_at >= $1 and settled_at < $2)
            or (status = 'FAILED' and updated_at >= $1 and updated_at < $2)) as in_period
     from outflows
    where id = any($3::uuid[])`,
);

interface InflowRow {
  id: string;
  tenant_id: string;
  payout_id: string | null;
  external_ref: string;
  amount: string;
  currency: string;
  network: string | null;
  to_account: string;
  in_period: boolean;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The books' movements of `day` on `rail`, and those of the references the rail listed; with
 * `only`, the movements of those references alone (in or out of the day).
 */
export async function readBooks(
  sql: Sql,
  rail: ReconRail,
  day: string,
  railRefs: readonly string[],
  only = false,
): Promise<Movement[]> {
  const args = [dayStart(day), dayEnd(day)];
  const inflows = only ? inflowBooksOf : inflowBooks;
  switch (rail) {
    case 'BANK_TRANSFER': {
      const rows = await sql.rows<InflowRow>(inflows, [...args, [...railRefs], rail]);
      return rows.map((r) => ({
        ...inflowMovement(r, 'collection:bank'),
        ledgerAccount: `collection:bank:${r.to_account}`,
      }));
    }
    case 'CRYPTO': {
      const rows = await sql.rows<InflowRow>(inflows, [...args, [...railRefs], rail]);
      return rows.map((r) => inflowMovement(r, `collection:crypto:${r.network}:${r.to_account}`));
    }
    case 'PROCESSOR': {
      const ids = railRefs.filter((ref) => UUID.test(ref));
      const rows = await sql.rows<{
        id: string;
        tenant_id: string;
        payout_id: string;
        processor: string;
        status: string;
        amount: string;
        currency: string;
        in_period: boolean;
      }>(only ? processorBooksOf : processorBooks, [...args, ids]);
      return rows.map((r) => ({
        account: `transit:processor:${r.processor}`,
        reference: r.id,
        amount: toDecimal(r.amount),
        currency: r.currency,
        state: r.status === 'SUCCESSFUL' || r.status === 'FAILED' ? r.status : 'IN_FLIGHT',
        inPeriod: r.in_period,
        tenantId: r.tenant_id,
        payoutId: r.payout_id,
        outflowId: r.id,
      }));
    }
  }
}

function inflowMovement(r: InflowRow, account: string): Movement {
  return {
    account,
    reference: r.external_ref,
    amount: toDecimal(r.amount),
    currency: r.currency,
    state: 'CREDITED',
    inPeriod: r.in_period,
    tenantId: r.tenant_id,
    payoutId: r.payout_id,
    inflowId: r.id,
  };
}
