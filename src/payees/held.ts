import { statement } from '#src/db/sql.ts';

/**
 * One page of the payouts held by the payee name check (CREATED.payeeHeld), oldest first by
 * (created_at, id), after the position `$1, $2` (both null for the first page), `$3` rows: read
 * from `payouts_held_payee_index` (the same predicate, word for word).
 */
export const heldPayeePage = statement(
  'payouts_held_payee_page',
  `select p.id, p.tenant_id, t.name as tenant_name, p.destination_type, p.destination_provider_name,
          p.destination_amount::text, p.destination_currency, p.destination_account_name,
          p.payee_institution_name, p.payee_check, p.created_at, held.since as held_since
     from payouts p
     join tenants t on t.id = p.tenant_id
     cross join lateral (
       select max(l.created_at) as since from payout_status_timeline l
        where l.payout_id = p.id and l.reason_code = 'PAYEE_NAME_HELD') held
    where p.status = 'CREATED' and (p.snapshot->'value'->>'CREATED') = 'payeeHeld'
      and ($1::timestamptz is null or (p.created_at, p.id) > ($1::timestamptz, $2::uuid))
    order by p.created_at, p.id
    limit $3`,
);

export interface HeldPayeeRow {
  id: string;
  tenant_id: string;
  tenant_name: string;
  destination_type: string;
  destination_provider_name: string;
  destination_amount: string;
  destination_currency: string;
  destination_account_name: string | null;
  payee_institution_name: string | null;
  payee_check: 'PENDING' | 'MATCH' | 'CLOSE_MATCH' | 'NO_MATCH' | 'UNAVAILABLE' | null;
  created_at: string | Date;
  held_since: string | Date | null;
}
