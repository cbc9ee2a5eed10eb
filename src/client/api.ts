// Generated from the OpenAPI document by `npm run docs` (src/docs/client.ts). Do not edit.

/** The version of the API these types describe (the document's `info.version`). */
export const API_VERSION = '1.0';

/** The closed list of error codes of this API; each has one HTTP status (see each operation). ROUTE_NOT_FOUND (404) and METHOD_NOT_ALLOWED (405, with an Allow header) answer a path that is no operation, or a method the path does not take. */
export type ErrorCode = 'VALIDATION_FAILED' | 'INVALID_CURSOR' | 'IDEMPOTENCY_KEY_REQUIRED' | 'IDEMPOTENCY_KEY_INVALID' | 'WEBHOOK_URL_INVALID' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'TENANT_NOT_APPROVED' | 'ROUTE_NOT_FOUND' | 'PAYOUT_NOT_FOUND' | 'PAYMENT_INSTRUCTION_NOT_FOUND' | 'QUOTE_NOT_FOUND' | 'OUTFLOW_NOT_FOUND' | 'INFLOW_NOT_FOUND' | 'REFUND_NOT_FOUND' | 'METHOD_NOT_ALLOWED' | 'QUOTE_EXPIRED' | 'QUOTE_NOT_ACCEPTABLE' | 'WEBHOOK_URL_NOT_SET' | 'PAYLOAD_TOO_LARGE' | 'UNSUPPORTED_MEDIA_TYPE' | 'IDEMPOTENCY_KEY_REUSED' | 'REFUND_DESTINATION_REQUIRED' | 'BANK_ACCOUNT_VERIFICATION_FAILED' | 'ACCOUNT_NOT_FOUND' | 'CORRIDOR_NOT_SUPPORTED' | 'PROVIDER_CODE_UNKNOWN' | 'QUOTE_MISMATCH' | 'PAYEE_NAME_MISMATCH' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'UPSTREAM_UNAVAILABLE' | 'SERVICE_UNAVAILABLE';

export interface ErrorDetail {
  /** The offending field (snake_case path), header or `body`. */
  field: string;
  /** What is wrong with it. */
  issue: string;
}

/** The error envelope of every 4xx and 5xx response. */
export interface ErrorEnvelope {
  error: {
    code: ErrorCode;
    message: string;
    details: ErrorDetail[];
    /** The X-Request-Id of the request. */
    request_id: string;
  };
}

/** A payout request; which fields are required depends on destination_type. */
export type CreatePayoutRequest = BankAccountPayoutRequest | MobileMoneyPayoutRequest | CryptoWalletPayoutRequest;

/** Where the beneficiary is paid: a mobile money wallet, a bank account or a crypto wallet. */
export type DestinationType = 'MOBILE_MONEY' | 'BANK_ACCOUNT' | 'CRYPTO_WALLET';

/** A currency some corridor pays out in: ISO 4217 code, or USDT for Tether. Any other is 400 VALIDATION_FAILED; one that a corridor pays but not in the country, destination type or settlement currency asked for is 422 CORRIDOR_NOT_SUPPORTED. Amounts carry at most the currency’s minor units: NGN 2, KES 2, GHS 2, USDT 6. */
export type Currency = 'NGN' | 'KES' | 'GHS' | 'USDT';

/** What the merchant pays in: USDT on the crypto rail, NGN by bank transfer. */
export type SettlementCurrency = 'USDT' | 'NGN';

/** USDT network: TRON (or TRC20, its token standard) or BSC (or BEP20). Either name means the same network; responses name the chain (TRON, BSC), payment instructions the token standard. */
export type NetworkName = 'TRON' | 'TRC20' | 'BSC' | 'BEP20';

/** A destination with an institution behind it: a bank account or a mobile money wallet. */
export type PayableDestinationType = 'BANK_ACCOUNT' | 'MOBILE_MONEY';

export interface NameEnquiryRequest {
  destination_type: PayableDestinationType;
  destination_currency: Currency;
  /** Bank account number (10-digit NUBAN for NGN) or mobile number (with or without +, with 00, or with the trunk 0; spaces and dashes allowed), in the format of the corridor of destination_currency (the request gives the pattern of each). */
  destination_account_unique: string;
  /** provider_code from GET /v1/banks. */
  destination_provider_code: string;
}

export interface CreateQuoteRequest {
  settlement_currency: SettlementCurrency;
  destination_currency: Currency;
  /** What the beneficiary would receive, in destination_currency. At most 15 significant digits, and at most the minor units of the currency in decimals: the request gives the multipleOf of each currency (check it on the decimal digits: dividing binary floating-point numbers finds 0.07 no multiple of 0.01). */
  destination_amount: number;
}

/** Where refunds of one settlement currency go; the fields depend on type. */
export type RefundDestinationRequest = BankAccountRefundDestinationRequest | CryptoAddressRefundDestinationRequest;

/** BANK_ACCOUNT for NGN, CRYPTO_ADDRESS for USDT. */
export type RefundDestinationType = 'BANK_ACCOUNT' | 'CRYPTO_ADDRESS';

export interface WebhookConfigRequest {
  /** HTTPS URL that receives the events (plain http only for localhost and 127.0.0.1, where the deployment allows local test URLs); at most 2048 characters, no credentials, no private addresses. */
  webhook_url: string;
}

/** A payout with its active payment instruction and its full timeline. */
export interface Payout {
  id: string;
  tenant_id: string;
  status: PayoutStatus;
  merchant_reference: string | null;
  /** The key-value pairs given at creation, keys in code-point order; {} when none were. */
  metadata: Record<string, unknown>;
  /** Per-payout webhook URL, if set. */
  notification_url: string | null;
  destination_type: DestinationType;
  destination_country: string;
  destination_currency: Currency;
  /** What the beneficiary receives. */
  destination_amount: number;
  destination_account_unique: string;
  destination_provider_name: string;
  destination_provider_code: string | null;
  destination_account_name: string | null;
  /** The payee name check; null where none applies (crypto wallets, payouts made before it existed). */
  payee_name_check: PayeeNameCheck | null;
  settlement_currency: SettlementCurrency;
  /** What the merchant owes; 0 until the instruction is generated. */
  settlement_amount: number;
  /** Destination units per 1 settlement unit; 0 until the instruction is generated. */
  exchange_rate: number;
  platform_fee_amount: number;
  platform_fee_currency: SettlementCurrency;
  network_fee_amount: number;
  network_fee_currency: SettlementCurrency;
  total_fee_amount: number;
  total_fee_currency: SettlementCurrency;
  /** True once a refund has been raised for the failed payout. */
  is_refunded: boolean;
  /** The id of the refund, once raised. */
  refund_reference: string | null;
  /** The active instruction; null until generated (status CREATED). */
  payment_instruction: PaymentInstructionSummary | null;
  /** Every status change, oldest first. */
  status_timeline: StatusLog[];
  created_at: string;
  updated_at: string;
}

/** CREATED → PENDING_PAYMENT (instruction generated) → PAYMENT_RECEIVED → PROCESSING → SUCCESSFUL; FAILED and EXPIRED are terminal too (see /docs/machines). */
export type PayoutStatus = 'CREATED' | 'PENDING_PAYMENT' | 'PAYMENT_RECEIVED' | 'PROCESSING' | 'SUCCESSFUL' | 'FAILED' | 'EXPIRED';

