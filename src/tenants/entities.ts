import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import { idColumn, timestamps } from '#src/db/columns.ts';
import { PAYEE_POLICIES } from '#src/payees/name-match.ts';

export const Tenant = defineEntity({
  name: 'Tenant',
  tableName: 'tenants',
  indexes: [
    {
      // Names are unique ignoring case and surrounding spaces (TENANT_NAME_TAKEN).
      name: 'tenants_name_unique',
      expression: 'create unique index "tenants_name_unique" on "tenants" (lower(btrim("name")))',
    },
    {
      // At most one demo tenant per database, however many instances start at once.
      name: 'tenants_one_demo',
      expression: 'create unique index "tenants_one_demo" on "tenants" ("is_demo") where "is_demo"',
    },
  ],
  properties: {
    id: idColumn(),
    name: p.string().length(200),
    /** KYC/KYB approval: only approved tenants may create payouts. */
    payoutsApproved: p.boolean().default(false),
    /** What a payout whose payee name does not match the institution's becomes (src/payees). */
    payeeNamePolicy: p.enum(PAYEE_POLICIES).default('allow'),
    /** The demo tenant of a local start (`DEMO_TENANT`); never a real merchant. */
    isDemo: p.boolean().default(false),
    ...timestamps(),
  },
});
export type Tenant = InferEntity<typeof Tenant>;

export const ApiKey = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: {
    id: idColumn(),
    tenant: () => p.manyToOne(Tenant).index(),
    /** The first characters of the key, shown to operators to tell keys apart. */
    prefix: p.string().length(32),
    /** SHA-256 of the whole key: the key itself is never stored. */
    hash: p.string().length(64).unique(),
    scopes: p.array(),
    revokedAt: p.datetime().nullable(),
    lastUsedAt: p.datetime().nullable(),
    ...timestamps(),
  },
});
export type ApiKey = InferEntity<typeof ApiKey>;
