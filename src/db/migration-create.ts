/**
 * `npm run migration:create -- [name]`: diffs the entities against a database with every
 * committed migration applied and writes the difference as a new file in migrations/.
 * Uses a throw-away embedded database, so it needs no server.
 */
import { systemClock } from '#src/lib/clock.ts';
import { startEmbeddedPostgres } from './embedded.ts';
import { migrate, openOrm } from './orm.ts';

const pg = await startEmbeddedPostgres({});
const orm = await openOrm({ url: pg.url, poolSize: 2, clock: systemClock });
try {
  await migrate(orm);
  const result = await orm.migrator.create(undefined, false, false, process.argv[2]);
  console.log(
    result.fileName
      ? `wrote migrations/${result.fileName}`
      : 'entities match the migrations; nothing to write',
  );
} finally {
  await orm.close();
  await pg.stop();
}