/** destination_account_name against the name the institution holds for the account (docs/payee-check.md). A NO_MATCH is paid, held for an operator's decision, or refused at creation, by your tenant's policy. */
export interface PayeeNameCheck {
  /** MATCH, CLOSE_MATCH or NO_MATCH (as Confirmation of Payee and Verification of Payee answer); PENDING until the institution answers; UNAVAILABLE when it could not answer before the payment instruction was due. */
  result: PayeeNameCheckResult;
  /** The name the institution holds for the account, given with CLOSE_MATCH only (null otherwise). */
  institution_name: string | null;
  /** When the institution answered; null while PENDING. */
  checked_at: string | null;
}

export type PayeeNameCheckResult = 'PENDING' | 'MATCH' | 'CLOSE_MATCH' | 'NO_MATCH' | 'UNAVAILABLE';

/** What the merchant must pay, where and by when: the active instruction of a payout. */
export interface PaymentInstructionSummary {
  id: string;
  rail: Rail;
  /** Where to pay: the USDT address (CRYPTO) or the virtual account number (BANK_TRANSFER). */
  account_unique: string;
  provider_name: string;
  /** The USDT network of a crypto instruction; null for BANK_TRANSFER. */
  network: string | null;
  /** Pay exactly this amount, in expected_currency. */
  expected_amount: number;
  expected_currency: Currency;
  payment_status: PaymentStatus;
  /** Pay before this time; afterwards the payout ends EXPIRED. */
  expires_at: string;
  paid_at: string | null;
}

/** How the merchant settles: CRYPTO (USDT on TRON or BSC) or BANK_TRANSFER (NGN). */
export type Rail = 'CRYPTO' | 'BANK_TRANSFER';

export type PaymentStatus = 'UNPAID' | 'PAID' | 'EXPIRED';

/** One status change of a payout; the timeline is its authoritative history. */
export interface StatusLog {
  from_status: PayoutStatus | null;
  to_status: PayoutStatus;
  triggered_by: TriggeredBy;
  /** Why, e.g. PAYOUT_CREATED, INSTRUCTION_GENERATED, ACCOUNT_CLOSED. */
  reason_code: string;
  reason_detail: Record<string, unknown> | null;
  metadata: Record<string, unknown> | null;
  created_at: string;
}

export type TriggeredBy = 'SYSTEM' | 'API' | 'PROCESSOR_WEBHOOK' | 'ADMIN';

/** One page of Payout items, newest first. */
export interface PayoutPage {
  data: Payout[];
  meta: PageMeta;
}

export interface PageMeta {
  /** Pass as cursor for the next page. */
  next_cursor: string | null;
  /** Whether another page follows: stop when false. */
  has_more: boolean;
  limit: number;
}

/** The payment instruction of one payout. */
export interface PaymentInstruction {
  id: string;
  rail: Rail;
  /** Where to pay: the USDT address (CRYPTO) or the virtual account number (BANK_TRANSFER). */
  account_unique: string;
  provider_name: string;
  /** The USDT network of a crypto instruction; null for BANK_TRANSFER. */
  network: string | null;
  /** Pay exactly this amount, in expected_currency. */
  expected_amount: number;
  expected_currency: Currency;
  payment_status: PaymentStatus;
  /** Pay before this time; afterwards the payout ends EXPIRED. */
  expires_at: string;
  paid_at: string | null;
  payout_id: string;
  created_at: string;
}

/** One attempt to pay the beneficiary through the processor (immutable). */
export interface Outflow {
  id: string;
  payout_id: string;
  processor: string;
  status: OutflowStatus;
  /** 1 for the first attempt; each retry is a row of its own. */
  attempt_number: number;
  destination_amount: number;
  destination_currency: Currency;
  processor_reference: string | null;
  failure_reason: string | null;
  failure_code: string | null;
  dispatched_at: string | null;
  settled_at: string | null;
  created_at: string;
}

export type OutflowStatus = 'PENDING' | 'PROCESSING' | 'SUCCESSFUL' | 'FAILED';

/** The return to the merchant of a failed payout’s settlement, or of a successful payout’s overpayment. */
export interface Refund {
  id: string;
  /** The payout whose money this refund returns: a failed one, or a successful one that was overpaid. */
  payout_id: string;
  /** SETTLEMENT: all a failed payout received, less the fee. OVERPAYMENT: what a successful payout received beyond the amount asked for, which it set aside, less the fee. */
  kind: 'SETTLEMENT' | 'OVERPAYMENT';
  /** The settlement whose money is sent back. */
  inflow_id: string | null;
  status: RefundStatus;
  /** What it returns before the fee: all that arrived, overpayment included (SETTLEMENT), or the overpayment alone (OVERPAYMENT). */
  received_amount: number;
  received_currency: SettlementCurrency;
  /** Cost of the return transfer. */
  network_fee_amount: number;
  network_fee_currency: SettlementCurrency;
  /** received_amount minus network_fee_amount. */
  refund_amount: number;
  refund_currency: SettlementCurrency;
  destination_type: RefundDestinationType;
  destination_provider_name: string;
  /** Masked account number or address. */
  destination_masked: string;
  destination_network: Network | null;
  processor_reference: string | null;
  failure_reason: string | null;
  attempt_number: number;
  dispatched_at: string | null;
  settled_at: string | null;
  created_at: string;
}

/** PENDING → PROCESSING → SUCCESSFUL, or FAILED (waits for an operator and a corrected destination). */
export type RefundStatus = 'PENDING' | 'PROCESSING' | 'SUCCESSFUL' | 'FAILED';

/** USDT network. */
export type Network = 'TRON' | 'BSC';

/** One page of Inflow items, newest first. */
export interface InflowPage {
  data: Inflow[];
  meta: PageMeta;
}

/** A settlement received from the merchant. Payer identity is never shown. */
export interface Inflow {
  id: string;
  rail: Rail;
  provider_name: string;
  network: string | null;
  amount: number;
  currency: SettlementCurrency;
  /** Network confirmations so far (crypto). */
  confirmations_received: number;
  /** Attributed to a payout whose instruction it covers. */
  is_matched: boolean;
  matched_at: string | null;
  payout_id: string | null;
  /** Held: does not cover any open instruction. */
  is_underpaid: boolean;
  /** What arrived beyond the expected amount; returned with any later refund. */
  overpayment_amount: number;
  overpayment_currency: SettlementCurrency;
  created_at: string;
}

/** One page of Refund items, newest first. */
export interface RefundPage {
  data: Refund[];
  meta: PageMeta;
}

/** A bank or mobile money provider able to receive payouts in a corridor. */
export interface Institution {
  /** Display name; never a routing value. */
  provider_name: string;
  /** The value to send as destination_provider_code. */
  provider_code: string;
  destination_type: DestinationType;
}

/** The institution-confirmed holder of an account. */
export interface NameEnquiryResult {
  /** The name the institution holds; send it as destination_account_name. */
  destination_account_name: string;
  /** The account as the service keeps it: a mobile number in E.164, however it was written. */
  destination_account_unique: string;
  destination_provider_code: string;
  destination_type: DestinationType;
}

/** A non-binding rate, fees excluded; quote to freeze a price. */
export interface IndicativeRate {
  settlement_currency: SettlementCurrency;
  destination_currency: Currency;
  /** Destination units per 1 settlement unit, after spread. */
  rate: number;
  /** Destination units per 1 settlement unit, before spread. */
  mid_market_rate: number;
  spread_percent: number;
  rail: Rail;
  /** Label of the rate source. */
  source: string;
  as_of: string;
}

