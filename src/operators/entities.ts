import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import { idColumn, timestamps } from '#src/db/columns.ts';
import { ROLES } from './roles.ts';

/**
 * The bootstrap operator: whoever presents `ADMIN_TOKEN`. A row like any other (audit rows and
 * proposals name it), created by the migration, with no token of its own: the configured token
 * is checked instead, so rotating ADMIN_TOKEN needs no database change.
 */
export const ROOT_OPERATOR_ID = '00000000-0000-7000-8000-000000000001';
export const ROOT_OPERATOR_NAME = 'root';

/**
 * A named person (or tool) of operations with a role. Its token is shown once, when it is
 * created; only its SHA-256 is kept, as for API keys. Revoked operators stay as rows: the audit
 * trail and the proposals they made still name them.
 */
export const Operator = defineEntity({
  name: 'Operator',
  tableName: 'operators',
  indexes: [
    {
      name: 'operators_active_name_unique',
      expression:
        'create unique index "operators_active_name_unique" on "operators" (lower("name")) where "revoked_at" is null',
    },
  ],
  properties: {
    id: idColumn(),
    name: p.string().length(100),
    role: p.enum(ROLES),
    /** The first characters of the token, to tell tokens apart; null for root. */
    tokenPrefix: p.string().length(32).nullable(),
    /** SHA-256 of the token; null for root, whose token is ADMIN_TOKEN. */
    tokenHash: p.string().length(64).unique().nullable(),
    createdBy: p.uuid().nullable(),
    revokedAt: p.datetime().nullable(),
    revokedBy: p.uuid().nullable(),
    ...timestamps(),
  },
});
export type Operator = InferEntity<typeof Operator>;
