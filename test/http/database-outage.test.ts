import { randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import pg from 'pg';
import { loadConfig } from '#src/config.ts';
import { isDatabaseUnavailable } from '#src/db/unavailable.ts';
import { createLogger } from '#src/lib/log.ts';
import { secretsFrom } from '#src/secrets.ts';
import { type RunningService, startService } from '#src/service.ts';
import { call, createMerchant, errorOf } from '../client.ts';
import { harness } from '../harness.ts';
import { type Response, resolve, servedDocument } from '../openapi/document.ts';
import { createScratchDatabase } from '../scratch-database.ts';
import { needsPostgresServer, skipBecause } from '../skip.ts';

/** The connections of the service's pool that are checked out, and the callers waiting for one. */
async function poolInUse(): Promise<{ checkedOut: number; waiting: number }> {
  const pool = await harness().service.deps.orm.em.getConnection().getNativeClient();
  return { checkedOut: pool.totalCount - pool.idleCount, waiting: pool.waitingCount };
}

const USDT_DESTINATION = {
  currency: 'USDT',
  type: 'CRYPTO_ADDRESS',
  network: 'TRON',
  address: 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy',
};

describe('a database connection lost under a request', () => {
  it('tells connection failures from statement errors', () => {
    expect(
      isDatabaseUnavailable(Object.assign(new Error('terminating connection'), { code: '57P01' })),
    ).to.equal(true);
    expect(isDatabaseUnavailable(new Error('Connection terminated unexpectedly'))).to.equal(true);
    expect(
      isDatabaseUnavailable(
        new Error('x', { cause: Object.assign(new Error('y'), { code: 'ECONNREFUSED' }) }),
      ),
    ).to.equal(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('duplicate key'), { code: '23505' }))).to.equal(
      false,
    );
    expect(isDatabaseUnavailable(new Error('boom'))).to.equal(false);
    // A session the server refuses or ends (the database dropped, the login refused) is FATAL.
    expect(
      isDatabaseUnavailable(
        Object.assign(new Error('database "x" does not exist'), { code: '3D000', severity: 'FATAL' }),
      ),
    ).to.equal(true);
    expect(
      isDatabaseUnavailable(
        Object.assign(new Error('relation "x" does not exist'), { code: '42P01', severity: 'ERROR' }),
      ),
    ).to.equal(false);
  });

  it('is answered 503 SERVICE_UNAVAILABLE with Retry-After and the envelope; the retry succeeds', async function () {
    needsPostgresServer(this, "a backend of the service's to terminate");
    const merchant = await createMerchant();
    const key = randomUUID();
    // Hold the request's Idempotency-Key so that its transaction waits, then cut its connection.
    const holder = new pg.Client({ connectionString: harness().databaseUrl });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query(`select pg_advisory_xact_lock(hashtextextended($1 || '/' || $2, 0))`, [
        merchant.tenantId,
        key,
      ]);
      const pending = call('PUT', '/v1/refund-destinations', {
        key: merchant.key,
        body: USDT_DESTINATION,
        idempotencyKey: key,
      });
      let waiting: number | undefined;
      // Bounded in time, not in polls: behind a pooler, or on a busy machine, the request takes longer to get there.
      for (const deadline = Date.now() + 10_000; Date.now() < deadline && waiting === undefined; ) {
        // The holder is in a transaction, which would keep reading its first snapshot of the activity.
        await holder.query('select pg_stat_clear_snapshot()');
        const { rows } = await holder.query<{ pid: number }>(
          `select pid from pg_stat_activity
            where wait_event_type = 'Lock' and wait_event = 'advisory'
              and datname = current_database() and pid <> pg_backend_pid()`,
        );
        waiting = rows[0]?.pid;
        if (waiting === undefined) await new Promise((r) => setImmediate(r));
      }
      expect(waiting, 'the request never waited on its key').to.be.a('number');
      await holder.query('select pg_terminate_backend($1)', [waiting]);
      const res = await pending;
      expect(res.status, res.text).to.equal(503);
      expect(res.headers.get('retry-after')).to.equal('1');
      expect(errorOf(res).code).to.equal('SERVICE_UNAVAILABLE');
      expect(res.text).to.not.match(/terminat|postgres|stack/i);
      // The request's connection went back to the pool (which drops it) before the answer: none
      // stays checked out, which would starve the pool and keep its end() from ever resolving.
      expect(await poolInUse()).to.deep.equal({ checkedOut: 0, waiting: 0 });
      // The document says so for the operation: the code under 503, and Retry-After.
      const doc = await servedDocument();
      const declared = resolve<Response>(doc, doc.paths['/v1/refund-destinations']!.put!.responses['503']!);
      expect(declared.content!['application/json']!['x-error-codes']).to.include('SERVICE_UNAVAILABLE');
      expect(declared.headers).to.have.property('Retry-After');
    } finally {
      await holder.query('rollback').catch(() => {});
      await holder.end();
    }
    const retry = await call('PUT', '/v1/refund-destinations', {
      key: merchant.key,
      body: USDT_DESTINATION,
      idempotencyKey: key,
    });
    expect(retry.status, retry.text).to.equal(200);
    expect(await poolInUse()).to.deep.equal({ checkedOut: 0, waiting: 0 });
  });
});

describe('a database dropped under a running service', () => {
  it('answers API requests 503 SERVICE_UNAVAILABLE with Retry-After, as readiness does', async function () {
    needsPostgresServer(this, 'a database to drop from under its service');
    this.timeout(60_000);
    const scratch = await createScratchDatabase(harness().databaseUrl);
    if ('refused' in scratch) skipBecause(this, `needs a role that may create databases: ${scratch.refused}`);
    let service: RunningService | undefined;
    try {
      service = await startService({
        config: loadConfig({ PORT: '0', DATABASE_URL: scratch.url, JOBS: 'none' }),
        databaseUrl: scratch.url,
        providersUrl: harness().sandboxUrl,
        secrets: secretsFrom({
          encryptionKey: randomBytes(32),
          adminToken: `adm_test_${randomBytes(16).toString('hex')}`,
          callbackSecret: randomBytes(32).toString('base64url'),
        }),
        log: createLogger({ level: 'silent' }),
      });
      expect((await fetch(`${service.url}/health/ready`)).status).to.equal(200);
      await scratch.drop();
      const ready = await fetch(`${service.url}/health/ready`);
      expect(ready.status).to.equal(503);
      const requests: [string, string][] = [
        ['GET', '/v1/payouts'],
        ['GET', '/v1/refund-destinations'],
        ['POST', '/v1/payouts'],
      ];
      for (const [method, path] of requests) {
        const res = await fetch(`${service.url}${path}`, {
          method,
          headers: {
            'X-API-Key': 'sk_test_unknown',
            'Idempotency-Key': randomUUID(),
            'Content-Type': 'application/json',
          },
          body: method === 'POST' ? '{}' : undefined,
        });
        const text = await res.text();
        expect(res.status, `${method} ${path}: ${text}`).to.equal(503);
        expect(res.headers.get('retry-after')).to.equal('1');
        expect(JSON.parse(text).error.code).to.equal('SERVICE_UNAVAILABLE');
        expect(text).to.not.match(/does not exist|postgres|stack/i);
      }
    } finally {
      await service?.close();
      await scratch.drop();
    }
  });
});
