/**
 * The closed catalogue of error codes the API can answer with, each bound to one HTTP status.
 * `docs/errors.md` documents the same list; a test keeps the two in step.
 */
export const ERROR_CATALOGUE = {
  VALIDATION_FAILED: { status: 400, message: 'The request is invalid; see details.' },
  INVALID_CURSOR: { status: 400, message: 'The cursor is not one this API issued for this list.' },
  IDEMPOTENCY_KEY_REQUIRED: { status: 400, message: 'This write needs an Idempotency-Key header.' },
  IDEMPOTENCY_KEY_INVALID: { status: 400, message: 'Idempotency-Key must be a UUID v4.' },
  WEBHOOK_URL_INVALID: { status: 400, message: 'The webhook URL is not acceptable.' },
  UNAUTHENTICATED: { status: 401, message: 'A valid X-API-Key header is required.' },
  INSUFFICIENT_SCOPES: { status: 403, message: 'The API key lacks the scope this operation needs.' },
  TENANT_NOT_APPROVED: { status: 403, message: 'The tenant is not approved for payouts (KYC/KYB pending).' },
  ADMIN_UNAUTHORIZED: {
    status: 401,
    message: 'A valid admin bearer token (an operator token, or ADMIN_TOKEN) is required.',
  },
  CALLBACK_SIGNATURE_INVALID: {
    status: 401,
    message: 'The provider callback signature is missing, stale or wrong.',
  },
  OPERATOR_ROLE_REQUIRED: { status: 403, message: 'This needs an operator with the role operator or above.' },
  APPROVER_ROLE_REQUIRED: { status: 403, message: 'This needs an operator with the role approver or above.' },
  ADMIN_ROLE_REQUIRED: { status: 403, message: 'This needs an operator with the role admin.' },
  SELF_APPROVAL_FORBIDDEN: {
    status: 403,
    message: 'The proposer of a money move cannot approve it: a second operator must.',
  },
  NOT_FOUND: { status: 404, message: 'The resource does not exist.' },
  ROUTE_NOT_FOUND: { status: 404, message: 'No such endpoint.' },
  PAYOUT_NOT_FOUND: { status: 404, message: 'The payout does not exist.' },
  PAYMENT_INSTRUCTION_NOT_FOUND: {
    status: 404,
    message: 'The payment instruction has not been generated yet.',
  },
  QUOTE_NOT_FOUND: { status: 404, message: 'The quote does not exist.' },
  OUTFLOW_NOT_FOUND: { status: 404, message: 'The outflow does not exist.' },
  INFLOW_NOT_FOUND: { status: 404, message: 'The inflow does not exist.' },
  REFUND_NOT_FOUND: { status: 404, message: 'The refund does not exist.' },
  OPERATOR_NOT_FOUND: { status: 404, message: 'The operator does not exist.' },
  DELIVERY_NOT_FOUND: { status: 404, message: 'The webhook delivery does not exist.' },
  APPROVAL_NOT_FOUND: { status: 404, message: 'The proposal does not exist.' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'The endpoint does not accept this method.' },
  QUOTE_EXPIRED: { status: 409, message: 'The quote has expired; request a new one.' },
  QUOTE_NOT_ACCEPTABLE: { status: 409, message: 'The quote can no longer be accepted.' },
  APPROVAL_NOT_PENDING: {
    status: 409,
    message: 'The proposal was already decided (approved, rejected, failed or expired).',
  },
  APPROVAL_ALREADY_PENDING: {
    status: 409,
    message:
      'A proposal of the same action on the same target is already PENDING; decide or withdraw it first.',
  },
  APPROVAL_ACTION_FAILED: {
    status: 409,
    message: 'The approved action is no longer possible; the proposal is FAILED and nothing moved.',
  },
  OPERATOR_NAME_TAKEN: {
    status: 409,
    message: 'An operator that is not revoked already has this name (root is reserved).',
  },
  TENANT_NAME_TAKEN: { status: 409, message: 'A tenant with this name exists already.' },
  DELIVERY_NOT_DEAD: { status: 409, message: 'Only a DEAD webhook delivery can be sent again.' },
  WEBHOOK_URL_NOT_SET: {
    status: 409,
    message: 'No webhook URL is configured: set one with PUT /v1/webhooks/config.',
  },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'The request body is larger than 1 MiB.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'Request bodies must be application/json.' },
  IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    message: 'This Idempotency-Key was already used for a different request.',
  },
  REFUND_DESTINATION_REQUIRED: {
    status: 422,
    message: 'Register a refund destination for the settlement currency before creating payouts.',
  },
  BANK_ACCOUNT_VERIFICATION_FAILED: {
    status: 422,
    message: 'The bank could not verify the account; nothing was saved.',
  },
  ACCOUNT_NOT_FOUND: { status: 422, message: 'The institution has no account with that number.' },
  CORRIDOR_NOT_SUPPORTED: {
    status: 422,
    message: 'The currency pair or destination is not a supported corridor.',
  },
  PROVIDER_CODE_UNKNOWN: {
    status: 422,
    message: 'destination_provider_code is not an institution of this corridor; read it from GET /v1/banks.',
  },
  QUOTE_MISMATCH: { status: 422, message: 'The quote does not match this payout.' },
  PAYEE_NAME_MISMATCH: {
    status: 422,
    message:
      "destination_account_name does not match the name the institution holds for the account, and this tenant's policy refuses such payouts; nothing was created.",
  },
  RATE_LIMITED: { status: 429, message: 'Too many requests; slow down and retry after the indicated delay.' },
  METHOD_NOT_IMPLEMENTED: { status: 501, message: 'The service implements no such method.' },
  INTERNAL_ERROR: {
    status: 500,
    message: 'Something went wrong on our side. Quote the request id to support.',
  },
  UPSTREAM_UNAVAILABLE: {
    status: 503,
    message: 'An upstream provider is unavailable; retry with the same Idempotency-Key.',
  },
  NOT_READY: {
    status: 503,
    message: 'The service cannot serve yet: its database is unreachable or not fully migrated.',
  },
  SERVICE_UNAVAILABLE: {
    status: 503,
    message:
      'The service lost its connection to its database; retry after Retry-After seconds (a write with the same Idempotency-Key).',
  },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/** One offending input: `field` is the snake_case path of the field, `issue` what is wrong. */
export interface ErrorDetail {
  field: string;
  issue: string;
}

/** The spec's error envelope. */
export interface ErrorEnvelope {
  error: { code: ErrorCode; message: string; details: ErrorDetail[]; request_id: string };
}

/**
 * The one exception type handlers throw for an expected failure. Anything else that escapes
 * a handler is an internal error: logged with the request id, answered with a generic 500.
 */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetail[];
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    options: { message?: string; details?: ErrorDetail[]; headers?: Record<string, string> } = {},
  ) {
    super(options.message ?? ERROR_CATALOGUE[code].message);
    this.name = 'AppError';
    this.code = code;
    this.details = options.details ?? [];
    this.headers = options.headers ?? {};
  }

  get status(): number {
    return ERROR_CATALOGUE[this.code].status;
  }
}

/** Shorthand for a 400 naming one field. */
export function invalidField(field: string, issue: string): AppError {
  return new AppError('VALIDATION_FAILED', { details: [{ field, issue }] });
}

export function envelope(error: AppError, requestId: string): ErrorEnvelope {
  return {
    error: { code: error.code, message: error.message, details: error.details, request_id: requestId },
  };
}
