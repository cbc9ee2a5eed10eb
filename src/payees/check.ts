import type { DestinationType } from '#src/corridors/corridors.ts';
import type { Deps } from '#src/deps.ts';
import { within } from '#src/lib/within.ts';
import { matchPayeeName, type PayeeCheck, type PayeePolicy, type PayeeVerdict } from './name-match.ts';

/**
 * The payee name check (docs/payee-check.md): the name a merchant gave for a bank or mobile-money
 * beneficiary against the name the institution holds, through the directory's name enquiry (its
 * cache first). At creation it waits `PAYEE_CHECK_WAIT_MS` at most; an answer that comes later, or
 * a look-up that failed, leaves the check PENDING, and the instruction job completes it before it
 * issues the instruction (`completePayeeChecks`).
 */

/** A payout's check as it is stored. */
export interface PayeeCheckState {
  check: PayeeCheck;
  /** The institution's name for the account; null until it answered, and when it knows no such account. */
  institutionName: string | null;
  checkedAt: Date | null;
}

/** What the check needs of a payout. */
export interface PayeeSubject {
  destinationType: DestinationType;
  currency: string;
  accountNumber: string;
  providerCode: string | null;
  accountName: string | null;
}

/** Whether a payout is checked at all: bank and mobile-money beneficiaries that have a name. */
export function payeeCheckApplies(subject: PayeeSubject): boolean {
  return (
    subject.destinationType !== 'CRYPTO_WALLET' &&
    subject.providerCode !== null &&
    subject.accountName !== null
  );
}

const PENDING: PayeeCheckState = { check: 'PENDING', institutionName: null, checkedAt: null };

/** The directory's name enquiry for a subject. */
function enquiryOf(subject: PayeeSubject) {
  return {
    destinationType: subject.destinationType,
    currency: subject.currency,
    accountNumber: subject.accountNumber,
    providerCode: subject.providerCode ?? '',
  };
}

/** Verdicts by name pair: the matcher is pure, and a merchant pays the same payees again and again. */
const verdicts = new Map<string, PayeeVerdict>();
const MAX_VERDICTS = 10_000;

function verdictOn(given: string, held: string): PayeeVerdict {
  // Length-prefixed: no two pairs share a key, whatever characters the names hold.
  const key = `${given.length}:${given}${held}`;
  let verdict = verdicts.get(key);
  if (verdict === undefined) {
    verdict = matchPayeeName(given, held);
    if (verdicts.size >= MAX_VERDICTS) verdicts.clear();
    verdicts.set(key, verdict);
  }
  return verdict;
}

/** The check once the institution answered (`found`: its name for the account, or null). */
function checkOf(
  subject: PayeeSubject,
  found: { accountName: string } | null,
  checkedAt: Date,
): PayeeCheckState {
  // An institution that knows no such account holds no name that could match.
  if (!found) return { check: 'NO_MATCH', institutionName: null, checkedAt };
  return {
    check: verdictOn(subject.accountName ?? '', found.accountName),
    institutionName: found.accountName.slice(0, 200),
    checkedAt,
  };
}

/** Asks the institution (the cache first) and gives the verdict; throws when the look-up fails. */
async function lookUp(deps: Deps, subject: PayeeSubject): Promise<PayeeCheckState> {
  const found = await deps.providers.directory.nameEnquiry(enquiryOf(subject));
  return checkOf(subject, found, deps.clock.now());
}

/**
 * The check at creation: the verdict when the institution answers within `PAYEE_CHECK_WAIT_MS`,
 * else PENDING (the look-up goes on and fills the cache for the job). Null when no check applies.
 */
export async function checkPayeeAtCreate(deps: Deps, subject: PayeeSubject): Promise<PayeeCheckState | null> {
  if (!payeeCheckApplies(subject)) return null;
  // An answer at hand (the directory's cache) needs neither a wait nor its timer.
  const known = deps.providers.directory.knownName?.(enquiryOf(subject));
  if (known !== undefined) return checkOf(subject, known, deps.clock.now());
  const asked = lookUp(deps, subject);
  // A failure after the wait is nobody's business here: the job asks again.
  asked.catch(() => {});
  try {
    const answer = await within(asked, deps.config.PAYEE_CHECK_WAIT_MS);
    return answer.late ? PENDING : answer.value;
  } catch {
    return PENDING;
  }
}

/** The check completed later, by the job: a failed look-up is UNAVAILABLE, never a wait without end. */
export async function checkPayeeLater(deps: Deps, subject: PayeeSubject): Promise<PayeeCheckState> {
  try {
    return await lookUp(deps, subject);
  } catch {
    return { check: 'UNAVAILABLE', institutionName: null, checkedAt: deps.clock.now() };
  }
}

/**
 * What a check means for the payout under its tenant's policy: go on, hold it for an operator,
 * or refuse it. Only a NO_MATCH is held or refused; a check that could not be made is held under
 * both `hold` and `refuse` (an operator decides rather than refusing a name that may be right).
 */
export function payeeDecision(policy: PayeePolicy, check: PayeeCheck | null): 'proceed' | 'hold' | 'refuse' {
  if (policy === 'allow' || check === null || check === 'MATCH' || check === 'CLOSE_MATCH') return 'proceed';
  if (check === 'NO_MATCH') return policy;
  // PENDING reaches here only if the job did not complete it; UNAVAILABLE is a person's call.
  return 'hold';
}