/** A price frozen until expires_at: rate, spread and every fee, in the settlement currency. */
export interface Quote {
  id: string;
  rail: Rail;
  /** Destination units per 1 settlement unit, after spread. */
  exchange_rate: number;
  /** Spread in percent of the mid-market rate. */
  spread: number;
  destination_amount: number;
  destination_currency: Currency;
  /** What the merchant must send: the converted amount plus every fee. */
  settlement_amount: number;
  settlement_currency: SettlementCurrency;
  platform_fee_amount: number;
  platform_fee_currency: SettlementCurrency;
  network_fee_amount: number;
  network_fee_currency: SettlementCurrency;
  total_fee_amount: number;
  total_fee_currency: SettlementCurrency;
  /** Label of the rate source. */
  provider: string;
  status: QuoteStatus;
  expires_at: string;
  created_at: string;
}

/** A quote whose expires_at has passed reads as EXPIRED. */
export type QuoteStatus = 'PENDING' | 'ACCEPTED' | 'USED' | 'EXPIRED';

/** Where refunds of one settlement currency go; account numbers and addresses always masked. */
export interface RefundDestination {
  id: string;
  /** The settlement currency refunded to this destination. */
  currency: SettlementCurrency;
  type: RefundDestinationType;
  bank_name: string | null;
  bank_code: string | null;
  /** Last 4 digits visible, the rest asterisks. */
  account_number_masked: string | null;
  /** The bank-confirmed name. */
  account_name: string | null;
  network: Network | null;
  /** First 6 and last 4 characters visible, the rest asterisks. */
  address_masked: string | null;
  /** True for bank accounts confirmed by name enquiry; always false for crypto addresses. */
  is_verified: boolean;
  is_active: boolean;
  created_at: string;
  updated_at: string;
}

/** The webhook configuration with the signing secret in force. */
export interface WebhookConfigWithSecret {
  /** The signing secret in force (whsec_...): issued by the first PUT, kept by later PUTs (a URL change does not rotate it), replaced by each rotation. Never returned by GET. */
  signing_secret: string;
  /** The default URL events are sent to; null until one is set. */
  webhook_url: string | null;
  /** Whether deliveries are signed. The secret itself is never returned here. */
  has_secret: boolean;
  /** 1 for the first secret, incremented by each rotation; 0 when there is none. */
  secret_version: number;
  /** When the current secret replaced a previous one; null if never rotated. */
  secret_rotated_at: string | null;
  created_at: string | null;
  updated_at: string | null;
}

/** Where events are sent and whether they are signed; never the secret itself. */
export interface WebhookConfig {
  /** The default URL events are sent to; null until one is set. */
  webhook_url: string | null;
  /** Whether deliveries are signed. The secret itself is never returned here. */
  has_secret: boolean;
  /** 1 for the first secret, incremented by each rotation; 0 when there is none. */
  secret_version: number;
  /** When the current secret replaced a previous one; null if never rotated. */
  secret_rotated_at: string | null;
  created_at: string | null;
  updated_at: string | null;
}

/** A test event on its way to the webhook URL. */
export interface WebhookTest {
  /** The event sent: find its attempts in GET /v1/webhooks/deliveries. */
  event_id: string;
  event_type: 'webhook.test';
  created_at: string;
  /** Where it goes: the configured webhook URL. */
  webhook_url: string;
}

/** One page of WebhookDelivery items, newest first. */
export interface WebhookDeliveryPage {
  data: WebhookDelivery[];
  meta: PageMeta;
}

/** One attempt to deliver one event to one URL. */
export interface WebhookDelivery {
  id: string;
  /** The payout the event is about. */
  payout_id: string | null;
  /** The event delivered; the deduplication key, the same on every attempt. */
  event_id: string;
  event_type: WebhookEventType;
  /** 1 to 5. */
  attempt_number: number;
  target_url: string;
  /** The HTTP status the endpoint answered; 0 when no response came back (see failure_reason). */
  response_status: number;
  /** SUCCESS: 2xx. FAILED: this attempt failed and a retry is scheduled. DEAD: the last attempt failed. */
  status: WebhookDeliveryStatus;
  /** Null on success; otherwise the HTTP status or the transport error (timeout, DNS, TLS, connection refused). */
  failure_reason: string | null;
  created_at: string;
}

export type WebhookDeliveryStatus = 'SUCCESS' | 'FAILED' | 'DEAD';

/** One movement of a payout's money. */
export interface MoneyMovement {
  /** The movement (a ledger entry) id. */
  id: string;
  payout_id: string;
  /** What moved the money: `money_received`: Money the merchant sent, attributed to the payout (by matching, or by an operator). Positive. `conversion`: The payout's money converted at its locked rate when it goes to the processor: negative in the settlement currency, positive in the destination currency. Reversed, with the signs the other way, when the processor fails the attempt and the money comes back. `platform_fee`: The platform fee, kept when the payout succeeds. Negative. `network_fee`: The network fee, kept when the payout succeeds. Negative. `overpayment_set_aside`: What the merchant paid beyond the amount asked for, moved when the payout succeeds to the merchant's overpayments account (`tenants:<tenant>:to_return:overpayments`), where it waits to be returned (negative); taken back from there when an operator's approved return sends it to the merchant, or when the refund of a payout the processor returned after success returns it with the rest (positive, followed by the refund's `refund_fee` and `refunded`). `paid_out`: The destination amount, paid to the beneficiary by the processor. Negative. `refund_fee`: The network fee of the refund, kept when the refund is sent (negative); given back when the refund fails (positive). `refunded`: The refund, arrived at the merchant's refund destination: all a failed payout received less the refund fee, or a successful payout's returned overpayment less the refund fee. Negative. `returned`: Money a rail or the processor gave back after it had left (a transfer returned after success). Positive. `reversed`: Money the bank took back after crediting it for the payout (a reversed credit), once an approved reconciliation resolution books it. Negative; always followed by its `reversal_covered`. `reversal_covered`: The same amount, advanced by the service (`adjustments:rails:<rail>`) so that the payout keeps what its state says it received: the service's to recover from the merchant or write off. Positive. */
  type: 'money_received' | 'conversion' | 'platform_fee' | 'network_fee' | 'overpayment_set_aside' | 'paid_out' | 'refund_fee' | 'refunded' | 'returned' | 'reversed' | 'reversal_covered';
  /** Signed decimal string, seen from the payout's money: positive when money arrived for it, negative when it left. */
  amount: string;
  currency: string;
  created_at: string;
  /** What caused the movement: the inflow received, the outflow (dispatch attempt), the refund, or the payout itself. */
  source: {
    /** The object whose change moved the money. */
    object: 'inflow' | 'outflow' | 'refund' | 'payout';
    id: string;
  };
}

/** One page of MoneyMovement items, newest first. */
export interface MoneyMovementPage {
  data: MoneyMovement[];
  meta: PageMeta;
}

/** Lowercase and dotted; for refund.* events data is still the payout. */
export type WebhookEventType = 'payout.created' | 'payout.pending_payment' | 'payout.underpaid' | 'payout.payment_received' | 'payout.processing' | 'payout.successful' | 'payout.failed' | 'payout.expired' | 'payout.refunded' | 'refund.created' | 'refund.processing' | 'refund.successful' | 'refund.failed' | 'webhook.test';

