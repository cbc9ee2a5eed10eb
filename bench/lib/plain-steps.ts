import type pg from 'pg';

/**
 * What the plain baselines write after a payout's status change: one outbox event per payout
 * (the payout as it now is, less its snapshot) and the payout's next task, due now. The
 * settlement and dispatch baselines both call it, in the transaction of the change.
 */
export async function insertEventsAndTasks(
  client: pg.PoolClient,
  payoutIds: string[],
  eventType: string,
  taskKind: string,
): Promise<void> {
  await client.query(
    `insert into outbox_events (id, tenant_id, payout_id, event_type, payload, created_at)
     select gen_random_uuid(), p.tenant_id, p.id, $2::text,
            jsonb_build_object('event_type', $2::text, 'status', p.status, 'data', to_jsonb(p) - 'snapshot')::text,
            now()
       from payouts p where p.id = any($1)`,
    [payoutIds, eventType],
  );
  await client.query(
    `insert into tasks (id, kind, subject_id, due_at, attempts, created_at, updated_at)
     select gen_random_uuid(), $2::text, id, now(), 0, now(), now() from unnest($1::uuid[]) as id`,
    [payoutIds, taskKind],
  );
}
