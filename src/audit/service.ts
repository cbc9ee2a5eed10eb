/**
 * The audit trail of `admin.*`: one immutable row per call that changes anything.
 *
 * How a mutation gets its row (for anyone adding an `admin.*` mutation):
 * - write through `ctx.commit(async (em) => ...)`: the admin procedure builder (src/http/procedures.ts)
 *   appends the audit row inside that very transaction, after the work succeeded. A mutation that
 *   writes outside `ctx.commit` escapes the trail, and test/audit/audit.test.ts fails for it.
 * - the row's `target_ids` are every string input field named `*_id` plus the `id` of the
 *   result (when it has one); add others with `ctx.audit.target(id)`.
 * - its `outcome` is `OK` unless the handler says otherwise (`ctx.audit.outcome = 'PENDING'`).
 * - a call that found nothing to change (revoking a revoked operator, a redelivery that finds one
 *   already open) says so with `ctx.audit.unchanged()`, and no row is written.
 * - its `arguments` are the input, with fields whose name says secret (token, secret, password,
 *   api_key, authorization) replaced by `[redacted]`.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { type PageMeta, type PageRequest, paginate } from '#src/http/pagination.ts';
import type { OperatorIdentity } from '#src/operators/auth.ts';
import { AuditEntry } from './entities.ts';

/** What a handler may add to its call's audit row before the transaction commits. */
export class AuditNote {
  readonly targets = new Set<string>();
  outcome = 'OK';
  #changed = true;

  /** The call changed nothing: it leaves no row. */
  unchanged(): void {
    this.#changed = false;
  }

  get changed(): boolean {
    return this.#changed;
  }

  /** Names one more object the call concerned. */
  target(...ids: (string | null | undefined)[]): void {
    for (const id of ids) if (id) this.targets.add(id);
  }
}

const SECRET_FIELD = /token|secret|password|api_?key|authorization/i;
const REDACTED = '[redacted]';

/** The input as the trail keeps it: secrets replaced, structure kept. */
export function redactArguments(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactArguments);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([key, v]) => [
      key,
      SECRET_FIELD.test(key) ? REDACTED : redactArguments(v),
    ]),
  );
}

/** Ids a call's input and result name by convention: input fields `*_id`, the result's `id`. */
function conventionalTargets(input: unknown, result: unknown): string[] {
  const ids: string[] = [];
  if (input && typeof input === 'object') {
    for (const [key, value] of Object.entries(input as Record<string, unknown>)) {
      if (key.endsWith('_id') && typeof value === 'string' && value !== '') ids.push(value);
    }
  }
  const own = (result as { id?: unknown } | null | undefined)?.id;
  if (typeof own === 'string') ids.push(own);
  return ids;
}

/** Appends one call's audit row inside the caller's transaction (the one of the change). */
export function recordAudit(
  em: EntityManager,
  args: {
    operator: OperatorIdentity;
    action: string;
    input: unknown;
    result: unknown;
    note: AuditNote;
    requestId: string;
    now: Date;
  },
): AuditEntry {
  const targets = new Set([...conventionalTargets(args.input, args.result), ...args.note.targets]);
  const input = redactArguments(args.input ?? {});
  return em.create(AuditEntry, {
    operatorId: args.operator.id,
    operatorName: args.operator.name,
    operatorRole: args.operator.role,
    action: args.action,
    // Ids longer than a uuid are not ids of ours; they are kept in the arguments only.
    targetIds: [...targets].filter((id) => id.length <= 64),
    arguments: (typeof input === 'object' && input !== null && !Array.isArray(input)
      ? input
      : { value: input }) as Record<string, unknown>,
    outcome: args.note.outcome.slice(0, 64),
    requestId: args.requestId.slice(0, 128),
    createdAt: args.now,
  });
}

export interface AuditFilter {
  operatorId?: string;
  targetId?: string;
  /** Inclusive. */
  since?: Date;
  /** Exclusive. */
  until?: Date;
}

/** Audit rows, newest first, a page at a time. */
export async function listAudit(
  em: EntityManager,
  filter: AuditFilter,
  page: PageRequest & { list: string },
): Promise<{ items: AuditEntry[]; meta: PageMeta }> {
  const createdAt = {
    ...(filter.since ? { $gte: filter.since } : {}),
    ...(filter.until ? { $lt: filter.until } : {}),
  };
  return paginate(em, AuditEntry, {
    where: {
      ...(filter.operatorId ? { operatorId: filter.operatorId } : {}),
      ...(filter.targetId ? { targetIds: { $contains: [filter.targetId] } } : {}),
      ...(filter.since || filter.until ? { createdAt } : {}),
    },
    ...page,
  });
}
