import { type EntityManager, LockMode } from '@mikro-orm/postgresql';
import { paymentInstructionMachine } from '#machines/payment-instruction.machine.ts';
import type { Deps } from '#src/deps.ts';
import { applyEvent } from '#src/engine/engine.ts';
import { PaymentInstruction } from '#src/instructions/entities.ts';
import { toDecimal } from '#src/lib/money.ts';
import { Payout } from '#src/payouts/entities.ts';
import { applyPayoutEvent, type TriggeredBy } from '#src/payouts/lifecycle.ts';
import { Inflow } from './entities.ts';
import {
  type InstructionFacts,
  judgeBankInflow,
  judgeCryptoInflow,
  moveInflow,
  settlementTotals,
} from './rules.ts';

/**
 * Settlement matching (product decisions §2): every CONFIRMED inflow, in its own transaction
 * with the inflow row claimed FOR UPDATE SKIP LOCKED, ends MATCHED or HELD against a payout, HELD
 * unattributed, or UNMATCHED. The verdicts are pure (`rules.ts`); this module gathers the facts
 * under locks and writes the result: inflow, instruction (PAID), payout total and the payout's
 * SETTLEMENT_CONFIRMED with its timeline and outbox rows, all in one transaction.
 *
 * Locks are taken in one order everywhere: inflow, then the shared deposit address (crypto),
 * then instructions, then the payout. Instruction generation locks a CREATED payout and the
 * address, and instruction expiry skips locked instructions, so neither can close a cycle.
 */

/** Where one inflow ended. */
export interface MatchOutcome {
  inflowId: string;
  state: 'MATCHED' | 'HELD' | 'UNMATCHED';
  payoutId: string | null;
  /** Why it is where it is, for logs and operators. */
  reason: string;
}

/**
 * Matches one CONFIRMED inflow in its own transaction. Returns null when there is nothing to do:
 * the inflow is not CONFIRMED (already matched, or still waiting for confirmations) or another
 * instance holds it right now.
 */
export async function matchInflow(deps: Deps, inflowId: string): Promise<MatchOutcome | null> {
  const now = deps.clock.now();
  return deps.orm.em.fork().transactional(async (tx) => {
    const inflow = await tx.findOne(
      Inflow,
      { id: inflowId, state: 'CONFIRMED' },
      { lockMode: LockMode.PESSIMISTIC_PARTIAL_WRITE },
    );
    if (!inflow) return null;
    const outcome =
      inflow.rail === 'CRYPTO' ? await matchCrypto(deps, tx, inflow, now) : await matchBank(tx, inflow, now);
    deps.log.info(
      {
        inflow: inflow.id,
        rail: inflow.rail,
        state: outcome.state,
        payout: outcome.payoutId,
        reason: outcome.reason,
      },
      'inflow matched',
    );
    return outcome;
  });
}

/** What one matching pass did. */
export interface MatchSummary {
  matched: number;
  held: number;
  unmatched: number;
  /** Inflows whose matching threw; they stay CONFIRMED and are tried again by the next pass. */
  failed: number;
}

const MATCH_BATCH = 200;
const MAX_MATCH_ROUNDS = 20;

/**
 * Matches every CONFIRMED inflow, oldest first (so that money on a shared address meets the
 * instructions in the order it arrived), each in its own transaction. One inflow that fails is
 * logged and left for the next pass; it does not hold up the others.
 */
export async function matchConfirmedInflows(deps: Deps): Promise<MatchSummary> {
  const summary: MatchSummary = { matched: 0, held: 0, unmatched: 0, failed: 0 };
  const seen = new Set<string>();
  for (let round = 0; round < MAX_MATCH_ROUNDS; round++) {
    // Inflows tried in this pass (skipped as locked, or failed) may still be CONFIRMED: ask for
    // enough rows to see past them.
    const limit = MATCH_BATCH + seen.size;
    const rows = await deps.orm.em
      .fork()
      .execute<{ id: string }[]>(
        `select id from inflows where state = 'CONFIRMED' order by created_at, id limit ?`,
        [limit],
      );
    const due = rows.map((r) => r.id).filter((id) => !seen.has(id));
    if (due.length === 0) break;
    for (const id of due) {
      seen.add(id);
      try {
        const outcome = await matchInflow(deps, id);
        if (outcome?.state === 'MATCHED') summary.matched++;
        else if (outcome?.state === 'HELD') summary.held++;
        else if (outcome?.state === 'UNMATCHED') summary.unmatched++;
      } catch (err) {
        summary.failed++;
        deps.log.error(
          { err, inflow: id },
          'matching an inflow failed; it stays CONFIRMED for the next pass',
        );
      }
    }
    if (rows.length < limit) break;
  }
  return summary;
}