/** A webhook event about a payout. Deliveries may repeat (deduplicate on event_id) and arrive out of order (order on status and the payout’s status_timeline). */
export interface PayoutEvent {
  /** Stable across retries: the deduplication key. */
  event_id: string;
  event_type: PayoutEventType;
  created_at: string;
  /** The payout’s status after the event: the truth for ordering. */
  status: PayoutStatus;
  data: PayoutEventData;
}

/** The event types of PayoutEvent; for refund.* events data is still the payout. */
export type PayoutEventType = 'payout.created' | 'payout.pending_payment' | 'payout.underpaid' | 'payout.payment_received' | 'payout.processing' | 'payout.successful' | 'payout.failed' | 'payout.expired' | 'payout.refunded' | 'refund.created' | 'refund.processing' | 'refund.successful' | 'refund.failed';

/** The payout as GET /v1/payouts/{id} returns it at the time of the event, with object "payout". */
export interface PayoutEventData {
  object: 'payout';
  id: string;
  tenant_id: string;
  status: PayoutStatus;
  merchant_reference: string | null;
  /** The key-value pairs given at creation, keys in code-point order; {} when none were. */
  metadata: Record<string, unknown>;
  /** Per-payout webhook URL, if set. */
  notification_url: string | null;
  destination_type: DestinationType;
  destination_country: string;
  destination_currency: Currency;
  /** What the beneficiary receives. */
  destination_amount: number;
  destination_account_unique: string;
  destination_provider_name: string;
  destination_provider_code: string | null;
  destination_account_name: string | null;
  /** The payee name check; null where none applies (crypto wallets, payouts made before it existed). */
  payee_name_check: PayeeNameCheck | null;
  settlement_currency: SettlementCurrency;
  /** What the merchant owes; 0 until the instruction is generated. */
  settlement_amount: number;
  /** Destination units per 1 settlement unit; 0 until the instruction is generated. */
  exchange_rate: number;
  platform_fee_amount: number;
  platform_fee_currency: SettlementCurrency;
  network_fee_amount: number;
  network_fee_currency: SettlementCurrency;
  total_fee_amount: number;
  total_fee_currency: SettlementCurrency;
  /** True once a refund has been raised for the failed payout. */
  is_refunded: boolean;
  /** The id of the refund, once raised. */
  refund_reference: string | null;
  /** The active instruction; null until generated (status CREATED). */
  payment_instruction: PaymentInstructionSummary | null;
  /** Every status change, oldest first. */
  status_timeline: StatusLog[];
  created_at: string;
  updated_at: string;
}

/** A test event, sent on request by POST /v1/webhooks/config/test and signed like every event. */
export interface WebhookTestEvent {
  /** A new id for every test ping. */
  event_id: string;
  event_type: 'webhook.test';
  created_at: string;
  data: {
    object: 'webhook_test';
  };
}

/** A payout to a bank account: provider code and account name are required, and the account number has the format of its corridor (destination_country and destination_currency). */
export interface BankAccountPayoutRequest {
  destination_type: 'BANK_ACCOUNT';
  /** ISO 3166-1 alpha-2 country code, upper case. */
  destination_country: string;
  destination_currency: Currency;
  /** What the beneficiary receives, in destination_currency. At most 15 significant digits, and at most the minor units of the currency in decimals: the request gives the multipleOf of each currency (check it on the decimal digits: dividing binary floating-point numbers finds 0.07 no multiple of 0.01). */
  destination_amount: number;
  /** Mobile number, bank account number, or crypto address, in the format of its corridor (each destination type gives the pattern of each corridor; docs/account-formats.md; a refusal says which). A mobile number may be written with or without +, with 00, or nationally with the trunk 0, with spaces or dashes: it is kept in E.164. */
  destination_account_unique: string;
  /** Display name of the provider or bank; the network (TRON or BSC) for CRYPTO_WALLET. */
  destination_provider_name: string;
  /** provider_code from GET /v1/banks; the processor routes on it, never on the name. */
  destination_provider_code: string;
  /** Beneficiary name, as returned by POST /v1/banks/resolve. */
  destination_account_name: string;
  settlement_currency?: SettlementCurrency;
  /** USDT network to pay on (crypto rail only; default TRON); TRC20 and BEP20 name the same networks; ignored for NGN. */
  settlement_network?: NetworkName;
  /** Your own reference, echoed back. */
  merchant_reference?: string;
  /** Your own key-value pairs, returned with the payout and in its webhooks: at most 20 keys of 1 to 40 characters, string values of at most 500. */
  metadata?: Record<string, unknown>;
  /** Per-payout webhook URL (HTTPS): this payout’s events go here instead of the tenant URL. */
  notification_url?: string;
  /** A PENDING or ACCEPTED quote of the same currencies and amount, to use its frozen price. */
  quote_id?: string;
}

/** A payout to a mobile money wallet: provider code and account name are required, and the number is one of its corridor (destination_country and destination_currency), in any spelling the pattern allows. */
export interface MobileMoneyPayoutRequest {
  destination_type: 'MOBILE_MONEY';
  /** ISO 3166-1 alpha-2 country code, upper case. */
  destination_country: string;
  destination_currency: Currency;
  /** What the beneficiary receives, in destination_currency. At most 15 significant digits, and at most the minor units of the currency in decimals: the request gives the multipleOf of each currency (check it on the decimal digits: dividing binary floating-point numbers finds 0.07 no multiple of 0.01). */
  destination_amount: number;
  /** Mobile number, bank account number, or crypto address, in the format of its corridor (each destination type gives the pattern of each corridor; docs/account-formats.md; a refusal says which). A mobile number may be written with or without +, with 00, or nationally with the trunk 0, with spaces or dashes: it is kept in E.164. */
  destination_account_unique: string;
  /** Display name of the provider or bank; the network (TRON or BSC) for CRYPTO_WALLET. */
  destination_provider_name: string;
  /** provider_code from GET /v1/banks; the processor routes on it, never on the name. */
  destination_provider_code: string;
  /** Beneficiary name, as returned by POST /v1/banks/resolve. */
  destination_account_name: string;
  settlement_currency?: SettlementCurrency;
  /** USDT network to pay on (crypto rail only; default TRON); TRC20 and BEP20 name the same networks; ignored for NGN. */
  settlement_network?: NetworkName;
  /** Your own reference, echoed back. */
  merchant_reference?: string;
  /** Your own key-value pairs, returned with the payout and in its webhooks: at most 20 keys of 1 to 40 characters, string values of at most 500. */
  metadata?: Record<string, unknown>;
  /** Per-payout webhook URL (HTTPS): this payout’s events go here instead of the tenant URL. */
  notification_url?: string;
  /** A PENDING or ACCEPTED quote of the same currencies and amount, to use its frozen price. */
  quote_id?: string;
}

