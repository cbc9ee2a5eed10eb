import type { EntityManager, EntityName, FindOneOptions } from '@mikro-orm/postgresql';
import { AppError, type ErrorCode } from '#src/http/errors.ts';
import { isUuid } from '#src/lib/ids.ts';

/**
 * The row with `id` that belongs to `tenantId`, or a 404 with `notFound`. Another tenant's id
 * and a malformed id are indistinguishable from a missing one: nothing leaks across tenants.
 */
export async function findForTenant<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  args: { id: string; tenantId: string; notFound: ErrorCode },
  options?: FindOneOptions<T, never>,
): Promise<T> {
  if (!isUuid(args.id)) throw new AppError(args.notFound);
  const row = await em.findOne(entity, { id: args.id, tenant: args.tenantId } as never, options as never);
  if (!row) throw new AppError(args.notFound);
  return row as T;
}