interface InstructionRow {
  id: string;
  payout_id: string;
  status: InstructionFacts['status'];
  expected_amount: string;
  expires_at: Date;
  created_at: Date;
  payout_status: string;
  held_total: string;
}

const factsOf = (r: InstructionRow): InstructionFacts => ({
  id: r.id,
  status: r.status,
  expectedAmount: toDecimal(r.expected_amount),
  expiresAt: new Date(r.expires_at),
  createdAt: new Date(r.created_at),
  payoutStatus: r.payout_status,
  heldTotal: toDecimal(r.held_total),
});

/**
 * The instructions on the inflow's receiving account that `where` selects, locked FOR UPDATE
 * (not their payouts: expiry locks instruction then payout, so locking instructions keeps it from
 * slipping a status change in between; the chosen payout is locked afterwards), with each one's
 * payout status and the money held against it.
 */
function lockInstructions(tx: EntityManager, where: string, params: unknown[]): Promise<InstructionRow[]> {
  return tx.execute<InstructionRow[]>(
    `select i.id, i.payout_id, i.status, i.expected_amount, i.expires_at, i.created_at, p.status as payout_status,
            (select coalesce(sum(f.amount), 0) from inflows f where f.payout_id = i.payout_id and f.state = 'HELD')
              as held_total
       from payment_instructions i join payouts p on p.id = i.payout_id
      where ${where}
      for update of i`,
    params,
  );
}

async function matchCrypto(deps: Deps, tx: EntityManager, inflow: Inflow, now: Date): Promise<MatchOutcome> {
  const at = inflow.createdAt;
  const recentMs = deps.config.PAYMENT_INSTRUCTION_TTL_MS;
  // The same lock instruction generation takes on the shared address: no instruction appears on
  // it, and no other inflow to it is judged, until this one is settled.
  await tx.execute('select id from deposit_addresses where address = ? for update', [inflow.toAccount]);
  const rows = await lockInstructions(
    tx,
    `i.account_unique = ? and i.tenant_id = ? and i.rail = 'CRYPTO' and i.expected_currency = ?
     and (i.status = 'UNPAID' or i.expires_at > ?)`,
    [inflow.toAccount, inflow.tenant.id, inflow.currency, new Date(at.getTime() - recentMs)],
  );
  const facts = rows.map(factsOf);
  // A chosen payout that an operator ended meanwhile is no longer open: judge again without it.
  for (;;) {
    const verdict = judgeCryptoInflow(inflow.amount, at, facts, recentMs);
    switch (verdict.outcome) {
      case 'ATTRIBUTE': {
        const row = rows.find((r) => r.id === verdict.instructionId)!;
        const payout = await lockPayout(tx, row.payout_id);
        if (payout.status !== 'PENDING_PAYMENT') {
          facts.find((f) => f.id === row.id)!.payoutStatus = payout.status;
          continue;
        }
        return attributeToPayout(tx, {
          inflow,
          instructionId: row.id,
          payout,
          now,
          triggeredBy: 'SYSTEM',
          rule: verdict.rule,
        });
      }
      case 'HELD':
        moveInflow(inflow, 'HELD');
        inflow.isUnderpaid = true;
        return { inflowId: inflow.id, state: 'HELD', payoutId: null, reason: 'BELOW_EVERY_OPEN_INSTRUCTION' };
      case 'UNMATCHED':
        moveInflow(inflow, 'UNMATCHED');
        return { inflowId: inflow.id, state: 'UNMATCHED', payoutId: null, reason: verdict.reason };
    }
  }
}

async function matchBank(tx: EntityManager, inflow: Inflow, now: Date): Promise<MatchOutcome> {
  // One virtual account per instruction: the account names it.
  const [row] = await lockInstructions(
    tx,
    `i.id = (select id from payment_instructions
              where account_unique = ? and tenant_id = ? and rail = 'BANK_TRANSFER'
              order by created_at desc limit 1)`,
    [inflow.toAccount, inflow.tenant.id],
  );
  if (row) {
    const payout = await lockPayout(tx, row.payout_id);
    const verdict = judgeBankInflow(inflow.createdAt, { ...factsOf(row), payoutStatus: payout.status });
    if (verdict.outcome === 'ATTRIBUTE') {
      return attributeToPayout(tx, {
        inflow,
        instructionId: row.id,
        payout,
        now,
        triggeredBy: 'SYSTEM',
        rule: 'ACCOUNT',
      });
    }
  }
  moveInflow(inflow, 'UNMATCHED');
  return { inflowId: inflow.id, state: 'UNMATCHED', payoutId: null, reason: 'INSTRUCTION_CLOSED' };
}