/** A payout in USDT to a crypto wallet: destination_provider_name is the network (TRON or BSC, or their token standards TRC20 and BEP20; the payout names the chain), destination_account_unique an address on it, and there is no provider code. */
export interface CryptoWalletPayoutRequest {
  destination_type: 'CRYPTO_WALLET';
  /** ISO 3166-1 alpha-2 country code, upper case. */
  destination_country: string;
  destination_currency: Currency;
  /** What the beneficiary receives, in destination_currency. At most 15 significant digits, and at most the minor units of the currency in decimals: the request gives the multipleOf of each currency (check it on the decimal digits: dividing binary floating-point numbers finds 0.07 no multiple of 0.01). */
  destination_amount: number;
  /** Mobile number, bank account number, or crypto address, in the format of its corridor (each destination type gives the pattern of each corridor; docs/account-formats.md; a refusal says which). A mobile number may be written with or without +, with 00, or nationally with the trunk 0, with spaces or dashes: it is kept in E.164. */
  destination_account_unique: string;
  /** Display name of the provider or bank; the network (TRON or BSC) for CRYPTO_WALLET. */
  destination_provider_name: 'TRON' | 'TRC20' | 'BSC' | 'BEP20';
  /** Beneficiary name, as returned by POST /v1/banks/resolve. */
  destination_account_name?: string;
  settlement_currency?: SettlementCurrency;
  /** USDT network to pay on (crypto rail only; default TRON); TRC20 and BEP20 name the same networks; ignored for NGN. */
  settlement_network?: NetworkName;
  /** Your own reference, echoed back. */
  merchant_reference?: string;
  /** Your own key-value pairs, returned with the payout and in its webhooks: at most 20 keys of 1 to 40 characters, string values of at most 500. */
  metadata?: Record<string, unknown>;
  /** Per-payout webhook URL (HTTPS): this payout’s events go here instead of the tenant URL. */
  notification_url?: string;
  /** A PENDING or ACCEPTED quote of the same currencies and amount, to use its frozen price. */
  quote_id?: string;
}

/** NGN refunds go to a Nigerian bank account, verified by name enquiry before it is saved. */
export interface BankAccountRefundDestinationRequest {
  /** The settlement currency refunded to this destination. */
  currency: SettlementCurrency;
  type: 'BANK_ACCOUNT';
  /** BANK_ACCOUNT: provider_code from GET /v1/banks. */
  bank_code: string;
  /** BANK_ACCOUNT: the 10-digit NUBAN. */
  account_number: string;
  /** BANK_ACCOUNT, display only: defaults to the directory's name for bank_code. */
  bank_name?: string | null;
}

/** USDT refunds go to an address on TRON (TRC20) or BSC (BEP20); its correctness is the merchant’s. */
export interface CryptoAddressRefundDestinationRequest {
  /** The settlement currency refunded to this destination. */
  currency: SettlementCurrency;
  type: 'CRYPTO_ADDRESS';
  /** CRYPTO_ADDRESS: TRON (or TRC20) or BSC (or BEP20); the destination names the chain. */
  network: NetworkName;
  /** CRYPTO_ADDRESS: the address on that network. */
  address: string;
  /** CRYPTO_ADDRESS: destination tag or memo where the chain uses one. */
  tag?: string | null;
}

/** Every webhook event by its `event_type`, with its payload. */
export interface WebhookEvents {
  /** The payout was created (status CREATED); its instruction is being generated. */
  'payout.created': PayoutEvent;
  /** The payment instruction was generated: pay expected_amount to account_unique before expires_at. */
  'payout.pending_payment': PayoutEvent;
  /** Less than expected arrived: the payout is held for review (still PENDING_PAYMENT) and not processed partially. */
  'payout.underpaid': PayoutEvent;
  /** The settlement covering the instruction arrived (and was confirmed on chain). */
  'payout.payment_received': PayoutEvent;
  /** The processor accepted the payout to the beneficiary. */
  'payout.processing': PayoutEvent;
  /** The beneficiary was paid. */
  'payout.successful': PayoutEvent;
  /** The payout failed for good; when money had arrived, payout.refunded and the refund events follow. */
  'payout.failed': PayoutEvent;
  /** Nothing arrived before the instruction expired; terminal, no refund. */
  'payout.expired': PayoutEvent;
  /** A refund was raised against the failed payout (is_refunded true, refund_reference set). */
  'payout.refunded': PayoutEvent;
  /** The refund exists with status PENDING. */
  'refund.created': PayoutEvent;
  /** The refund was dispatched. */
  'refund.processing': PayoutEvent;
  /** The money is back with the merchant. */
  'refund.successful': PayoutEvent;
  /** The refund could not be delivered and needs attention (a corrected destination). */
  'refund.failed': PayoutEvent;
  /** Sent only when asked for with POST /v1/webhooks/config/test, to the configured URL, signed like every event: check your endpoint and its signature check with it. data is {"object": "webhook_test"}; nothing happened to any payout. */
  'webhook.test': WebhookTestEvent;
}

/** A webhook event: narrow it on `event_type`. */
export type WebhookEvent = { [K in keyof WebhookEvents]: WebhookEvents[K] & { event_type: K } }[keyof WebhookEvents];

/** Query parameters of `listPayouts`. */
export interface ListPayoutsQuery {
  /** Page size, 1 to 100. */
  limit?: number;
  /** meta.next_cursor of the previous page; opaque: never decode or build one. */
  cursor?: string;
  /** Only payouts in this status. */
  status?: 'CREATED' | 'PENDING_PAYMENT' | 'PAYMENT_RECEIVED' | 'PROCESSING' | 'SUCCESSFUL' | 'FAILED' | 'EXPIRED';
  /** Only payouts created with exactly this merchant_reference. */
  merchant_reference?: string;
  /** Only payouts created at or after this time. */
  created_after?: string;
  /** Only payouts created before this time. */
  created_before?: string;
}

/** Query parameters of `listInflows`. */
export interface ListInflowsQuery {
  /** Page size, 1 to 100. */
  limit?: number;
  /** meta.next_cursor of the previous page; opaque: never decode or build one. */
  cursor?: string;
  /** Only inflows matched (true) or not matched (false) to a payout. */
  is_matched?: 'true' | 'false';
}

/** Query parameters of `listRefunds`. */
export interface ListRefundsQuery {
  /** Page size, 1 to 100. */
  limit?: number;
  /** meta.next_cursor of the previous page; opaque: never decode or build one. */
  cursor?: string;
  /** Only refunds in this status. */
  status?: 'PENDING' | 'PROCESSING' | 'SUCCESSFUL' | 'FAILED';
}

/** Query parameters of `listBanks`. */
export interface ListBanksQuery {
  /** ISO 3166-1 alpha-2 country code, upper case. */
  country: string;
  /** Defaults to the corridor's currency for the country. */
  currency?: Currency;
  /** A destination with an institution behind it: a bank account or a mobile money wallet. */
  destination_type: PayableDestinationType;
}

/** Query parameters of `getIndicativeRate`. */
export interface GetIndicativeRateQuery {
  /** Settlement currency: USDT (default) or NGN. */
  from?: SettlementCurrency;
  /** Destination currency of the payout. */
  to: Currency;
}

/** Query parameters of `listWebhookDeliveries`. */
export interface ListWebhookDeliveriesQuery {
  /** Page size, 1 to 100. */
  limit?: number;
  /** meta.next_cursor of the previous page; opaque: never decode or build one. */
  cursor?: string;
  /** Only attempts with this outcome. */
  status?: 'SUCCESS' | 'FAILED' | 'DEAD';
  /** Only attempts to deliver events of this type. */
  event_type?: 'payout.created' | 'payout.pending_payment' | 'payout.underpaid' | 'payout.payment_received' | 'payout.processing' | 'payout.successful' | 'payout.failed' | 'payout.expired' | 'payout.refunded' | 'refund.created' | 'refund.processing' | 'refund.successful' | 'refund.failed' | 'webhook.test';
  /** Only attempts to deliver events about this payout. */
  payout_id?: string;
}

