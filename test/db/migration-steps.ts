import type { Migration } from '@mikro-orm/migrations';
import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Runs one step of a migration class's instance through an EntityManager of the test's (inside a
 * transaction it may roll back), statement by statement as the migrator would.
 */
export function migrationSteps(migration: Migration) {
  return async (em: EntityManager, step: 'up' | 'down'): Promise<void> => {
    migration.reset();
    await migration[step]();
    for (const sql of migration.getQueries()) await em.execute(sql as string);
  };
}
