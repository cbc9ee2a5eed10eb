import { useQuery } from '@tanstack/react-query';
import { api } from './api.ts';
import { Money, NoteAction, useCan } from './ui.tsx';

/**
 * On a SUCCESSFUL payout's page: the overpayment it set aside for the merchant and still holds in
 * the merchant's overpayments account (from its ledger entries), with the button that proposes
 * returning it to the merchant's refund destination (`overpayment.return`, four eyes).
 */
export function OverpaymentReturn({ payoutId }: { payoutId: string }) {
  const canPropose = useCan('operator');
  const ledger = useQuery({
    queryKey: ['admin.ledger.payout', payoutId],
    queryFn: () => api.admin.ledger.payout.query({ payout_id: payoutId }),
  });
  // Amounts as the server wrote them: a balance of exactly zero is "0".
  const owed = (ledger.data?.set_aside ?? []).filter((s) => !/^-|^0$/.test(s.amount));
  if (owed.length === 0) return null;
  return (
    <div className="overpayment" data-testid="overpayment">
      <p>
        Overpayment set aside for the merchant, not yet returned:{' '}
        {owed.map((s) => (
          <Money key={s.currency} amount={s.amount} currency={s.currency} />
        ))}
      </p>
      {canPropose ? (
        <NoteAction
          actionKey={`return-overpayment:${payoutId}`}
          testId="propose-return-overpayment"
          label="Propose returning the overpayment"
          done="Proposed: a second operator approves it"
          placeholder="Note (required): why the overpayment goes back now"
          run={(note) => api.admin.refunds.returnOverpayment.mutate({ payout_id: payoutId, note })}
        />
      ) : null}
    </div>
  );
}