/** Query parameters of `listMoneyMovements`. */
export interface ListMoneyMovementsQuery {
  /** Page size, 1 to 100. */
  limit?: number;
  /** meta.next_cursor of the previous page; opaque: never decode or build one. */
  cursor?: string;
  /** Only the movements of this payout. */
  payout_id?: string;
  /** Only movements of this type. */
  type?: 'money_received' | 'conversion' | 'platform_fee' | 'network_fee' | 'overpayment_set_aside' | 'paid_out' | 'refund_fee' | 'refunded' | 'returned' | 'reversed' | 'reversal_covered';
  /** Only movements created at or after this time. */
  created_after?: string;
  /** Only movements created before this time. */
  created_before?: string;
}

/** Per operation: what it takes, what it answers, and the error codes it can answer with. */
export interface Operations {
  createPayout: {
    path: never;
    query: never;
    body: CreatePayoutRequest;
    response: Payout;
    errors: 'VALIDATION_FAILED' | 'IDEMPOTENCY_KEY_REQUIRED' | 'IDEMPOTENCY_KEY_INVALID' | 'WEBHOOK_URL_INVALID' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'TENANT_NOT_APPROVED' | 'QUOTE_NOT_FOUND' | 'QUOTE_EXPIRED' | 'QUOTE_NOT_ACCEPTABLE' | 'PAYLOAD_TOO_LARGE' | 'UNSUPPORTED_MEDIA_TYPE' | 'IDEMPOTENCY_KEY_REUSED' | 'REFUND_DESTINATION_REQUIRED' | 'CORRIDOR_NOT_SUPPORTED' | 'PROVIDER_CODE_UNKNOWN' | 'QUOTE_MISMATCH' | 'PAYEE_NAME_MISMATCH' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'UPSTREAM_UNAVAILABLE' | 'SERVICE_UNAVAILABLE';
  };
  listPayouts: {
    path: never;
    query: ListPayoutsQuery;
    body: never;
    response: PayoutPage;
    errors: 'VALIDATION_FAILED' | 'INVALID_CURSOR' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
  getPayout: {
    path: { id: string };
    query: never;
    body: never;
    response: Payout;
    errors: 'VALIDATION_FAILED' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'PAYOUT_NOT_FOUND' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
  getPaymentInstruction: {
    path: { payout_id: string };
    query: never;
    body: never;
    response: PaymentInstruction;
    errors: 'VALIDATION_FAILED' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'PAYOUT_NOT_FOUND' | 'PAYMENT_INSTRUCTION_NOT_FOUND' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
  listPayoutOutflows: {
    path: { payout_id: string };
    query: never;
    body: never;
    response: Outflow[];
    errors: 'VALIDATION_FAILED' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'PAYOUT_NOT_FOUND' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
  listPayoutRefunds: {
    path: { payout_id: string };
    query: never;
    body: never;
    response: Refund[];
    errors: 'VALIDATION_FAILED' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'PAYOUT_NOT_FOUND' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
  getOutflow: {
    path: { id: string };
    query: never;
    body: never;
    response: Outflow;
    errors: 'VALIDATION_FAILED' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'OUTFLOW_NOT_FOUND' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
  listInflows: {
    path: never;
    query: ListInflowsQuery;
    body: never;
    response: InflowPage;
    errors: 'VALIDATION_FAILED' | 'INVALID_CURSOR' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
  getInflow: {
    path: { id: string };
    query: never;
    body: never;
    response: Inflow;
    errors: 'VALIDATION_FAILED' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'INFLOW_NOT_FOUND' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
  listRefunds: {
    path: never;
    query: ListRefundsQuery;
    body: never;
    response: RefundPage;
    errors: 'VALIDATION_FAILED' | 'INVALID_CURSOR' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
  getRefund: {
    path: { id: string };
    query: never;
    body: never;
    response: Refund;
    errors: 'VALIDATION_FAILED' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'REFUND_NOT_FOUND' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
  listBanks: {
    path: never;
    query: ListBanksQuery;
    body: never;
    response: Institution[];
    errors: 'VALIDATION_FAILED' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'CORRIDOR_NOT_SUPPORTED' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'UPSTREAM_UNAVAILABLE' | 'SERVICE_UNAVAILABLE';
  };
  resolveAccount: {
    path: never;
    query: never;
    body: NameEnquiryRequest;
    response: NameEnquiryResult;
    errors: 'VALIDATION_FAILED' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'PAYLOAD_TOO_LARGE' | 'UNSUPPORTED_MEDIA_TYPE' | 'ACCOUNT_NOT_FOUND' | 'CORRIDOR_NOT_SUPPORTED' | 'PROVIDER_CODE_UNKNOWN' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'UPSTREAM_UNAVAILABLE' | 'SERVICE_UNAVAILABLE';
  };
  getIndicativeRate: {
    path: never;
    query: GetIndicativeRateQuery;
    body: never;
    response: IndicativeRate;
    errors: 'VALIDATION_FAILED' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'CORRIDOR_NOT_SUPPORTED' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'UPSTREAM_UNAVAILABLE' | 'SERVICE_UNAVAILABLE';
  };
  createQuote: {
    path: never;
    query: never;
    body: CreateQuoteRequest;
    response: Quote;
    errors: 'VALIDATION_FAILED' | 'IDEMPOTENCY_KEY_REQUIRED' | 'IDEMPOTENCY_KEY_INVALID' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'PAYLOAD_TOO_LARGE' | 'UNSUPPORTED_MEDIA_TYPE' | 'IDEMPOTENCY_KEY_REUSED' | 'CORRIDOR_NOT_SUPPORTED' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'UPSTREAM_UNAVAILABLE' | 'SERVICE_UNAVAILABLE';
  };
  getQuote: {
    path: { id: string };
    query: never;
    body: never;
    response: Quote;
    errors: 'VALIDATION_FAILED' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'QUOTE_NOT_FOUND' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
  acceptQuote: {
    path: { id: string };
    query: never;
    body: never;
    response: Quote;
    errors: 'VALIDATION_FAILED' | 'IDEMPOTENCY_KEY_REQUIRED' | 'IDEMPOTENCY_KEY_INVALID' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'QUOTE_NOT_FOUND' | 'QUOTE_EXPIRED' | 'QUOTE_NOT_ACCEPTABLE' | 'PAYLOAD_TOO_LARGE' | 'UNSUPPORTED_MEDIA_TYPE' | 'IDEMPOTENCY_KEY_REUSED' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
  setRefundDestination: {
    path: never;
    query: never;
    body: RefundDestinationRequest;
    response: RefundDestination;
    errors: 'VALIDATION_FAILED' | 'IDEMPOTENCY_KEY_REQUIRED' | 'IDEMPOTENCY_KEY_INVALID' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'PAYLOAD_TOO_LARGE' | 'UNSUPPORTED_MEDIA_TYPE' | 'IDEMPOTENCY_KEY_REUSED' | 'BANK_ACCOUNT_VERIFICATION_FAILED' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'UPSTREAM_UNAVAILABLE' | 'SERVICE_UNAVAILABLE';
  };
  listRefundDestinations: {
    path: never;
    query: never;
    body: never;
    response: RefundDestination[];
    errors: 'VALIDATION_FAILED' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
  setWebhookConfig: {
    path: never;
    query: never;
    body: WebhookConfigRequest;
    response: WebhookConfigWithSecret;
    errors: 'VALIDATION_FAILED' | 'IDEMPOTENCY_KEY_REQUIRED' | 'IDEMPOTENCY_KEY_INVALID' | 'WEBHOOK_URL_INVALID' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'PAYLOAD_TOO_LARGE' | 'UNSUPPORTED_MEDIA_TYPE' | 'IDEMPOTENCY_KEY_REUSED' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
  getWebhookConfig: {
    path: never;
    query: never;
    body: never;
    response: WebhookConfig;
    errors: 'VALIDATION_FAILED' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
  rotateWebhookSecret: {
    path: never;
    query: never;
    body: never;
    response: WebhookConfigWithSecret;
    errors: 'VALIDATION_FAILED' | 'IDEMPOTENCY_KEY_REQUIRED' | 'IDEMPOTENCY_KEY_INVALID' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'PAYLOAD_TOO_LARGE' | 'UNSUPPORTED_MEDIA_TYPE' | 'IDEMPOTENCY_KEY_REUSED' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
  sendWebhookTest: {
    path: never;
    query: never;
    body: never;
    response: WebhookTest;
    errors: 'VALIDATION_FAILED' | 'IDEMPOTENCY_KEY_REQUIRED' | 'IDEMPOTENCY_KEY_INVALID' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'WEBHOOK_URL_NOT_SET' | 'PAYLOAD_TOO_LARGE' | 'UNSUPPORTED_MEDIA_TYPE' | 'IDEMPOTENCY_KEY_REUSED' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
  listWebhookDeliveries: {
    path: never;
    query: ListWebhookDeliveriesQuery;
    body: never;
    response: WebhookDeliveryPage;
    errors: 'VALIDATION_FAILED' | 'INVALID_CURSOR' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
  listPayoutMoneyMovements: {
    path: { payout_id: string };
    query: never;
    body: never;
    response: MoneyMovement[];
    errors: 'VALIDATION_FAILED' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'PAYOUT_NOT_FOUND' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
  listMoneyMovements: {
    path: never;
    query: ListMoneyMovementsQuery;
    body: never;
    response: MoneyMovementPage;
    errors: 'VALIDATION_FAILED' | 'INVALID_CURSOR' | 'UNAUTHENTICATED' | 'INSUFFICIENT_SCOPES' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE';
  };
}

export type OperationId = keyof Operations;

/** The error codes an operation can answer with. */
export type ErrorsOf<K extends OperationId> = Operations[K]['errors'];

/** Operations whose answer is one page of a cursor-paginated list. */
export type ListOperationId = 'listPayouts' | 'listInflows' | 'listRefunds' | 'listWebhookDeliveries' | 'listMoneyMovements';

/** How each operation is called over HTTP. */
export const OPERATIONS = {
  createPayout: { method: 'POST', path: '/v1/payouts', status: 201, idempotent: true },
  listPayouts: { method: 'GET', path: '/v1/payouts', status: 200, idempotent: false },
  getPayout: { method: 'GET', path: '/v1/payouts/{id}', status: 200, idempotent: false },
  getPaymentInstruction: { method: 'GET', path: '/v1/payouts/{payout_id}/payment-instruction', status: 200, idempotent: false },
  listPayoutOutflows: { method: 'GET', path: '/v1/payouts/{payout_id}/outflows', status: 200, idempotent: false },
  listPayoutRefunds: { method: 'GET', path: '/v1/payouts/{payout_id}/refunds', status: 200, idempotent: false },
  getOutflow: { method: 'GET', path: '/v1/outflows/{id}', status: 200, idempotent: false },
  listInflows: { method: 'GET', path: '/v1/inflows', status: 200, idempotent: false },
  getInflow: { method: 'GET', path: '/v1/inflows/{id}', status: 200, idempotent: false },
  listRefunds: { method: 'GET', path: '/v1/refunds', status: 200, idempotent: false },
  getRefund: { method: 'GET', path: '/v1/refunds/{id}', status: 200, idempotent: false },
  listBanks: { method: 'GET', path: '/v1/banks', status: 200, idempotent: false },
  resolveAccount: { method: 'POST', path: '/v1/banks/resolve', status: 200, idempotent: false },
  getIndicativeRate: { method: 'GET', path: '/v1/rates', status: 200, idempotent: false },
  createQuote: { method: 'POST', path: '/v1/rates/quotes', status: 201, idempotent: true },
  getQuote: { method: 'GET', path: '/v1/rates/quotes/{id}', status: 200, idempotent: false },
  acceptQuote: { method: 'POST', path: '/v1/rates/quotes/{id}/accept', status: 200, idempotent: true },
  setRefundDestination: { method: 'PUT', path: '/v1/refund-destinations', status: 200, idempotent: true },
  listRefundDestinations: { method: 'GET', path: '/v1/refund-destinations', status: 200, idempotent: false },
  setWebhookConfig: { method: 'PUT', path: '/v1/webhooks/config', status: 200, idempotent: true },
  getWebhookConfig: { method: 'GET', path: '/v1/webhooks/config', status: 200, idempotent: false },
  rotateWebhookSecret: { method: 'POST', path: '/v1/webhooks/config/rotate-secret', status: 200, idempotent: true },
  sendWebhookTest: { method: 'POST', path: '/v1/webhooks/config/test', status: 201, idempotent: true },
  listWebhookDeliveries: { method: 'GET', path: '/v1/webhooks/deliveries', status: 200, idempotent: false },
  listPayoutMoneyMovements: { method: 'GET', path: '/v1/payouts/{payout_id}/money-movements', status: 200, idempotent: false },
  listMoneyMovements: { method: 'GET', path: '/v1/money-movements', status: 200, idempotent: false },
} as const satisfies Record<OperationId, OperationSpec>;

export interface OperationSpec {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  status: number;
  idempotent: boolean;
}

/** Per request: an Idempotency-Key of your own (writes; a UUID v4, made for you otherwise), an X-Request-Id, a signal. */
export interface RequestOptions {
  idempotencyKey?: string;
  requestId?: string;
  signal?: AbortSignal;
}

/** What `send` receives for one call. */
export interface CallArgs {
  path?: Record<string, string>;
  query?: object;
  body?: unknown;
  options?: RequestOptions;
}

/** One method per operation of the API; `PayoutClient` supplies `send`. */
export abstract class PayoutApi {
  protected abstract send(operationId: OperationId, args: CallArgs): Promise<never>;

  /** Create a payout: `POST /v1/payouts`. Fails with a PayoutApiError of ErrorsOf<'createPayout'>. */
  createPayout(body: CreatePayoutRequest, options?: RequestOptions): Promise<Payout> {
    return this.send('createPayout', { body, options });
  }

  /** List payouts, newest first, optionally filtered: `GET /v1/payouts`. Fails with a PayoutApiError of ErrorsOf<'listPayouts'>. */
  listPayouts(query?: ListPayoutsQuery, options?: RequestOptions): Promise<PayoutPage> {
    return this.send('listPayouts', { query, options });
  }

  /** Get a payout with its instruction and timeline: `GET /v1/payouts/{id}`. Fails with a PayoutApiError of ErrorsOf<'getPayout'>. */
  getPayout(id: string, options?: RequestOptions): Promise<Payout> {
    return this.send('getPayout', { path: { id }, options });
  }

  /** The payout’s payment instruction: `GET /v1/payouts/{payout_id}/payment-instruction`. Fails with a PayoutApiError of ErrorsOf<'getPaymentInstruction'>. */
  getPaymentInstruction(payout_id: string, options?: RequestOptions): Promise<PaymentInstruction> {
    return this.send('getPaymentInstruction', { path: { payout_id }, options });
  }

  /** Dispatch attempts, oldest first: `GET /v1/payouts/{payout_id}/outflows`. Fails with a PayoutApiError of ErrorsOf<'listPayoutOutflows'>. */
  listPayoutOutflows(payout_id: string, options?: RequestOptions): Promise<Outflow[]> {
    return this.send('listPayoutOutflows', { path: { payout_id }, options });
  }

  /** Refunds of the payout (at most one): `GET /v1/payouts/{payout_id}/refunds`. Fails with a PayoutApiError of ErrorsOf<'listPayoutRefunds'>. */
  listPayoutRefunds(payout_id: string, options?: RequestOptions): Promise<Refund[]> {
    return this.send('listPayoutRefunds', { path: { payout_id }, options });
  }

  /** One dispatch attempt: `GET /v1/outflows/{id}`. Fails with a PayoutApiError of ErrorsOf<'getOutflow'>. */
  getOutflow(id: string, options?: RequestOptions): Promise<Outflow> {
    return this.send('getOutflow', { path: { id }, options });
  }

  /** Settlements received, newest first, optionally by is_matched: `GET /v1/inflows`. Fails with a PayoutApiError of ErrorsOf<'listInflows'>. */
  listInflows(query?: ListInflowsQuery, options?: RequestOptions): Promise<InflowPage> {
    return this.send('listInflows', { query, options });
  }

  /** One inflow: `GET /v1/inflows/{id}`. Fails with a PayoutApiError of ErrorsOf<'getInflow'>. */
  getInflow(id: string, options?: RequestOptions): Promise<Inflow> {
    return this.send('getInflow', { path: { id }, options });
  }

  /** Refunds, newest first, optionally by status: `GET /v1/refunds`. Fails with a PayoutApiError of ErrorsOf<'listRefunds'>. */
  listRefunds(query?: ListRefundsQuery, options?: RequestOptions): Promise<RefundPage> {
    return this.send('listRefunds', { query, options });
  }

  /** One refund: `GET /v1/refunds/{id}`. Fails with a PayoutApiError of ErrorsOf<'getRefund'>. */
  getRefund(id: string, options?: RequestOptions): Promise<Refund> {
    return this.send('getRefund', { path: { id }, options });
  }

  /** List institutions of a corridor: `GET /v1/banks`. Fails with a PayoutApiError of ErrorsOf<'listBanks'>. */
  listBanks(query: ListBanksQuery, options?: RequestOptions): Promise<Institution[]> {
    return this.send('listBanks', { query, options });
  }

  /** Name enquiry: `POST /v1/banks/resolve`. Fails with a PayoutApiError of ErrorsOf<'resolveAccount'>. */
  resolveAccount(body: NameEnquiryRequest, options?: RequestOptions): Promise<NameEnquiryResult> {
    return this.send('resolveAccount', { body, options });
  }

  /** Indicative rate: `GET /v1/rates`. Fails with a PayoutApiError of ErrorsOf<'getIndicativeRate'>. */
  getIndicativeRate(query: GetIndicativeRateQuery, options?: RequestOptions): Promise<IndicativeRate> {
    return this.send('getIndicativeRate', { query, options });
  }

  /** Create a quote: `POST /v1/rates/quotes`. Fails with a PayoutApiError of ErrorsOf<'createQuote'>. */
  createQuote(body: CreateQuoteRequest, options?: RequestOptions): Promise<Quote> {
    return this.send('createQuote', { body, options });
  }

  /** Get a quote: `GET /v1/rates/quotes/{id}`. Fails with a PayoutApiError of ErrorsOf<'getQuote'>. */
  getQuote(id: string, options?: RequestOptions): Promise<Quote> {
    return this.send('getQuote', { path: { id }, options });
  }

  /** Accept a quote (optional): `POST /v1/rates/quotes/{id}/accept`. Fails with a PayoutApiError of ErrorsOf<'acceptQuote'>. */
  acceptQuote(id: string, options?: RequestOptions): Promise<Quote> {
    return this.send('acceptQuote', { path: { id }, options });
  }

  /** Set the refund destination of a currency: `PUT /v1/refund-destinations`. Fails with a PayoutApiError of ErrorsOf<'setRefundDestination'>. */
  setRefundDestination(body: RefundDestinationRequest, options?: RequestOptions): Promise<RefundDestination> {
    return this.send('setRefundDestination', { body, options });
  }

  /** List the active refund destinations: `GET /v1/refund-destinations`. Fails with a PayoutApiError of ErrorsOf<'listRefundDestinations'>. */
  listRefundDestinations(options?: RequestOptions): Promise<RefundDestination[]> {
    return this.send('listRefundDestinations', { options });
  }

  /** Set the webhook URL: `PUT /v1/webhooks/config`. Fails with a PayoutApiError of ErrorsOf<'setWebhookConfig'>. */
  setWebhookConfig(body: WebhookConfigRequest, options?: RequestOptions): Promise<WebhookConfigWithSecret> {
    return this.send('setWebhookConfig', { body, options });
  }

  /** Read the webhook configuration: `GET /v1/webhooks/config`. Fails with a PayoutApiError of ErrorsOf<'getWebhookConfig'>. */
  getWebhookConfig(options?: RequestOptions): Promise<WebhookConfig> {
    return this.send('getWebhookConfig', { options });
  }

  /** Rotate the signing secret: `POST /v1/webhooks/config/rotate-secret`. Fails with a PayoutApiError of ErrorsOf<'rotateWebhookSecret'>. */
  rotateWebhookSecret(options?: RequestOptions): Promise<WebhookConfigWithSecret> {
    return this.send('rotateWebhookSecret', { options });
  }

  /** Send a test event: `POST /v1/webhooks/config/test`. Fails with a PayoutApiError of ErrorsOf<'sendWebhookTest'>. */
  sendWebhookTest(options?: RequestOptions): Promise<WebhookTest> {
    return this.send('sendWebhookTest', { options });
  }

  /** Delivery attempts, newest first: `GET /v1/webhooks/deliveries`. Fails with a PayoutApiError of ErrorsOf<'listWebhookDeliveries'>. */
  listWebhookDeliveries(query?: ListWebhookDeliveriesQuery, options?: RequestOptions): Promise<WebhookDeliveryPage> {
    return this.send('listWebhookDeliveries', { query, options });
  }

  /** The payout's money movements, oldest first: `GET /v1/payouts/{payout_id}/money-movements`. Fails with a PayoutApiError of ErrorsOf<'listPayoutMoneyMovements'>. */
  listPayoutMoneyMovements(payout_id: string, options?: RequestOptions): Promise<MoneyMovement[]> {
    return this.send('listPayoutMoneyMovements', { path: { payout_id }, options });
  }

  /** Money movements of every payout, newest first, optionally filtered: `GET /v1/money-movements`. Fails with a PayoutApiError of ErrorsOf<'listMoneyMovements'>. */
  listMoneyMovements(query?: ListMoneyMovementsQuery, options?: RequestOptions): Promise<MoneyMovementPage> {
    return this.send('listMoneyMovements', { query, options });
  }
}
