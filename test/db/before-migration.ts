import { MikroORM } from '@mikro-orm/postgresql';
import { ormConfig } from '#src/db/orm.ts';
import { harness } from '../harness.ts';
import { createScratchDatabase, type ScratchDatabase } from '../scratch-database.ts';
import { needsPostgresServer, skipBecause } from '../skip.ts';

/** A database of a migration test's own, migrated up to the migration just before the one tested. */
export interface DatabaseBefore {
  readonly orm: MikroORM;
  readonly url: string;
}

/**
 * For a suite that runs `migration` on filled tables: hooks that create a database of its own on
 * the PostgreSQL server (the suite is skipped on the embedded one, `why` saying what needs the
 * server, or when the role may not create databases), apply every migration before `migration`,
 * whatever others were added since, and at the end close and drop it.
 */
export function databaseBefore(migration: string, why: string): DatabaseBefore {
  let scratch: ScratchDatabase | undefined;
  let orm: MikroORM | undefined;
  before(async function () {
    needsPostgresServer(this, why);
    const made = await createScratchDatabase(harness().directUrl ?? harness().databaseUrl);
    if ('refused' in made) skipBecause(this, `no database of its own: ${made.refused}`);
    scratch = made;
    orm = await MikroORM.init(ormConfig({ url: made.url, poolSize: 2 }));
    const pending = (await orm.migrator.getPending()).map((m) => m.name);
    const at = pending.indexOf(migration);
    if (at < 1) throw new Error(`${migration} is not a pending migration after another one`);
    await orm.migrator.up({ to: pending[at - 1] });
  });
  after(async () => {
    await orm?.close();
    await scratch?.drop();
  });
  return {
    get orm() {
      if (!orm) throw new Error('the database is made in the suite’s before hook');
      return orm;
    },
    get url() {
      if (!scratch) throw new Error('the database is made in the suite’s before hook');
      return scratch.url;
    },
  };
}
