import type { EntityManager } from '@mikro-orm/core';
import { p } from '@mikro-orm/postgresql';
import { type Clock, systemClock } from '#src/lib/clock.ts';
import { newId } from '#src/lib/ids.ts';
import type { Decimal } from '#src/lib/money.ts';
import { MoneyType } from './money-type.ts';

const clocks = new WeakMap<object, Clock>();

/** Binds the service clock to an ORM so that the ORM's own timestamps follow it (tests move it). */
export function bindClock(orm: { config: object }, clock: Clock): void {
  clocks.set(orm.config, clock);
}

/** The clock bound to the ORM behind `em`. */
export function clockOf(em: EntityManager): Clock {
  return clocks.get(em.config) ?? systemClock;
}

/**
 * Primary key: a time-ordered UUID v7. The merchant tables' keys in the database are
 * (id, tenant_id) (docs/scaling.md, Citus); the entities stay keyed by id, which is unique alone.
 */
export const idColumn = () =>
  p
    .uuid()
    .primary()
    .onCreate(() => newId());

/** `created_at` and `updated_at`, maintained by the ORM from the service clock. */
export const timestamps = () => ({
  createdAt: p.datetime().onCreate((_entity, em) => clockOf(em).now()),
  updatedAt: p
    .datetime()
    .onCreate((_entity, em) => clockOf(em).now())
    .onUpdate((_entity, em) => clockOf(em).now()),
});

/** A money column: `numeric` in PostgreSQL, a BigNumber in code. */
export const money = () => p.type(MoneyType).$type<Decimal>();
