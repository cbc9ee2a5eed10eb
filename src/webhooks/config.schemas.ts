import { z } from 'zod';
import { iso, timestampOut } from '#src/http/schemas.ts';
import type { WebhookConfig } from './entities.ts';

export const webhookConfigIn = z
  .strictObject({
    webhook_url: z
      .string()
      .describe(
        'HTTPS URL that receives the events (plain http only for localhost and 127.0.0.1, where the deployment allows local test URLs); at most 2048 characters, no credentials, no private addresses.',
      ),
  })
  .meta({ id: 'WebhookConfigRequest' });

const configFields = {
  webhook_url: z.string().nullable().describe('The default URL events are sent to; null until one is set.'),
  has_secret: z
    .boolean()
    .describe('Whether deliveries are signed. The secret itself is never returned here.'),
  secret_version: z
    .number()
    .int()
    .describe('1 for the first secret, incremented by each rotation; 0 when there is none.'),
  secret_rotated_at: timestampOut
    .nullable()
    .describe('When the current secret replaced a previous one; null if never rotated.'),
  created_at: timestampOut.nullable(),
  updated_at: timestampOut.nullable(),
};

/** `GET /v1/webhooks/config`: never carries the secret. */
export const webhookConfigOut = z.object(configFields).meta({
  id: 'WebhookConfig',
  description: 'Where events are sent and whether they are signed; never the secret itself.',
});
export type WebhookConfigOut = z.infer<typeof webhookConfigOut>;

/** `PUT /v1/webhooks/config` and rotation: the configuration plus the secret in force. */
export const webhookConfigWithSecretOut = z
  .object({
    signing_secret: z
      .string()
      .describe(
        'The signing secret in force (whsec_...): issued by the first PUT, kept by later PUTs (a URL change does not ' +
          'rotate it), replaced by each rotation. Never returned by GET.',
      ),
    ...configFields,
  })
  .meta({
    id: 'WebhookConfigWithSecret',
    description: 'The webhook configuration with the signing secret in force.',
  });
export type WebhookConfigWithSecretOut = z.infer<typeof webhookConfigWithSecretOut>;

/** The configuration as the API shows it; `null` (no configuration yet) reads as an empty one. */
export function toWebhookConfigOut(row: WebhookConfig | null): WebhookConfigOut {
  // Keys in schema order: the first response and its idempotent replay must be the same bytes.
  return {
    webhook_url: row?.url ?? null,
    has_secret: !!row?.secretSealed,
    secret_version: row?.secretSealed ? row.secretVersion : 0,
    secret_rotated_at: iso(row?.secretRotatedAt),
    created_at: iso(row?.createdAt),
    updated_at: iso(row?.updatedAt),
  };
}

/** The configuration with the secret in force. */
export function toWebhookConfigWithSecretOut(
  row: WebhookConfig,
  signingSecret: string,
): WebhookConfigWithSecretOut {
  return { signing_secret: signingSecret, ...toWebhookConfigOut(row) };
}

/** What `POST /v1/webhooks/config/test` queued. */
export const webhookTestOut = z
  .object({
    event_id: z.string().describe('The event sent: find its attempts in GET /v1/webhooks/deliveries.'),
    event_type: z.literal('webhook.test'),
    created_at: timestampOut,
    webhook_url: z.string().describe('Where it goes: the configured webhook URL.'),
  })
  .meta({ id: 'WebhookTest', description: 'A test event on its way to the webhook URL.' });
