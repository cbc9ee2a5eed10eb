import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import { idColumn } from '#src/db/columns.ts';

/**
 * One `admin.*` call that changed something: who, what, on which objects, with which arguments
 * (secrets left out), how it ended, under which request id, and when. Written in the transaction
 * of the change it records and never changed afterwards: the table refuses UPDATE and DELETE, and
 * TRUNCATE of it or of any of its partitions (triggers of its migrations), so not even the service
 * can rewrite it.
 */
export const AuditEntry = defineEntity({
  name: 'AuditEntry',
  tableName: 'audit',
  indexes: [
    { name: 'audit_operator_created_idx', properties: ['operatorId', 'createdAt', 'id'] },
    { name: 'audit_created_idx', properties: ['createdAt', 'id'] },
    {
      name: 'audit_target_ids_idx',
      expression: 'create index "audit_target_ids_idx" on "audit" using gin ("target_ids")',
    },
  ],
  triggers: [
    {
      name: 'audit_immutable',
      timing: 'before',
      events: ['update', 'delete'],
      forEach: 'row',
      body: "raise exception 'the audit trail is immutable: % refused', tg_op;",
    },
  ],
  properties: {
    id: idColumn(),
    operatorId: p.uuid(),
    /** The operator's name at the time: a revoked operator's rows still read as who it was. */
    operatorName: p.string().length(100),
    operatorRole: p.string().length(16),
    /** The procedure's path, such as `admin.settlement.attribute`. */
    action: p.string().length(100),
    /** Ids of the objects the call concerned (payout, inflow, refund, tenant, key, operator, approval...). */
    targetIds: p.array().$type<string[]>(),
    /** The call's input, with secrets replaced by `[redacted]`. */
    arguments: p.json<Record<string, unknown>>(),
    /** `OK`, or what the call ended as when it is not plain success (`PENDING`, `FAILED`, `NO_DESTINATION`...). */
    outcome: p.string().length(64),
    requestId: p.string().length(128),
    // Part of the key: the table is partitioned by month of created_at (src/db/partitions.ts), and
    // no month is ever dropped.
    createdAt: p.datetime().primary(),
  },
});
export type AuditEntry = InferEntity<typeof AuditEntry>;
