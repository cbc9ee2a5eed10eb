import type { DestinationType, Network } from '#src/corridors/corridors.ts';
import type { Decimal } from '#src/lib/money.ts';

/**
 * The money-moving providers: chains (USDT on TRON and BSC), the NGN bank with virtual accounts,
 * and the payout processor. Like the directory and the rate source, each has one HTTP
 * implementation (`http-rails.ts`) that the sandbox serves too. Every call that moves money
 * carries the service's own stable `reference`, so that a retried call never moves it twice.
 */

/** A USDT transfer into one of the service's receiving addresses. */
export interface ChainTransfer {
  txHash: string;
  network: Network;
  toAddress: string;
  /** Payer identity: recorded, never returned to merchants. */
  fromAddress: string;
  amount: Decimal;
  currency: 'USDT';
  blockNumber: number;
  /** The block's time: when the money arrived, as the chain says it. */
  blockTime: Date;
}

/** A USDT transfer out of the service's hot wallet (a refund), as the chain's history of the wallet lists it. */
export interface ChainSendLine {
  /** The service's reference of the send (`ChainGateway.send`). */
  reference: string;
  txHash: string;
  network: Network;
  toAddress: string;
  amount: Decimal;
  currency: 'USDT';
  blockNumber: number;
  /** The block's time: when the money left, as the chain says it. */
  blockTime: Date;
}

/** A credit to one of the service's virtual accounts, as the bank's statement (and its notification) reports it. */
export interface BankCredit {
  /** The bank's unique reference of the credit (a NIP session id). */
  sessionId: string;
  accountNumber: string;
  amount: Decimal;
  currency: 'NGN';
  /** Payer identity: recorded, never returned to merchants. */
  payerName: string | null;
  payerAccount: string | null;
  /** When the bank made the credit: when the money arrived. */
  occurredAt: Date;
}

/** The bank taking back a credit it made (a recall, a fraud reversal): a debit on its statement. */
export interface BankReversal {
  /** The bank's reference of the reversal itself. */
  sessionId: string;
  /** The session id of the credit it takes back. */
  reversesSessionId: string;
  accountNumber: string;
  amount: Decimal;
  currency: 'NGN';
  occurredAt: Date;
}

/** Money the bank sent out of the service's account at the service's request (a refund): a debit on its statement. */
export interface BankDebit {
  /** The bank's reference of the transfer (a NIP session id). */
  sessionId: string;
  /** The service's reference of the transfer, as it was sent (`BankGateway.send`). */
  reference: string;
  amount: Decimal;
  currency: 'NGN';
  occurredAt: Date;
}

/** Outcome of an outbound transfer on a refund rail (chain or bank). */
export interface RailTransfer {
  reference: string;
  status: 'PENDING' | 'SUCCESSFUL' | 'FAILED';
  /** The rail's own id of the transfer (tx hash, bank session id). */
  providerReference: string | null;
  failureReason: string | null;
}

export interface ChainGateway {
  /** The receiving address for `label` (one per tenant and network); idempotent per label. */
  createAddress(network: Network, label: string): Promise<{ address: string }>;
  /**
   * Transfers into the service's addresses in chain order after `cursor` (opaque; null starts at
   * the beginning), at most `limit`, with the chain's tip (confirmations = tip - block + 1) and
   * the tip block's time: a listing that reaches the tip has shown every transfer before it.
   */
  listTransfers(
    network: Network,
    args: { cursor: string | null; limit: number },
  ): Promise<{ transfers: ChainTransfer[]; nextCursor: string | null; tip: number; tipTime: Date }>;
  /**
   * The hot wallet's mined sends in chain order after `cursor` (opaque; null starts at the
   * beginning), at most `limit`, with the chain's tip and its time: reconciliation's record of
   * the money that left on the chain.
   */
  listSends(
    network: Network,
    args: { cursor: string | null; limit: number },
  ): Promise<{ sends: ChainSendLine[]; nextCursor: string | null; tip: number; tipTime: Date }>;
  /** Sends USDT out (refunds); idempotent on `reference`. */
  send(
    network: Network,
    args: { reference: string; toAddress: string; amount: Decimal },
  ): Promise<RailTransfer>;
  /** The current state of a transfer sent with `reference`, or null if the chain never saw it. */
  sendStatus(network: Network, reference: string): Promise<RailTransfer | null>;
}

