import { IdempotencyRecord } from '#src/idempotency/entities.ts';
import { Quote } from '#src/quotes/entities.ts';
import { RefundDestination } from '#src/refund-destinations/entities.ts';
import { ApiKey, Tenant } from '#src/tenants/entities.ts';
import { WebhookConfig } from '#src/webhooks/entities.ts';

/** Every entity of the service; the ORM and the migration generator read this list. */
export const entities = [Tenant, ApiKey, IdempotencyRecord, Quote, RefundDestination, WebhookConfig];
