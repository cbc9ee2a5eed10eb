import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { emSql } from '#src/db/sql.ts';
import {
  canonicalJson,
  findStoredResponse,
  type IdempotentWrite,
  KeyTaken,
  replayOf,
  requestFingerprint,
  sealResponse,
  storeResponse,
} from '#src/idempotency/idempotency.ts';
import { createMerchant } from '../client.ts';
import { harness } from '../harness.ts';

describe('idempotency keys', () => {
  const sql = () => harness().service.deps.sql;
  let tenantId: string;
  const now = new Date('2026-01-01T00:00:00Z');
  const responseKey = Buffer.alloc(32, 3);
  const write = (overrides: Partial<IdempotentWrite> = {}): IdempotentWrite => ({
    tenantId,
    key: randomUUID(),
    fingerprint: requestFingerprint('op', { a: 1 }),
    status: 201,
    seal: (body) => sealResponse(responseKey, body),
    ...overrides,
  });

  before(async () => {
    tenantId = (await createMerchant()).tenantId;
  });

  it('fingerprints requests independently of key order', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { f: 2, e: 3 }], c: null } })).to.equal(
      '{"a":{"c":null,"d":[1,{"e":3,"f":2}]},"b":1}',
    );
    expect(requestFingerprint('op', { a: 1, b: 2 })).to.equal(requestFingerprint('op', { b: 2, a: 1 }));
    expect(requestFingerprint('op', { a: 1 })).to.not.equal(requestFingerprint('other', { a: 1 }));
  });

  it('stores a response sealed and replays the same status and bytes', async () => {
    const w = write();
    await sql().transaction((tx) => storeResponse(tx, w, { body: '{"id":"x","amount":1.10}', now }));
    const stored = await findStoredResponse(sql(), w);
    expect(stored?.sealedBody, 'stored sealed, never in clear').to.not.include('amount');
    expect(replayOf(stored!, w.fingerprint, responseKey)).to.deep.equal({
      status: 201,
      body: '{"id":"x","amount":1.10}',
    });
  });

  it('refuses a stored key for a different request (422)', async () => {
    const w = write();
    await sql().transaction((tx) => storeResponse(tx, w, { body: '{}', now }));
    const stored = await findStoredResponse(sql(), w);
    expect(() => replayOf(stored!, requestFingerprint('op', { a: 2 }), responseKey))
      .to.throw()
      .with.property('code', 'IDEMPOTENCY_KEY_REUSED');
  });

  it('lets the second writer of one key fail with KeyTaken, rolling its own write back', async () => {
    const w = write();
    await sql().transaction((tx) => storeResponse(tx, w, { body: '{"first":true}', now }));
    const em = harness().service.deps.orm.em.fork();
    const marker = randomUUID();
    const error = await em
      .transactional(async (tx) => {
        await tx.execute(
          'insert into tenants (id, name, payouts_approved, created_at, updated_at) values (?, ?, false, ?, ?)',
          [marker, 'written by the loser', now, now],
        );
        await storeResponse(emSql(tx), w, { body: '{"second":true}', now });
      })
      .then(
        () => null,
        (err: unknown) => err,
      );
    expect(error).to.be.instanceOf(KeyTaken);
    const [left] = await em.execute('select count(*)::int as n from tenants where id = ?', [marker]);
    expect(left).to.deep.equal({ n: 0 });
    const stored = await findStoredResponse(sql(), w);
    expect(replayOf(stored!, w.fingerprint, responseKey).body).to.equal('{"first":true}');
  });

  it('keeps a key in the same tenant only: another tenant may use the same value', async () => {
    const w = write();
    await sql().transaction((tx) => storeResponse(tx, w, { body: '{}', now }));
    const other = (await createMerchant()).tenantId;
    await sql().transaction((tx) => storeResponse(tx, { ...w, tenantId: other }, { body: '{}', now }));
    expect(await findStoredResponse(sql(), { tenantId: other, key: w.key })).to.not.equal(null);
  });

  it('stores nothing when the write transaction rolls back, so the key stays free', async () => {
    const w = write();
    await sql()
      .transaction(async (tx) => {
        await storeResponse(tx, w, { body: '{}', now });
        throw new Error('write failed after storing');
      })
      .catch(() => undefined);
    expect(await findStoredResponse(sql(), w)).to.equal(null);
  });
});
