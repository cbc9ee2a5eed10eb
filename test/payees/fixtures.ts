import { expect } from 'chai';
import { runInstructionsOnce } from '#src/instructions/job.ts';
import { call, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { cliAs } from '../operators/fixtures.ts';
import { bankPayout, payoutReadyMerchant } from '../payouts/fixtures.ts';

/** An account the sandbox holds under another name than the fixtures' ADAEZE OKONKWO. */
export const OTHER_NAME_ACCOUNT = '0234567891';

/** A merchant ready for payouts, with a payee name policy. */
export async function merchantWithPolicy(policy: 'allow' | 'hold' | 'refuse'): Promise<Merchant> {
  const merchant = await payoutReadyMerchant();
  if (policy !== 'allow') await cliAs()('tenant', 'payee-policy', merchant.tenantId, '--policy', policy);
  return merchant;
}

/** A payout held by the payee name check (CREATED.payeeHeld), under a `hold` merchant's policy. */
export async function payeeHeldPayout(
  merchant?: Merchant,
): Promise<{ merchant: Merchant; payoutId: string }> {
  const owner = merchant ?? (await merchantWithPolicy('hold'));
  const res = await call('POST', '/v1/payouts', {
    key: owner.key,
    body: bankPayout({ destination_account_unique: OTHER_NAME_ACCOUNT }),
  });
  expect(res.status, res.text).to.equal(201);
  await runInstructionsOnce(harness().service.deps);
  const held = await call('GET', `/v1/payouts/${res.body.id}`, { key: owner.key });
  expect(held.body.status_timeline.at(-1).reason_code).to.equal('PAYEE_NAME_HELD');
  return { merchant: owner, payoutId: res.body.id };
}
