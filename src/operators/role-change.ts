import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { moneyMove } from '#src/approvals/moves.ts';
import { AppError, invalidField } from '#src/http/errors.ts';
import { idIn } from '#src/http/schemas.ts';
import { isUuid } from '#src/lib/ids.ts';
import { Operator, ROOT_OPERATOR_ID } from './entities.ts';
import { hasRole, ROLES, type Role } from './roles.ts';

/** The roles whose grant needs a second admin once two admins exist. */
const GUARDED: readonly Role[] = ['approver', 'admin'];

/**
 * Whether giving `role` to an operator now needs a second admin's approval: it is approver or
 * admin, and two admins (root included) are active. While one admin exists, it acts alone: that is
 * how a deployment starts.
 */
export async function roleGrantNeedsApproval(em: EntityManager, role: Role): Promise<boolean> {
  if (!GUARDED.includes(role)) return false;
  const admins = await em.count(Operator, { role: 'admin', revokedAt: null });
  return admins >= 2;
}

/** The operator whose role may change: known, not root, not revoked. */
export async function changeableOperator(em: EntityManager, operatorId: string): Promise<Operator> {
  if (operatorId === ROOT_OPERATOR_ID) {
    throw invalidField('operator_id', 'is root, the operator of ADMIN_TOKEN; its role is always admin');
  }
  const operator = isUuid(operatorId) ? await em.findOne(Operator, operatorId) : null;
  if (!operator) throw new AppError('OPERATOR_NOT_FOUND');
  if (operator.revokedAt) throw invalidField('operator_id', 'is revoked; create a new operator instead');
  return operator;
}

/** Whether `to` is above `from`: a raise, as opposed to a lowering (immediate, like a revocation). */
export const isRaise = (from: Role, to: Role): boolean => hasRole(to, from) && to !== from;

/** `operator.role`: an operator's role raised to approver or admin, once another admin approves. */
export const roleChanges = {
  'operator.role': moneyMove({
    action: 'operator.role',
    args: z.strictObject({ operator_id: idIn, role: z.enum(ROLES) }),
    targets: (a) => [a.operator_id],
    stake: async (em, a) => {
      const operator = isUuid(a.operator_id) ? await em.findOne(Operator, a.operator_id) : null;
      return {
        tenantId: null,
        amount: null,
        currency: null,
        targetState: operator ? `${operator.name}: ${operator.role}` : null,
      };
    },
    run: async (em, _deps, { args }) => {
      const operator = await changeableOperator(em, args.operator_id);
      if (!isRaise(operator.role, args.role)) {
        throw invalidField('role', `is not above ${operator.name}'s role (${operator.role})`);
      }
      operator.role = args.role;
      await em.flush();
      return { operator: { id: operator.id, name: operator.name, role: operator.role } };
    },
  }),
};
