import { and, assign, setup } from 'xstate';
import type { MachineTexts, StateMeta, TransitionMeta } from './texts.ts';

/**
 * A proposal of an operator to move money (four eyes, maker-checker): attribute an inflow, record
 * one as returned, fail a held payout, retry or raise a refund. The action runs only once a second
 * operator approves it, in the transaction that records the approval; the machine decides whether
 * a decision is allowed, the caller runs the action. An action is proposed only if it would run at
 * that moment: the caller rehearses it with its own checks first (and rolls it back), and an action
 * they refuse is refused there and then, with no proposal.
 *
 *   (proposed) --> PENDING
 *   PENDING --APPROVE [bySecondPerson and moreApprovalsNeeded]--> PENDING (one approval recorded)
 *   PENDING --APPROVE [bySecondPerson]--> APPROVED (final; the action ran)
 *   PENDING --ACTION_FAILED--> FAILED (final; approved, but the action's checks refused it)
 *   PENDING --REJECT--> REJECTED (final)
 *   PENDING --EXPIRE [pastItsTime]--> EXPIRED (final)
 *
 * A proposal needs `required` approvals (1 to 3, from the approval rule in force when it was
 * proposed), each from a different operator who is not its proposer; the last one runs the action.
 * Which roles may approve is the caller's check, from the same rule.
 *
 * With four eyes off (FOUR_EYES=false) the proposer's own APPROVE is allowed: the action runs at
 * once and the proposal records it. Anything else is ignored (a second approval, a decision on a
 * decided proposal, an early EXPIRE): the snapshot comes back as the very same object and the
 * caller treats that as a refusal. The machine asks for no actions.
 *
 * Every state and transition carries its plain-language text (`description`, `meta`: see
 * `./texts.ts`); `approvalTexts` at the end holds the rest.
 */

export type ApprovalStatus = 'PENDING' | 'APPROVED' | 'REJECTED' | 'EXPIRED' | 'FAILED';

export interface ApprovalContext {
  proposerId: string;
  /** How many distinct approvals it needs (absent in proposals made before rules: 1). */
  required?: number;
  /** Who has approved it so far, in order (absent in proposals made before rules: nobody). */
  approverIds?: string[];
  /** ISO time after which nobody can approve it any more. */
  expiresAt: string;
  /** Who approved, rejected, or approved in vain; null while PENDING and once EXPIRED. */
  deciderId: string | null;
  /** The decider's note (required to reject). */
  decisionNote: string | null;
  /** Why the approved action was refused: a catalogue code and the reason in words. */
  failure: { code: string; reason: string } | null;
}

export interface ApprovalInput {
  proposerId: string;
  expiresAt: string;
  required?: number;
}

export type ApprovalEvent =
  | { type: 'APPROVE'; approverId: string; fourEyes: boolean; note: string | null; now: Date }
  | { type: 'ACTION_FAILED'; approverId: string; code: string; reason: string; now: Date }
  | { type: 'REJECT'; operatorId: string; note: string; now: Date }
  | { type: 'EXPIRE'; now: Date };

/** Who has approved so far: nobody in a proposal persisted before rules, which has no list. */
const approversOf = (context: ApprovalContext): string[] => context.approverIds ?? [];

/** The approvers once this event's approver is added (only APPROVE runs the actions that use it). */
const withApprover = (context: ApprovalContext, event: ApprovalEvent): string[] =>
  // Stryker disable next-line ConditionalExpression: narrows the event's type; only APPROVE runs it
  event.type === 'APPROVE' ? [...approversOf(context), event.approverId] : approversOf(context);

