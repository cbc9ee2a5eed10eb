import { type EntityManager, LockMode } from '@mikro-orm/postgresql';
import type { Config } from '#src/config.ts';
import type { Secrets } from '#src/deps.ts';
import { OutboxEvent } from '#src/events/entities.ts';
import { AppError } from '#src/http/errors.ts';
import { newId } from '#src/lib/ids.ts';
import { Tenant } from '#src/tenants/entities.ts';
import { WebhookConfig } from './entities.ts';
import { WEBHOOK_TEST_EVENT, webhookTestPayload } from './events.ts';
import { generateSigningSecret, openSigningSecret, sealSigningSecret } from './secret.ts';
import { checkWebhookUrl, type HostResolver, systemResolver, urlPolicyOf } from './url-policy.ts';

/**
 * A tenant's webhook configuration: one row per tenant holding the default URL and the signing
 * secret, sealed with AES-256-GCM. A secret is issued with the first PUT (or the first rotation);
 * every PUT returns the secret in force, and one that changes the URL keeps it. Only a rotation
 * replaces it. GET never shows it.
 *
 * `secret_rotated_at` is set only when a rotation replaces a secret: the first secret dates from
 * `created_at`.
 */

/**
 * The URL as it will be stored and called, or 400 WEBHOOK_URL_INVALID naming `webhook_url`. A
 * host that does not resolve is accepted here (delivery checks again, and refuses it then).
 * Runs DNS: call it before opening the write transaction.
 */
export async function acceptWebhookUrl(
  config: Pick<Config, 'WEBHOOK_ALLOW_PRIVATE_URLS' | 'WEBHOOK_ALLOW_LOCALHOST'>,
  raw: string,
  resolve: HostResolver = systemResolver,
): Promise<string> {
  const verdict = await checkWebhookUrl(raw, {
    ...urlPolicyOf(config),
    resolve,
    unresolved: 'accept',
  });
  if (!verdict.ok)
    throw new AppError('WEBHOOK_URL_INVALID', { details: [{ field: 'webhook_url', issue: verdict.issue }] });
  return verdict.url;
}

/** The tenant's configuration, or null when it never configured webhooks. */
export async function findWebhookConfig(em: EntityManager, tenantId: string): Promise<WebhookConfig | null> {
  return em.findOne(WebhookConfig, { tenant: tenantId });
}

/**
 * Sets the default URL inside the write transaction and returns the tenant's signing secret in
 * clear: the one in force, which a URL change keeps, or a new one when none existed yet
 * (`issued`).
 */
export async function saveWebhookUrl(
  em: EntityManager,
  args: { tenantId: string; url: string; key: Buffer },
): Promise<{ row: WebhookConfig; secret: string; issued: boolean }> {
  const { tenant, row } = await lockedConfig(em, args.tenantId);
  if (row?.secretSealed) {
    row.url = args.url;
    await em.flush();
    return { row, secret: openSigningSecret(args.key, row.secretSealed), issued: false };
  }
  // Every configuration is created with a secret; a row without one (cleared by an operator)
  // gets a new one, under the next version.
  const secret = generateSigningSecret();
  const saved =
    row ?? em.create(WebhookConfig, { tenant, url: args.url, secretVersion: 0, secretRotatedAt: null });
  saved.url = args.url;
  saved.secretSealed = sealSigningSecret(args.key, secret);
  saved.secretVersion += 1;
  await em.flush();
  return { row: saved, secret, issued: true };
}

/**
 * Replaces the signing secret at once (no grace window: the old one stops verifying now) and
 * bumps the version. Without a configuration it creates one with no URL: per-payout
 * `notification_url` deliveries are signed with this secret too.
 */
export async function rotateSigningSecret(
  em: EntityManager,
  args: { tenantId: string; key: Buffer; now: Date },
): Promise<{ row: WebhookConfig; secret: string }> {
  const { tenant, row } = await lockedConfig(em, args.tenantId);
  const secret = generateSigningSecret();
  const sealed = sealSigningSecret(args.key, secret);
  if (!row) {
    const created = em.create(WebhookConfig, {
      tenant,
      url: null,
      secretSealed: sealed,
      secretVersion: 1,
      secretRotatedAt: null,
    });
    await em.flush();
    return { row: created, secret };
  }
  if (row.secretSealed) row.secretRotatedAt = args.now;
  row.secretSealed = sealed;
  row.secretVersion += 1;
  await em.flush();
  return { row, secret };
}

/** The current signing secret in clear with its version, or null when deliveries go unsigned. */
export async function currentSigningSecret(
  em: EntityManager,
  deps: { secrets: Pick<Secrets, 'encryptionKey'> },
  tenantId: string,
): Promise<{ secret: string; version: number } | null> {
  const row = await em.findOne(WebhookConfig, { tenant: tenantId }, { refresh: true });
  if (!row?.secretSealed) return null;
  return {
    secret: openSigningSecret(deps.secrets.encryptionKey, row.secretSealed),
    version: row.secretVersion,
  };
}

/** The tenant's signing secret in clear (for signing a delivery), or null when none is configured. */
export async function signingSecretFor(
  em: EntityManager,
  deps: { secrets: Pick<Secrets, 'encryptionKey'> },
  tenantId: string,
): Promise<string | null> {
  return (await currentSigningSecret(em, deps, tenantId))?.secret ?? null;
}

/**
 * Locks the tenant row for the rest of the transaction, then reads its configuration: two
 * concurrent first writes would otherwise both insert, and two rotations both succeed while
 * only one secret survives.
 */
async function lockedConfig(
  em: EntityManager,
  tenantId: string,
): Promise<{ tenant: Tenant; row: WebhookConfig | null }> {
  const tenant = await em.findOneOrFail(Tenant, tenantId, { lockMode: LockMode.PESSIMISTIC_WRITE });
  const row = await em.findOne(WebhookConfig, { tenant }, { refresh: true });
  return { tenant, row };
}

/**
 * Queues a test ping in the caller's transaction: a `webhook.test` event in the outbox, which the
 * webhooks job delivers to the tenant's URL like any other event (signed, retried, recorded).
 * Refused when the tenant has no webhook URL.
 */
export async function queueTestEvent(
  em: EntityManager,
  args: { tenantId: string; now: Date },
): Promise<{ event: OutboxEvent; url: string }> {
  const config = await findWebhookConfig(em, args.tenantId);
  if (!config?.url) {
    throw new AppError('WEBHOOK_URL_NOT_SET', {
      details: [{ field: 'webhook_url', issue: 'is not set: PUT /v1/webhooks/config first' }],
    });
  }
  const id = newId();
  const event = em.create(OutboxEvent, {
    id,
    tenant: args.tenantId,
    payoutId: null,
    eventType: WEBHOOK_TEST_EVENT,
    payload: webhookTestPayload(id, args.now),
    createdAt: args.now,
  });
  return { event, url: config.url };
}
