/**
 * The exception queues, declared once: where money (or a message or decision about it) waits for
 * a person, and how long it may wait before it is overdue. Everything else reads this list: the
 * configuration (one `OVERDUE_<QUEUE>_HOURS` variable per queue, `src/config.ts`), the counts and
 * lists of `admin.exceptions` (`./exceptions.ts`), the metrics and the overdue log line
 * (`./overdue.ts`), the alert rules (`docs/alerts/`) and the machine pages (`src/docs/compliance.ts`,
 * which say for every state a queue holds how long it may wait, who is alerted, and what follows).
 *
 * This module imports nothing, so that the configuration can read it.
 */

export const EXCEPTION_QUEUES = [
  'PAYOUTS_HELD_UNDERPAID',
  'PAYOUTS_HELD_PAYEE_NAME',
  'INFLOWS_UNMATCHED',
  'REFUNDS_FAILED',
  'MONEY_HELD_NO_REFUND_DESTINATION',
  'PAYOUTS_OVERPAYMENT_TO_RETURN',
  'WEBHOOK_DELIVERIES_DEAD',
  'APPROVALS_PENDING',
  'RECONCILIATION_BREAKS',
  'OUT_OF_BALANCE',
] as const;
export type ExceptionQueue = (typeof EXCEPTION_QUEUES)[number];

/** The configuration variable of a queue's overdue age, in hours. */
export type OverdueVariable = `OVERDUE_${ExceptionQueue}_HOURS`;

export function overdueVariable(queue: ExceptionQueue): OverdueVariable {
  return `OVERDUE_${queue}_HOURS`;
}

/** How long an item may wait, and what happens once it has waited longer. */
export interface OverdueRule {
  /** Hours after `since` at which an item is overdue, unless `OVERDUE_<QUEUE>_HOURS` says otherwise. */
  defaultHours: number;
  /** What the service does on its own once the item is overdue (or says that it does nothing, and why). */
  afterwards: string;
}

export interface QueueInfo {
  title: string;
  /** What waits there, and what a person can do about it. */
  description: string;
  /** The machine whose objects wait there, and the state they wait in. */
  machine: string;
  state: string;
  /**
   * The states, as `machine/path`, whose objects wait in this queue (the machine pages say the
   * limit there): `machine`'s own, and those of objects that wait with them (the money held
   * against a payout held underpaid).
   */
  states: readonly string[];
  /** What the age is counted from. */
  since: string;
  /** The `admin.*` query that lists the queue's objects, oldest first where it can; null when none does yet. */
  list: string | null;
  overdue: OverdueRule;
}

/** Who is told of an overdue item, and how: the same for every queue (docs/alerts/, docs/operations.md). */
export const OVERDUE_ALERTING =
  'Once overdue, the item shows first and marked on the console’s Exceptions page, `payout_exception_overdue{queue}` counts it and the log says `exception overdue` once for it; the alert `ExceptionQueueOverdue` (docs/alerts/) pages the operations on-call 15 minutes later, and `ExceptionQueueOverdueForADay` the operations lead a day after that. Neither stops until the item leaves the queue.';

