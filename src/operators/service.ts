import { type EntityManager, UniqueConstraintViolationException } from '@mikro-orm/postgresql';
import { AppError, invalidField } from '#src/http/errors.ts';
import { isUuid } from '#src/lib/ids.ts';
import { generateOperatorToken } from './auth.ts';
import { Operator, ROOT_OPERATOR_ID, ROOT_OPERATOR_NAME } from './entities.ts';
import type { Role } from './roles.ts';

/**
 * Creates an operator and returns its token, which is shown here and never again. Names are
 * unique among operators that are not revoked (case-insensitively); `root` is taken for good.
 */
export async function createOperator(
  em: EntityManager,
  args: { name: string; role: Role; createdBy: string },
): Promise<{ operator: Operator; token: string }> {
  if (args.name.toLowerCase() === ROOT_OPERATOR_NAME) throw new AppError('OPERATOR_NAME_TAKEN');
  const generated = generateOperatorToken();
  const operator = em.create(Operator, {
    name: args.name,
    role: args.role,
    tokenPrefix: generated.prefix,
    tokenHash: generated.hash,
    createdBy: args.createdBy,
    revokedAt: null,
    revokedBy: null,
  });
  try {
    await em.flush();
  } catch (err) {
    if (err instanceof UniqueConstraintViolationException) throw new AppError('OPERATOR_NAME_TAKEN');
    throw err;
  }
  return { operator, token: generated.plaintext };
}

/**
 * Revokes an operator's token for good (idempotent: `changed` is false for one revoked already).
 * Root cannot be revoked: rotate ADMIN_TOKEN instead.
 */
export async function revokeOperator(
  em: EntityManager,
  args: { operatorId: string; revokedBy: string; now: Date },
): Promise<{ operator: Operator; changed: boolean }> {
  if (args.operatorId === ROOT_OPERATOR_ID) {
    throw invalidField(
      'operator_id',
      'is root, the operator of ADMIN_TOKEN; it cannot be revoked: rotate ADMIN_TOKEN instead',
    );
  }
  const operator = isUuid(args.operatorId) ? await em.findOne(Operator, args.operatorId) : null;
  if (!operator) throw new AppError('OPERATOR_NOT_FOUND');
  if (operator.revokedAt) return { operator, changed: false };
  operator.revokedAt = args.now;
  operator.revokedBy = args.revokedBy;
  await em.flush();
  return { operator, changed: true };
}
