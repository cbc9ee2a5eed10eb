import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Deps } from '#src/deps.ts';
import type { ApprovalAction } from './entities.ts';
import type { Stake } from './stakes.ts';

/** Who an action runs for: written on the timeline rows it causes (`metadata`). */
export interface MoveActor {
  /** The operator whose approval ran it (the proposer's own with four eyes off). */
  approverId: string;
  proposerId: string;
  approvalId: string;
}

/**
 * One money move that needs four eyes, as its domain defines it: the arguments a proposal keeps,
 * the objects it concerns, the checks that need an outbound call (run before any transaction
 * opens, and again at approval), and the action itself, run inside the transaction of the
 * approval with every check it has when done directly; an AppError it throws is a refusal.
 */
export interface MoneyMoveDef<A extends Record<string, unknown> = Record<string, unknown>> {
  action: ApprovalAction;
  args: z.ZodType<A>;
  targets(args: A): string[];
  /** What it puts at stake (tenant, amount and currency, its target's state), read when proposed. */
  stake(em: EntityManager, args: A): Promise<Stake>;
  /** Checks that ask an outside system; what they return is handed to `run`. */
  prepare?(deps: Deps, args: A): Promise<unknown>;
  run(
    em: EntityManager,
    deps: Deps,
    call: { args: A; actor: MoveActor; now: Date; prepared: unknown },
  ): Promise<Record<string, unknown>>;
}

/** A move definition, its arguments' type checked against its schema. */
export function moneyMove<A extends Record<string, unknown>>(def: MoneyMoveDef<A>): MoneyMoveDef {
  return def as unknown as MoneyMoveDef;
}

/** What a timeline row caused by an approved move carries in `metadata`. */
export function actorMetadata(actor: MoveActor): Record<string, string> {
  return { operator_id: actor.approverId, proposer_id: actor.proposerId, approval_id: actor.approvalId };
}