export const QUEUE_INFO: Record<ExceptionQueue, QueueInfo> = {
  PAYOUTS_HELD_UNDERPAID: {
    title: 'Payouts held underpaid',
    description:
      'Money arrived but less than the payout asked for. The merchant may top it up; otherwise operators fail the payout (four eyes) and its refund returns the money.',
    machine: 'payout',
    state: 'PENDING_PAYMENT.held',
    states: ['payout/PENDING_PAYMENT.held', 'inflow/HELD.attributed'],
    since: 'the first underpaid settlement',
    list: 'admin.payouts.heldUnderpaid',
    overdue: {
      defaultHours: 24,
      afterwards:
        'The service does not fail the payout on its own: whether the merchant still tops it up is a person’s call, and failing it moves money (four eyes). The money stays held and the alert goes on until an operator decides.',
    },
  },
  PAYOUTS_HELD_PAYEE_NAME: {
    title: "Payouts held: the payee's name does not match",
    description:
      "The name the merchant gave for the beneficiary does not match the name the institution holds (or the institution could not say), and the merchant's policy is to hold such payouts. No money has been asked for. Operators accept the name once the merchant confirms it, or fail the payout (four eyes).",
    machine: 'payout',
    state: 'CREATED.payeeHeld',
    states: ['payout/CREATED.payeeHeld'],
    since: 'the check held it',
    list: 'admin.payees.held',
    overdue: {
      defaultHours: 24,
      afterwards:
        'The service neither pays nor fails the payout on its own: whether the beneficiary is the right one is for the merchant to confirm and an operator to decide (four eyes). No money has been asked for, so none is at risk; the payout waits, and the alert goes on until an operator decides.',
    },
  },
  // `admin.settlement.inflows` lists these as its rows with payout_id null; its other rows are the
  // money held against the payouts of PAYOUTS_HELD_UNDERPAID (`inflowsNeedingAttention`).
  INFLOWS_UNMATCHED: {
    title: 'Unmatched and late inflows',
    description:
      'Money no open instruction could take: it came late, repeated, matched nothing, or fell below every open instruction. Operators attribute it to a payout or record its return (four eyes).',
    machine: 'inflow',
    state: 'UNMATCHED, HELD.unattributed',
    states: ['inflow/UNMATCHED', 'inflow/HELD.unattributed'],
    since: 'the money arrived',
    list: 'admin.settlement.inflows',
    overdue: {
      defaultHours: 24,
      afterwards:
        'The service does not return the money on its own: whose it is, and where it goes back to, needs a person (four eyes). It stays held and the alert goes on until it is attributed or returned.',
    },
  },
  REFUNDS_FAILED: {
    title: 'Failed refunds',
    description:
      "The rail refused a refund (usually the merchant's destination). Once the merchant corrects it, an operator retries the same refund.",
    machine: 'refund',
    state: 'FAILED',
    states: ['refund/FAILED'],
    since: 'the refund failed',
    list: 'admin.refunds.failed',
    overdue: {
      defaultHours: 48,
      afterwards:
        'The service does not retry on its own: the same destination would fail again, and a new one comes from the merchant. The money stays held and the alert goes on until an operator retries the refund.',
    },
  },
  MONEY_HELD_NO_REFUND_DESTINATION: {
    title: 'Money held without a refund destination',
    description:
      'A payout failed after its money arrived, and the merchant had no refund destination for that currency. Once the merchant registers one, an operator raises the refund.',
    machine: 'payout',
    state: 'FAILED',
    states: ['payout/FAILED'],
    since: 'the payout failed',
    list: 'admin.refunds.held',
    overdue: {
      defaultHours: 48,
      afterwards:
        'The service has nowhere to send the money on its own. It stays held and the alert goes on until the merchant registers a destination and an operator raises the refund.',
    },
  },
  PAYOUTS_OVERPAYMENT_TO_RETURN: {
    title: 'Overpayments to return',
    description:
      "A payout succeeded after the merchant paid more than it asked for: the excess was set aside in the merchant's overpayments account (`tenants:<tenant>:to_return:overpayments`), owed back. An operator returns it to the merchant's refund destination (four eyes), once the merchant has one for the currency.",
    machine: 'payout',
    state: 'SUCCESSFUL',
    states: ['payout/SUCCESSFUL'],
    since: 'the payout succeeded',
    list: 'admin.refunds.overpayments',
    overdue: {
      defaultHours: 72,
      afterwards:
        'The service does not return the excess on its own: sending money to the merchant is a four-eyes decision, and it needs a refund destination the merchant registered. The excess stays set aside and the alert goes on until an operator’s return is approved (or a refund of the whole payout returns it).',
    },
  },
  WEBHOOK_DELIVERIES_DEAD: {
    title: 'Dead webhook deliveries',
    description:
      "Every attempt to tell the merchant's server about an event failed, and nobody has sent the event again since. An operator redelivers it once the merchant's endpoint works again.",
    machine: 'webhook-delivery',
    state: 'DEAD',
    states: ['webhook-delivery/DEAD'],
    since: 'the last attempt failed',
    list: 'admin.webhooks.dead',
    overdue: {
      defaultHours: 24,
      afterwards:
        'The service sends nothing again on its own: the merchant’s endpoint failed five times, and the merchant can read every event with `GET /v1/payouts/{id}` meanwhile. The alert goes on until an operator redelivers the event.',
    },
  },
  APPROVALS_PENDING: {
    title: 'Proposals waiting for approval',
    description:
      'An operator proposed to move money (attribute or return an inflow, fail a held payout, retry or raise a refund). A second operator, an approver or admin, approves or rejects it; nothing moves until then.',
    machine: 'approval',
    state: 'PENDING',
    states: ['approval/PENDING'],
    since: 'it was proposed',
    list: 'admin.approvals.list',
    overdue: {
      defaultHours: 24,
      afterwards:
        'After `APPROVAL_TTL_HOURS` the `approvals` job expires the proposal (nothing moves, a warning is logged). Nothing is dropped: the payout, inflow or refund it concerned is still in its own queue, overdue there, and its alert goes on until someone proposes again and it is decided.',
    },
  },
  RECONCILIATION_BREAKS: {
    title: 'Reconciliation breaks',
    description:
      "A day's reconciliation found a difference between the service's books and what a rail reports (the bank's statement, a chain, the processor's settlement report). An operator explains it with a note, or proposes a resolution that moves money (four eyes).",
    machine: 'recon-break',
    state: 'OPEN',
    states: ['recon-break/OPEN'],
    since: 'a run found it',
    list: 'admin.recon.breaks',
    overdue: {
      defaultHours: 24,
      afterwards:
        'The service resolves no break on its own: a difference between the books and a rail is explained by a person. The alert goes on until an operator resolves it.',
    },
  },
  OUT_OF_BALANCE: {
    title: 'Out of balance',
    description:
      "A check of the ledger found money that is not where the objects say it is: a payout's money, a tenant's suspense (docs/ledger.md). It should always be empty: each item names what is off and by how much (`ledger violations`), and leaves the queue when a later check finds it in balance.",
    machine: 'payout',
    state: '(any)',
    states: [],
    since: 'a check first found it',
    list: 'admin.ledger.violations',
    overdue: {
      defaultHours: 1,
      afterwards:
        'The service corrects no entry on its own: the ledger is append-only, and a correction is a new transaction a person decides. The `ledger` job checks again every minute, and the alert goes on until a check finds the money in balance.',
    },
  },
};

/** The overdue age of every queue, in hours, from the configuration. */
export function overdueHours(
  config: Readonly<Record<OverdueVariable, number>>,
): Record<ExceptionQueue, number> {
  return Object.fromEntries(EXCEPTION_QUEUES.map((q) => [q, config[overdueVariable(q)]])) as Record<
    ExceptionQueue,
    number
  >;
}
