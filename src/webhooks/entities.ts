import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import { timestamps } from '#src/db/columns.ts';
import { Tenant } from '#src/tenants/entities.ts';

/** A tenant's webhook endpoint and signing secret (AES-256-GCM sealed, never stored in clear). */
export const WebhookConfig = defineEntity({
  name: 'WebhookConfig',
  tableName: 'webhook_configs',
  properties: {
    tenant: () => p.oneToOne(Tenant).primary().owner(),
    url: p.string().length(2048).nullable(),
    secretSealed: p.text().nullable(),
    /** Bumped on every rotation; deliveries record which version signed them. */
    secretVersion: p.integer().default(0),
    secretRotatedAt: p.datetime().nullable(),
    ...timestamps(),
  },
});
export type WebhookConfig = InferEntity<typeof WebhookConfig>;
