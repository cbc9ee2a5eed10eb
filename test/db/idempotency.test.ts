import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { canonicalJson, claim, complete, release, requestFingerprint } from '#src/idempotency/idempotency.ts';
import { createMerchant, rejection } from '../client.ts';
import { harness } from '../harness.ts';

describe('idempotency keys', () => {
  const em = () => harness().service.deps.orm.em.fork();
  let tenantId: string;
  const now = new Date('2026-01-01T00:00:00Z');
  const responseKey = Buffer.alloc(32, 3);
  const base = () => ({
    tenantId,
    key: randomUUID(),
    fingerprint: requestFingerprint('op', { a: 1 }),
    now,
    lockMs: 60_000,
    responseKey,
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

  it('refuses a second claim while the first is in progress (409)', async () => {
    const args = base();
    expect((await claim(em(), args)).kind).to.equal('claimed');
    const error = await rejection(claim(em(), args));
    expect(error.code).to.equal('IDEMPOTENCY_REQUEST_IN_PROGRESS');
  });

  it('replays a completed key with the stored status and bytes', async () => {
    const args = base();
    const first = await claim(em(), args);
    if (first.kind !== 'claimed') throw new Error('expected a claim');
    await em().transactional((tx) =>
      complete(tx, { ...first, status: 201, body: '{"id":"x","amount":1.10}', now, responseKey }),
    );
    const again = await claim(em(), args);
    expect(again).to.deep.equal({ kind: 'replay', status: 201, body: '{"id":"x","amount":1.10}' });
    const [row] = await em().execute<{ response_body: string }[]>(
      'select response_body from idempotency_keys where key = ?',
      [args.key],
    );
    expect(row?.response_body, 'stored sealed, never in clear').to.not.include('amount');
  });

  it('refuses the same key with a different request (422)', async () => {
    const args = base();
    const first = await claim(em(), args);
    if (first.kind !== 'claimed') throw new Error('expected a claim');
    await em().transactional((tx) => complete(tx, { ...first, status: 200, body: '{}', now, responseKey }));
    const error = await rejection(claim(em(), { ...args, fingerprint: requestFingerprint('op', { a: 2 }) }));
    expect(error.code).to.equal('IDEMPOTENCY_KEY_REUSED');
  });

  it('keeps a key in the same tenant only: another tenant may use the same value', async () => {
    const args = base();
    await claim(em(), args);
    const other = (await createMerchant()).tenantId;
    expect((await claim(em(), { ...args, tenantId: other })).kind).to.equal('claimed');
  });

  it('frees a released key, so a failed request can be retried', async () => {
    const args = base();
    const first = await claim(em(), args);
    if (first.kind !== 'claimed') throw new Error('expected a claim');
    await release(em(), first);
    expect((await claim(em(), args)).kind).to.equal('claimed');
  });

  it('lets a claim whose holder died be taken over, and the dead holder can no longer complete', async () => {
    const args = base();
    const dead = await claim(em(), args);
    if (dead.kind !== 'claimed') throw new Error('expected a claim');
    const later = new Date(now.getTime() + 60_001);
    const taker = await claim(em(), { ...args, now: later });
    expect(taker.kind).to.equal('claimed');
    const error = await rejection(
      em().transactional((tx) => complete(tx, { ...dead, status: 200, body: '{}', now: later, responseKey })),
    );
    expect(error.code).to.equal('IDEMPOTENCY_REQUEST_IN_PROGRESS');
  });

  it('does not complete the key when the write transaction rolls back', async () => {
    const args = base();
    const first = await claim(em(), args);
    if (first.kind !== 'claimed') throw new Error('expected a claim');
    await em()
      .transactional(async (tx) => {
        await complete(tx, { ...first, status: 200, body: '{}', now, responseKey });
        throw new Error('write failed after completing');
      })
      .catch(() => undefined);
    const error = await rejection(claim(em(), args));
    expect(error.code).to.equal('IDEMPOTENCY_REQUEST_IN_PROGRESS');
  });
});
