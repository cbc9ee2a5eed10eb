import { callbackRoute } from '#src/http/callbacks.ts';
import { bankCreditBody, creditOfNotice, recordBankCredit } from './bank-credits.ts';
import { matchInflow } from './matching.ts';

/**
 * `POST /callbacks/bank`: a credit to one of the service's virtual accounts. Recorded in one
 * transaction and matched right away in a second, so that an NGN payout moves on without waiting
 * for the settlement job. If matching fails the answer is 500 and the bank retries; the retry
 * records nothing twice and finishes the match (the job would too). A notification that never
 * comes is made up for by the bank's statement, which the settlement job reads.
 */
export const bankCreditCallback = callbackRoute({
  path: '/callbacks/bank',
  body: bankCreditBody,
  async handle(deps, body, { log }) {
    const inflow = await recordBankCredit(deps, creditOfNotice(body), log);
    if (inflow) await matchInflow(deps, inflow);
  },
});
