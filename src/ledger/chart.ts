/**
 * The chart of accounts: every account the ledger posts to, by kind. An account's name says where
 * the money is and whose it is (`tenants:<tenant>:payouts:<payout>` is one payout's money, held by
 * us; `world:beneficiaries` is money that reached beneficiaries and left the service). The ledger
 * imports no domain: the domains name accounts through {@link accountName} and describe the money
 * their transitions move as flows (`./flows.ts`). `docs/ledger.md` explains the chart;
 * `docs/ledger-chart.md` and its picture are generated from this file and the flows.
 *
 * Signs: an entry's amount is signed, and a ledger transaction's amounts sum to zero per currency
 * (the database refuses anything else). A positive balance is money sitting in the account; the
 * rail accounts (`collection:*`), where money enters the books, go negative by exactly what came
 * in through them, and the `world:*` accounts, where it leaves, grow by what left.
 */

/** Which part of the books an account belongs to. */
export type AccountGroup = 'rail' | 'tenant' | 'transit' | 'service' | 'world';

export interface AccountKind {
  /** The account's name with `{placeholders}` for its parts. */
  pattern: string;
  group: AccountGroup;
  /** Where the money is, in plain words. */
  where: string;
  /** Whose it is, and what happens to it next. */
  whose: string;
  /**
   * The line of the balances table its entries are summed into, when that is not the account
   * itself: one payout's or one virtual account's balance is read from its own entries instead.
   */
  summary?: string;
}

export const ACCOUNT_KINDS = {
  depositAddress: {
    pattern: 'collection:crypto:{network}:{address}',
    group: 'rail',
    where: "On one of the service's USDT deposit addresses (one per tenant and network).",
    whose:
      'The rail side: minus everything that arrived on the address. What the chain shows for the address, with the opposite sign.',
  },
  virtualAccount: {
    pattern: 'collection:bank:{account_number}',
    group: 'rail',
    where: 'On one of the NGN virtual accounts the bank opened for a payment instruction.',
    whose:
      "The rail side: minus everything credited to the account. What the bank's statement shows for it, with the opposite sign.",
    summary: 'collection:bank',
  },
  suspense: {
    pattern: 'tenants:{tenant}:suspense',
    group: 'tenant',
    where: 'With us, attributed to no payout.',
    whose:
      "The merchant's, but nobody can say for which payout: money matching has not judged yet, money below every open instruction, late or unexpected money. An operator attributes it to a payout or returns it.",
  },
  payout: {
    pattern: 'tenants:{tenant}:payouts:{payout}',
    group: 'tenant',
    where: 'With us, attributed to one payout.',
    whose:
      "The merchant's money for that payout: it is converted and sent to the processor, or refunded when the payout fails. Zero once the payout is over and its money gone.",
    summary: 'tenants:{tenant}:payouts',
  },
  overpayments: {
    pattern: 'tenants:{tenant}:to_return:overpayments',
    group: 'tenant',
    where: 'With us, set aside from payouts that succeeded.',
    whose:
      "The merchant's: what it paid beyond the amount asked for on payouts that succeeded (each entry names its payout). It is owed back to the merchant: an operator proposes its return and a second one approves it (`overpayment return PAYOUT_ID`), which moves it back to the payout and sends it, less the refund fee, to the merchant's refund destination as a refund of kind OVERPAYMENT.",
  },
  processor: {
    pattern: 'transit:processor:{processor}',
    group: 'transit',
    where: 'With the payout processor: accepted, the beneficiary not yet paid.',
    whose:
      "The payouts' (each entry names its payout): paid to the beneficiary on success, back to the payout when the processor fails the attempt.",
  },
  refundRail: {
    pattern: 'transit:refunds:{rail}',
    group: 'transit',
    where: 'On its way back to the merchant on a chain or the bank: sent, not yet confirmed.',
    whose:
      "The payouts' being refunded (each entry names its payout): it reaches the merchant, or comes back to the payout when the refund fails.",
  },
  platformFee: {
    pattern: 'fees:platform',
    group: 'service',
    where: 'With us.',
    whose: "The service's: the platform fee of payouts that succeeded.",
  },
  networkFee: {
    pattern: 'fees:network',
    group: 'service',
    where: 'With us.',
    whose: "The service's: the network fee charged on payouts that succeeded.",
  },
  refundFee: {
    pattern: 'fees:refund',
    group: 'service',
    where: 'With us.',
    whose: "The service's: the network fee kept from each refund sent.",
  },
  conversion: {
    pattern: 'conversion',
    group: 'service',
    where: 'With us: the two sides of every conversion at a locked rate.',
    whose:
      "The service's currency position: the settlement currency it took (positive) against the destination currency it gave the processor (negative).",
  },
  railDifferences: {
    pattern: 'adjustments:rails:{rail}',
    group: 'service',
    where:
      'With us, or missing: what a rail showed more or less than the books, once an approved reconciliation resolution booked the difference.',
    whose:
      "The service's: money a rail shows arriving that nobody can attribute (positive), or money the books counted that the rail does not have, such as a credit the bank reversed (negative), to recover or write off. See docs/reconciliation.md.",
  },
  beneficiaries: {
    pattern: 'world:beneficiaries',
    group: 'world',
    where: 'Outside the service: paid to beneficiaries by the processor.',
    whose: "The beneficiaries'. Grows by every payout paid; never comes back.",
  },
  merchant: {
    pattern: 'world:merchants:{tenant}',
    group: 'world',
    where: 'Outside the service: back with the merchant.',
    whose: "The merchant's again: refunds that reached it and money an operator returned.",
  },
} as const satisfies Record<string, AccountKind>;

