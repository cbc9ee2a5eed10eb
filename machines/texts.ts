import type { AnyStateMachine } from 'xstate';

/**
 * The plain-language texts every machine carries beside its states and transitions, for the
 * people who review the machines without reading code (product, compliance) and for the operators'
 * console. `src/docs` turns them into the pages at `/docs/machines` and `admin.machines`, and
 * refuses a machine whose state, transition or guard has no text, so a change to a machine without
 * its sentence fails the docs check.
 *
 * Where they live:
 * - a state's `description` says what it means; its `meta` ({@link StateMeta}) says where the money is;
 * - a transition's `description` says what happens; its `meta` ({@link TransitionMeta}) says who can
 *   cause it and which other machines it moves;
 * - a machine's own `description` is its one-line summary; how an object begins and what each guard
 *   means are in the machine file's `...Texts` export ({@link MachineTexts}).
 *
 * Texts may name a threshold as `{NAME}` (a configuration variable such as
 * `{DISPATCH_MAX_ATTEMPTS}`, or a constant of the code): `src/docs` writes it out with the value in
 * force (`DISPATCH_MAX_ATTEMPTS` = 3), so the machines import no configuration.
 */

/**
 * Where the money stands while an object is in a state: the merchant has not paid it yet, it is
 * on a chain but not yet ours (awaiting confirmations), it sits with us, it is with the processor,
 * it is on its way back to the merchant, it reached the beneficiary, it went back to the merchant,
 * or it waits for a person to decide.
 */
export type MoneyPlace =
  | 'NOT_YET_RECEIVED'
  | 'ON_THE_CHAIN'
  | 'WITH_US'
  | 'WITH_PROCESSOR'
  | 'ON_ITS_WAY_BACK'
  | 'WITH_BENEFICIARY'
  | 'BACK_WITH_MERCHANT'
  | 'HELD_FOR_PERSON';

/**
 * Who can cause a transition. `OPERATOR_FOUR_EYES` is an operator's proposal approved by a second
 * operator (when four eyes are on); `OPERATOR` is an operator acting alone on something that moves
 * no money.
 */
export type Actor = 'SYSTEM' | 'PROCESSOR' | 'BANK_OR_CHAIN' | 'OPERATOR' | 'OPERATOR_FOUR_EYES' | 'MERCHANT';

/** The `meta` of a state. */
export interface StateMeta {
  /**
   * Where the money is in this state. Required on every state that has no inner states, in a
   * machine that holds money; absent in a machine that holds none (`holdsMoney: false`). With
   * `cases`, where it is when none of them holds.
   */
  money?: MoneyPlace;
  /**
   * Where the state name alone cannot say where the money is (a failed payout may never have
   * received any, may hold it for its refund, or may have returned it), the cases the ledger tells
   * apart, tried in order: the first whose test holds is where this object's money is. Only on
   * payout states: the tests read the payout's own ledger entries.
   */
  cases?: readonly MoneyCase[];
}

/**
 * Which account of a payout's money a {@link MoneyCase} reads, by its kind in the ledger's chart
 * (`src/ledger/chart.ts`): the payout's own account (`payout`), the refunds on their way
 * (`refundRail`), the processor (`processor`), the merchant once money left us (`merchant`), the
 * beneficiaries (`beneficiaries`), the fees (`platformFee`, `networkFee`, `refundFee`).
 */
export type LedgerAccountKind =
  | 'payout'
  | 'refundRail'
  | 'processor'
  | 'merchant'
  | 'beneficiaries'
  | 'platformFee'
  | 'networkFee'
  | 'refundFee';

/**
 * One case of a state's money, read from the ledger: `holds` the payout's money in one of
 * `accounts` is above zero (in any currency); `empty` none of those accounts has ever had an
 * entry of the payout's money.
 */
export interface MoneyCase {
  /** Stable name, as the console counts it (`RETURNED_TO_MERCHANT`). */
  code: string;
  /** A few words for the tables: `returned to the merchant`. */
  label: string;
  money: MoneyPlace;
  /** What it means, in plain words, naming every fee kept. */
  description: string;
  ledger: { test: 'holds' | 'empty'; accounts: readonly LedgerAccountKind[] };
}

/**
 * One machine moving another: the transition makes `machine` (a file stem in `machines/`, such as
 * `payout`) take `event`, or creates one of its objects (`creates: true`).
 */
export type Link = {
  machine: string;
  /** How, in plain words, when it is not obvious (for example "once a second operator approves"). */
  note?: string;
} & ({ event: string } | { creates: true });

/** The `meta` of a transition. */
export interface TransitionMeta {
  /** Who can cause it, most usual first. */
  by: readonly Actor[];
  /** Other machines this transition moves or creates (beyond webhook deliveries, which every `emit` creates). */
  causes?: readonly Link[];
}

/** A guard in plain words, both ways: as it reads after "if", and as its opposite. */
export interface GuardText {
  holds: string;
  fails: string;
}

/** The names of the guards a machine's `setup()` declares. */
export type GuardName<M extends AnyStateMachine> = Extract<
  keyof NonNullable<NonNullable<Parameters<M['provide']>[0]>['guards']>,
  string
>;

/** The texts of a machine that belong to no single state or transition. */
export interface MachineTexts<M extends AnyStateMachine> {
  /**
   * Whether the machine's objects hold money (a payout, a refund) or only decide about it (a
   * quote, a webhook delivery): the states of a machine that holds none say nothing about money.
   */
  holdsMoney: boolean;
  /** How an object of this machine comes to exist, and who causes it. */
  created: { description: string } & TransitionMeta;
  /** Every guard of `setup()`, in plain words. */
  guards: Record<GuardName<M>, GuardText>;
}

/**
 * The parameters of a machine's `post` action: the money its transition moves, as the name of a
 * flow of the ledger (`src/ledger/flows.ts`) that the code applying the transition turns into
 * entries in the same transaction. Each domain declares its flows beside its code
 * (`src/settlement/money.ts` for the inflow's, for example).
 */
export interface PostParams {
  flow: string;
}
