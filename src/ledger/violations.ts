import { defineEntity, type EntityManager, type InferEntity, p } from '@mikro-orm/postgresql';
import { idColumn } from '#src/db/columns.ts';

/**
 * What a check of the ledger found out of balance (`./checks.ts`): open until a later check no
 * longer finds it. The open ones are the "Out of balance" exception queue.
 */
export const LedgerViolation = defineEntity({
  name: 'LedgerViolationRow',
  tableName: 'ledger_violations',
  indexes: [
    {
      // One open violation per check and subject; the queue's count and age read it.
      name: 'ledger_violations_open_unique',
      expression:
        'create unique index "ledger_violations_open_unique" on "ledger_violations" ("check", "subject") where "resolved_at" is null',
    },
    {
      name: 'ledger_violations_open_index',
      expression:
        'create index "ledger_violations_open_index" on "ledger_violations" ("first_seen_at") where "resolved_at" is null',
    },
  ],
  properties: {
    id: idColumn(),
    check: p.string().length(64),
    /** What is out of balance: a payout's id, `tenant:currency`, an account. */
    subject: p.string().length(200),
    tenantId: p.uuid().nullable(),
    detail: p.json<Record<string, unknown>>(),
    firstSeenAt: p.datetime(),
    lastSeenAt: p.datetime(),
    resolvedAt: p.datetime().nullable(),
  },
});
export type LedgerViolation = InferEntity<typeof LedgerViolation>;

/** The open violations, oldest first, as operators read them. */
export async function openViolations(em: EntityManager, limit: number) {
  const rows = await em.find(
    LedgerViolation,
    { resolvedAt: null },
    { orderBy: { firstSeenAt: 'asc', id: 'asc' }, limit },
  );
  return rows.map((v) => ({
    id: v.id,
    check: v.check,
    subject: v.subject,
    tenant_id: v.tenantId ?? null,
    detail: v.detail,
    first_seen_at: v.firstSeenAt.toISOString(),
    last_seen_at: v.lastSeenAt.toISOString(),
  }));
}