async function lockPayout(tx: EntityManager, payoutId: string): Promise<Payout> {
  const payout = await tx.findOne(Payout, payoutId, { lockMode: LockMode.PESSIMISTIC_WRITE });
  if (!payout) throw new Error(`payout ${payoutId} does not exist`);
  return payout;
}

/** How an inflow came to be attributed, recorded on the payout's timeline. */
export type AttributionRule = 'EXACT' | 'TOP_UP' | 'OVERPAYMENT' | 'ACCOUNT' | 'OPERATOR';

/**
 * Attributes `inflow` to `payout` (locked, PENDING_PAYMENT) and its instruction, inside the
 * caller's transaction. The payout's total is everything attributed to it so far plus this
 * inflow: covering the expected amount, the instruction becomes PAID and this inflow and every
 * earlier held one MATCHED, the overpayment (total − expected) on this inflow; short of it, this
 * inflow is HELD against the payout. Either way the payout gets SETTLEMENT_CONFIRMED with the
 * total, and its timeline row carries the inflow and the overpayment.
 */
export async function attributeToPayout(
  tx: EntityManager,
  args: {
    inflow: Inflow;
    instructionId: string;
    payout: Payout;
    now: Date;
    triggeredBy: TriggeredBy;
    rule: AttributionRule;
  },
): Promise<MatchOutcome> {
  const { inflow, payout, now } = args;
  const instruction = await tx.findOneOrFail(PaymentInstruction, args.instructionId);
  const earlier = await tx.find(Inflow, {
    payout: payout.id,
    state: { $in: ['HELD', 'MATCHED'] },
    id: { $ne: inflow.id },
  });
  const expected = instruction.expectedAmount;
  const totals = settlementTotals(
    earlier.map((i) => i.amount),
    inflow.amount,
    expected,
  );

  if (totals.covers) {
    // A held payout whose instruction lapsed can still be paid by an operator's attribution;
    // the lapsed instruction stays EXPIRED (its machine is final), the payout moves on.
    if (instruction.status === 'UNPAID') {
      await applyEvent(tx, {
        machine: paymentInstructionMachine,
        entity: PaymentInstruction,
        id: instruction.id,
        event: { type: 'PAYMENT_MATCHED', now },
      });
      instruction.paidAt = now;
    }
    for (const each of [...earlier.filter((e) => e.state === 'HELD'), inflow]) {
      moveInflow(each, 'MATCHED');
      each.isMatched = true;
      each.matchedAt = now;
      each.isUnderpaid = false;
      each.payout = payout;
      each.instruction = instruction;
    }
    inflow.overpaymentAmount = totals.overpayment;
  } else {
    moveInflow(inflow, 'HELD');
    inflow.isUnderpaid = true;
    inflow.isMatched = false;
    inflow.payout = payout;
    inflow.instruction = instruction;
  }

  const transition = await applyPayoutEvent(
    tx,
    payout.id,
    {
      type: 'SETTLEMENT_CONFIRMED',
      receivedTotal: totals.total.toFixed(),
      expected: expected.toFixed(),
      triggeredBy: args.triggeredBy,
      now,
    },
    {
      reasonDetail: {
        inflow_id: inflow.id,
        match_rule: args.rule,
        received_total: totals.total.toFixed(),
        expected_amount: expected.toFixed(),
        overpayment_amount: totals.overpayment.toFixed(),
        currency: inflow.currency,
      },
    },
  );
  // Every attribution adds money to a PENDING_PAYMENT payout, which the machine always takes;
  // an ignored event here means the facts read under lock were wrong, so nothing is written.
  if (!transition.taken) {
    throw new Error(
      `payout ${payout.id} (${payout.status}) ignored SETTLEMENT_CONFIRMED for inflow ${inflow.id}`,
    );
  }
  // Set after the engine re-read the locked row, so that nothing can overwrite it before commit.
  transition.row.receivedAmount = totals.total;
  return {
    inflowId: inflow.id,
    state: totals.covers ? 'MATCHED' : 'HELD',
    payoutId: payout.id,
    reason: totals.covers ? `${args.rule}_MATCH` : 'UNDERPAID',
  };
}