export const approvalMachine = setup({
  types: {
    context: {} as ApprovalContext,
    events: {} as ApprovalEvent,
    input: {} as ApprovalInput,
    meta: {} as StateMeta,
    transitionMeta: {} as TransitionMeta,
  },
  guards: {
    // Four eyes: the approver is neither the proposer nor one who approved already. Off, the
    // proposer approves its own.
    bySecondPerson: ({ context, event }) =>
      event.type === 'APPROVE' &&
      (!event.fourEyes ||
        (event.approverId !== context.proposerId && !approversOf(context).includes(event.approverId))),
    // With four eyes off, one approval (the proposer's own) runs the action, whatever the rule asks.
    moreApprovalsNeeded: ({ context, event }) => {
      // Stryker disable next-line ConditionalExpression: narrows the event's type; only APPROVE is guarded by it
      if (event.type !== 'APPROVE') return false;
      return event.fourEyes && approversOf(context).length + 1 < (context.required ?? 1);
    },
    pastItsTime: ({ context, event }) =>
      event.type === 'EXPIRE' && event.now.getTime() >= Date.parse(context.expiresAt),
  },
  // Stryker disable ConditionalExpression: each action narrows the event's type for TypeScript; only its own event runs it
  actions: {
    recordPartialApproval: assign({
      approverIds: ({ context, event }) => withApprover(context, event),
    }),
    recordApproval: assign({
      approverIds: ({ context, event }) => withApprover(context, event),
      deciderId: ({ event }) => (event.type === 'APPROVE' ? event.approverId : null),
      decisionNote: ({ event }) => (event.type === 'APPROVE' ? event.note : null),
    }),
    recordFailure: assign({
      deciderId: ({ event }) => (event.type === 'ACTION_FAILED' ? event.approverId : null),
      failure: ({ event }) =>
        event.type === 'ACTION_FAILED' ? { code: event.code, reason: event.reason } : null,
    }),
    recordRejection: assign({
      deciderId: ({ event }) => (event.type === 'REJECT' ? event.operatorId : null),
      decisionNote: ({ event }) => (event.type === 'REJECT' ? event.note : null),
    }),
  },
  // Stryker restore ConditionalExpression
}).createMachine({
  id: 'approval',
  description: 'An operator’s proposal to move money, which runs only once a second operator approves it.',
  initial: 'PENDING',
  context: ({ input }) => ({
    proposerId: input.proposerId,
    expiresAt: input.expiresAt,
    required: input.required ?? 1,
    approverIds: [],
    deciderId: null,
    decisionNote: null,
    failure: null,
  }),
  states: {
    PENDING: {
      description:
        'The proposal waits for a second operator (approver or admin) to approve or reject it, for at most {APPROVAL_TTL_HOURS} hours. Nothing has moved yet.',
      on: {
        APPROVE: [
          {
            guard: and(['bySecondPerson', 'moreApprovalsNeeded']),
            actions: 'recordPartialApproval',
            description:
              'One more operator approves a proposal whose rule asks for more approvals than it has: the approval is recorded, nothing moves yet, and it waits for the next approver.',
            meta: { by: ['OPERATOR_FOUR_EYES'] },
          },
          {
            guard: 'bySecondPerson',
            target: 'APPROVED',
            actions: 'recordApproval',
            description:
              'The last approval it needs is given (a second operator, or a third or fourth where its rule asks for more), and the action runs in the same step, with every check it has when done directly.',
            meta: {
              by: ['OPERATOR_FOUR_EYES'],
              causes: [
                { machine: 'inflow', event: 'OPERATOR_ATTRIBUTE', note: 'an inflow attributed to a payout' },
                { machine: 'inflow', event: 'OPERATOR_RETURN', note: 'an inflow recorded as returned' },
                { machine: 'payout', event: 'OPERATOR_FAIL', note: 'a held payout failed' },
                {
                  machine: 'payout',
                  event: 'PAYEE_NAME_ACCEPTED',
                  note: "a held payout's payee name accepted",
                },
                { machine: 'refund', event: 'OPERATOR_RETRY', note: 'a failed refund retried' },
                { machine: 'refund', creates: true, note: "a held payout's refund raised" },
                {
                  machine: 'refund',
                  creates: true,
                  note: "a successful payout's set-aside overpayment returned",
                },
                {
                  machine: 'recon-break',
                  event: 'RESOLVE',
                  note: 'a reconciliation break resolved by moving money',
                },
              ],
            },
          },
        ],
        ACTION_FAILED: {
          target: 'FAILED',
          actions: 'recordFailure',
          description:
            'A second operator approves, but the action is no longer possible (the money was matched meanwhile, the refund succeeded): nothing moves, and the proposal keeps the reason.',
          meta: { by: ['OPERATOR'] },
        },
        REJECT: {
          target: 'REJECTED',
          actions: 'recordRejection',
          description:
            'An approver or admin other than the proposer rejects the proposal, or the proposer withdraws it, with a note saying why. Nothing moves.',
          meta: { by: ['OPERATOR'] },
        },
        EXPIRE: {
          guard: 'pastItsTime',
          target: 'EXPIRED',
          description:
            'Nobody decided within {APPROVAL_TTL_HOURS} hours: the proposal lapses and nothing moves. Propose again if it is still wanted.',
          meta: { by: ['SYSTEM'] },
        },
      },
    },
    APPROVED: {
      type: 'final',
      description: 'Approved by a second operator; the action ran when it was approved.',
    },
    FAILED: {
      type: 'final',
      description:
        'Approved, but the action was refused because the situation had changed; nothing moved. The reason is kept.',
    },
    REJECTED: {
      type: 'final',
      description:
        'Rejected by an approver or admin other than the proposer, or withdrawn by the proposer, with a note; nothing moved.',
    },
    EXPIRED: {
      type: 'final',
      description: 'Nobody decided in time; nothing moved.',
    },
  },
});

/** How a proposal begins, and its guards in plain words. */
export const approvalTexts = {
  holdsMoney: false,
  created: {
    description:
      'An operator asks to move money (attribute or return an inflow, fail a held payout, retry or raise a refund) and says why in a note. The action’s own checks run first, and nothing stays of that trial: an action they refuse now (no such inflow, a payout not held, a refund not failed...) is refused with their reason and no proposal is made. With four eyes off (FOUR_EYES=false), the action runs at once and the proposal is recorded as approved by its proposer.',
    by: ['OPERATOR'],
  },
  guards: {
    bySecondPerson: {
      holds:
        'the approver is neither the operator who proposed it nor one who approved it already (or four eyes are off)',
      fails: 'the approver proposed it, or approved it already',
    },
    moreApprovalsNeeded: {
      holds: 'its rule asks for more distinct approvals than it will have with this one',
      fails: 'this approval is the last one its rule asks for',
    },
    pastItsTime: {
      holds: 'the proposal is older than {APPROVAL_TTL_HOURS} hours',
      fails: 'the proposal is still within its {APPROVAL_TTL_HOURS} hours',
    },
  },
} as const satisfies MachineTexts<typeof approvalMachine>;