export interface BankGateway {
  /**
   * Opens a virtual account for one payment instruction; each credit to it is notified to
   * `callbackUrl` with a signed request (see `docs/sandbox.md`) and listed in the statement
   * ({@link BankGateway.listCredits}). Idempotent on `reference`.
   */
  createVirtualAccount(args: {
    reference: string;
    accountName: string;
    callbackUrl: string;
    expiresAt: Date;
  }): Promise<{ accountNumber: string; bankName: string; bankCode: string }>;
  /** Sends NGN to a bank account (refunds); idempotent on `reference`. */
  send(args: {
    reference: string;
    bankCode: string;
    accountNumber: string;
    accountName: string;
    amount: Decimal;
    narration: string;
  }): Promise<RailTransfer>;
  sendStatus(reference: string): Promise<RailTransfer | null>;
  /**
   * The statement of credits to the service's virtual accounts, in the order the bank made them,
   * after `cursor` (opaque; null starts at the beginning), at most `limit`: the pull that finds
   * every credit whose notification never arrived. `asOf` is the bank's time up to which the
   * statement is complete once a page comes back short. The statement also lists the bank's
   * reversals of earlier credits and the transfers it sent for the service (refunds); `lines`
   * counts every kind on the page.
   */
  listCredits(args: { cursor: string | null; limit: number }): Promise<{
    credits: BankCredit[];
    reversals: BankReversal[];
    debits: BankDebit[];
    lines: number;
    nextCursor: string | null;
    asOf: Date;
  }>;
}

/** What the processor says about one dispatch attempt. */
export interface ProcessorResult {
  reference: string;
  /** ACCEPTED: taken, outcome to follow by callback or query. */
  status: 'ACCEPTED' | 'SUCCESSFUL' | 'FAILED';
  processorReference: string | null;
  failureCode: string | null;
  failureReason: string | null;
  /** For FAILED: whether a new attempt may succeed. */
  retryable: boolean;
}

/** A payout's final state as the processor's settlement report lists it. */
export interface SettledPayout {
  reference: string;
  processorReference: string | null;
  amount: Decimal;
  currency: string;
  /** RETURNED: it succeeded, then the beneficiary's institution sent the money back. */
  status: 'SUCCESSFUL' | 'FAILED' | 'RETURNED';
  failureCode: string | null;
  settledAt: Date;
  returnedAt: Date | null;
}

export interface PayoutProcessor {
  /** Name recorded on outflows. */
  readonly name: string;
  /**
   * Submits one attempt. `reference` is the outflow id: submitting the same reference again
   * returns the first result and never pays twice. Outcomes arrive at `callbackUrl`, signed.
   */
  submit(args: {
    reference: string;
    attempt: number;
    destinationType: DestinationType;
    country: string;
    currency: string;
    amount: Decimal;
    accountUnique: string;
    providerCode: string | null;
    providerName: string;
    accountName: string | null;
    callbackUrl: string;
  }): Promise<ProcessorResult>;
  /** The processor's view of an attempt, or null if it never received it. */
  query(reference: string): Promise<ProcessorResult | null>;
  /**
   * The settlement report of one UTC day (`YYYY-MM-DD`): the payouts that reached their final
   * state that day and those returned that day, a page after `cursor`; `complete` once the day
   * is over at the processor.
   */
  settlementReport(
    day: string,
    args: { cursor: string | null; limit: number },
  ): Promise<{ payouts: SettledPayout[]; nextCursor: string | null; complete: boolean }>;
  /**
   * The changes to the settlement reports after `cursor`, oldest first: each payout that reached
   * its final state or was returned since, as its report line now reads, with when the processor
   * recorded that change. `nextCursor` is where the next listing resumes (null: where it was);
   * `asOf` the processor's time up to which the listing is complete when this page is the last.
   */
  settlementChanges(args: { cursor: string | null; limit: number }): Promise<{
    payouts: SettlementChange[];
    nextCursor: string | null;
    asOf: Date;
  }>;
}

/** A report line that changed, as the processor's listing of changes gives it. */
export interface SettlementChange extends SettledPayout {
  /** When the processor recorded the change (its own clock): the listing's order. */
  changedAt: Date;
}

export interface Rails {
  chains: ChainGateway;
  bank: BankGateway;
  processor: PayoutProcessor;
}