export type AccountKindName = keyof typeof ACCOUNT_KINDS;

type Placeholders<S extends string> = S extends `${string}{${infer P}}${infer Rest}`
  ? P | Placeholders<Rest>
  : never;

/** The parts an account kind's name needs. */
export type AccountParts<K extends AccountKindName> = Record<
  Placeholders<(typeof ACCOUNT_KINDS)[K]['pattern']>,
  string
>;

/** The account of `kind` with its parts filled in; a part may not contain `:`. */
export function accountName<K extends AccountKindName>(kind: K, parts: AccountParts<K>): string {
  return ACCOUNT_KINDS[kind].pattern.replace(/\{(\w+)\}/g, (_, part: string) => {
    const value = (parts as Record<string, string>)[part];
    if (value === undefined || value === '' || value.includes(':')) {
      throw new Error(`account ${kind}: part ${part} is ${JSON.stringify(value)}`);
    }
    return value;
  });
}

const KIND_MATCHERS = (Object.keys(ACCOUNT_KINDS) as AccountKindName[]).map((name) => {
  const kind: AccountKind = ACCOUNT_KINDS[name];
  const regex = (pattern: string) => new RegExp(`^${pattern.replace(/\{\w+\}/g, '[^:]+')}$`);
  return { name, matches: [regex(kind.pattern), ...(kind.summary ? [regex(kind.summary)] : [])] };
});

/**
 * The kind of an account by its name (a summary line, `tenants:<tenant>:payouts`, is of its
 * accounts' kind), or null for a name the chart does not have.
 */
export function accountKindOf(account: string): AccountKindName | null {
  return KIND_MATCHERS.find((k) => k.matches.some((m) => m.test(account)))?.name ?? null;
}

/**
 * What an entry seen from a payout's money is, in the merchant's statement
 * (`GET /v1/payouts/{payout_id}/money-movements`): a closed list, documented in docs/ledger.md.
 */
export const MOVEMENT_TYPES = [
  'money_received',
  'conversion',
  'platform_fee',
  'network_fee',
  'overpayment_set_aside',
  'paid_out',
  'refund_fee',
  'refunded',
  'returned',
  'reversed',
  'reversal_covered',
] as const;
export type MovementType = (typeof MOVEMENT_TYPES)[number];

/**
 * Each movement type in a few words, as the console's payout page and the compliance pages name
 * it (a fee's type names the fee: "platform fee", "network fee", "refund fee").
 */
export const MOVEMENT_LABELS = {
  money_received: 'money received',
  conversion: 'conversion',
  platform_fee: 'platform fee',
  network_fee: 'network fee',
  overpayment_set_aside: 'overpayment set aside',
  paid_out: 'paid out',
  refund_fee: 'refund fee',
  refunded: 'refunded',
  returned: 'returned',
  reversed: 'reversed',
  reversal_covered: 'reversal covered by the service',
} as const satisfies Record<MovementType, string>;

/** What the merchant's statement says of each movement type. */
export const MOVEMENT_TEXTS = {
  money_received:
    'Money the merchant sent, attributed to the payout (by matching, or by an operator). Positive.',
  conversion:
    "The payout's money converted at its locked rate when it goes to the processor: negative in the settlement currency, positive in the destination currency. Reversed, with the signs the other way, when the processor fails the attempt and the money comes back.",
  platform_fee: 'The platform fee, kept when the payout succeeds. Negative.',
  network_fee: 'The network fee, kept when the payout succeeds. Negative.',
  overpayment_set_aside:
    "What the merchant paid beyond the amount asked for, moved when the payout succeeds to the merchant's overpayments account (`tenants:<tenant>:to_return:overpayments`), where it waits to be returned (negative); taken back from there when an operator's approved return sends it to the merchant, or when the refund of a payout the processor returned after success returns it with the rest (positive, followed by the refund's `refund_fee` and `refunded`).",
  paid_out: 'The destination amount, paid to the beneficiary by the processor. Negative.',
  refund_fee:
    'The network fee of the refund, kept when the refund is sent (negative); given back when the refund fails (positive).',
  refunded:
    "The refund, arrived at the merchant's refund destination: all a failed payout received less the refund fee, or a successful payout's returned overpayment less the refund fee. Negative.",
  returned:
    'Money a rail or the processor gave back after it had left (a transfer returned after success). Positive.',
  reversed:
    'Money the bank took back after crediting it for the payout (a reversed credit), once an approved reconciliation resolution books it. Negative; always followed by its `reversal_covered`.',
  reversal_covered:
    "The same amount, advanced by the service (`adjustments:rails:<rail>`) so that the payout keeps what its state says it received: the service's to recover from the merchant or write off. Positive.",
} as const satisfies Record<MovementType, string>;

/** The objects whose transitions move money: each ledger transaction names one of them as its cause. */
export const CAUSE_OBJECTS = ['inflow', 'outflow', 'refund', 'payout', 'approval'] as const;
export type CauseObject = (typeof CAUSE_OBJECTS)[number];
