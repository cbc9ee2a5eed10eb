/**
 * The merchant client of the payout API: `PayoutClient` (one typed method per operation,
 * pagination, typed errors, retries with the same Idempotency-Key), the API's models and webhook
 * events (`api.ts`, generated from the OpenAPI document), and `verifyWebhook`.
 */
export * from './api.ts';
export {
  type ClientOptions,
  type PageItem,
  PayoutApiError,
  PayoutClient,
  PayoutTransportError,
} from './client.ts';
export {
  DEFAULT_TOLERANCE_SECONDS,
  type HeaderBag,
  type VerificationFailure,
  verifyWebhook,
  type WebhookVerification,
} from './webhooks.ts';
