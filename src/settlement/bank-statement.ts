import type { Deps } from '#src/deps.ts';
import type { BankCredit, BankDebit, BankReversal } from '#src/providers/rails.ts';
import { recordBankCredits } from './bank-credits.ts';
import { type RailRead, readRail } from './rail-reader.ts';

/**
 * The pull behind the bank's push: the bank notifies each credit to a virtual account, and a
 * notification can be lost (the service down longer than the bank's retries, a network fault).
 * Every BANK_STATEMENT_INTERVAL_MS the settlement job reads the bank's statement of credits from
 * its leased cursor, as it reads the chains, and records each credit once by its session id; the
 * same pass then matches them like any inflow. A credit whose notification did arrive is already
 * recorded, and reading it again changes nothing.
 */

type StatementLine = BankCredit | BankReversal | BankDebit;

const isCredit = (line: StatementLine): line is BankCredit => 'payerName' in line;

/** Credits asked for per page; one page is one transaction. */
export const STATEMENT_PAGE_SIZE = 200;
/** Pages read per pass, so that one pass never reads for ever behind a busy bank. */
const MAX_PAGES_PER_RUN = 50;

/** Reads the bank's statement from its cursor if a read is due and no other instance is reading it. */
export async function pullBankStatement(
  deps: Deps,
  options: { pageSize?: number; maxPages?: number } = {},
): Promise<RailRead> {
  return readRail<StatementLine>(
    deps,
    {
      source: 'BANK',
      intervalMs: deps.config.BANK_STATEMENT_INTERVAL_MS,
      async list(cursor, limit) {
        const page = await deps.rails.bank.listCredits({ cursor, limit });
        // Reversals and debits (refunds sent) are lines of the statement too (so a full page is
        // known to be full), but record no inflow: reconciliation compares them (`src/reconciliation/`).
        const lines: StatementLine[] = [...page.credits, ...page.reversals, ...page.debits].sort(
          (a, b) => a.occurredAt.getTime() - b.occurredAt.getTime(),
        );
        return { items: lines, nextCursor: page.nextCursor, asOf: page.asOf };
      },
      timeOf: (line) => line.occurredAt,
      async save(tx, page, now) {
        const credits = page.items.filter(isCredit);
        const { recorded } = await recordBankCredits(tx, credits, now, deps.log);
        if (recorded > 0) {
          deps.log.info({ recorded }, 'bank statement: credits whose notification never came recorded');
        }
        return recorded;
      },
    },
    { pageSize: options.pageSize ?? STATEMENT_PAGE_SIZE, maxPages: options.maxPages ?? MAX_PAGES_PER_RUN },
  );
}
