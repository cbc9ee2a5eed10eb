import { callTRPCProcedure, TRPCError } from '@trpc/server';
import { expect } from 'chai';
import { z } from 'zod';
import { AppError } from '#src/http/errors.ts';
import { procedureCaller } from '#src/http/rest.ts';
import { middleware, publicProcedure, router } from '#src/http/trpc.ts';

/**
 * The REST adapter calls a procedure's chain itself (`procedureCaller`); every call below must
 * come out exactly as tRPC's own `callTRPCProcedure` makes it: the same data, or a TRPCError of
 * the same code around the same cause.
 */

const seen: unknown[] = [];
const adds = middleware(async ({ ctx, meta, type, path, input, getRawInput, next }) => {
  seen.push({ ctx, meta, type, path, input, raw: await getRawInput() });
  const raw = (await getRawInput()) as Record<string, unknown>;
  if (raw.fail === 'app') throw new AppError('PAYOUT_NOT_FOUND');
  if (raw.fail === 'plain') throw new Error('boom');
  // The context merged, the raw input replaced: as merchantSqlProcedure hands them on.
  const cleaned = { ...raw, extra: 'cleaned' };
  return next(
    Object.assign({ ctx: { principal: 'p', requestId: 'overridden' } }, { getRawInput: async () => cleaned }),
  );
});
const second = middleware(async ({ ctx, next }) => {
  const result = await next({
    ctx: { layer: 2, principal: `${(ctx as unknown as { principal: string }).principal}+` },
  });
  return result.ok ? { ...result, data: { wrapped: result.data } } : result;
});
const forgetful = middleware(async () => undefined as never);

const probe = router({
  read: publicProcedure
    .meta({ scope: 'x:read' })
    .use(adds)
    .use(second)
    .input(
      z.strictObject({
        limit: z.coerce.number().int().max(5),
        extra: z.string(),
        fail: z.string().optional(),
      }),
    )
    .query(({ ctx, input }) => ({ ctx, input })),
  write: publicProcedure
    .use(adds)
    .input(z.object({ n: z.number() }))
    .mutation(({ input }) => {
      if (input.n < 0)
        throw new AppError('VALIDATION_FAILED', { details: [{ field: 'n', issue: 'negative' }] });
      return input.n * 2;
    }),
  forgets: publicProcedure.use(forgetful).query(() => 1),
});

const baseCtx = { requestId: 'req_1', headers: { a: 'b' }, ip: '127.0.0.1' };

type Outcome = { data: unknown } | { code: string; message: string; cause: unknown; causeType: string };

async function outcome(promise: Promise<unknown>): Promise<Outcome> {
  try {
    return { data: await promise };
  } catch (err) {
    expect(err).to.be.instanceOf(TRPCError);
    const e = err as TRPCError;
    return {
      code: e.code,
      message: e.message,
      cause: e.cause instanceof AppError ? e.cause.code : e.cause?.message,
      causeType: e.cause?.constructor.name ?? 'none',
    };
  }
}

async function both(
  path: 'read' | 'write' | 'forgets',
  raw: unknown,
): Promise<[Outcome, unknown[], Outcome, unknown[]]> {
  const type = path === 'write' ? 'mutation' : 'query';
  seen.length = 0;
  const theirs = await outcome(
    callTRPCProcedure({
      router: probe,
      path,
      type,
      ctx: { ...baseCtx },
      getRawInput: async () => raw,
      signal: undefined,
      batchIndex: 0,
    }),
  );
  const theirsSeen = [...seen];
  seen.length = 0;
  const ours = await outcome(procedureCaller(probe, path)({ ...baseCtx }, async () => raw));
  return [ours, [...seen], theirs, theirsSeen];
}

describe('REST adapter: a procedure called as tRPC calls it', () => {
  const cases: [string, 'read' | 'write' | 'forgets', unknown][] = [
    ['data through two layers, the context merged, the raw input replaced', 'read', { limit: '3' }],
    ['an input the schema refuses', 'read', { limit: '9' }],
    ['an AppError thrown in a layer', 'read', { limit: '1', fail: 'app' }],
    ['a plain error thrown in a layer', 'read', { limit: '1', fail: 'plain' }],
    ['a mutation', 'write', { n: 21 }],
    ['an AppError thrown by the resolver', 'write', { n: -1 }],
    ['a raw input that is not an object', 'write', 'text'],
    ['a layer that returns nothing', 'forgets', {}],
  ];
  for (const [name, path, raw] of cases) {
    it(name, async () => {
      const [ours, oursSeen, theirs, theirsSeen] = await both(path, raw);
      expect(ours).to.deep.equal(theirs);
      expect(oursSeen).to.deep.equal(theirsSeen);
    });
  }

  it('gives the first case data, so that the comparison compares something', async () => {
    const [ours] = await both('read', { limit: '3' });
    expect(ours).to.deep.equal({
      data: {
        wrapped: {
          ctx: { ...baseCtx, requestId: 'overridden', principal: 'p+', layer: 2 },
          input: { limit: 3, extra: 'cleaned' },
        },
      },
    });
  });

  it('refuses a path the router does not have', () => {
    expect(() => procedureCaller(probe, 'nothing')).to.throw('no procedure nothing');
  });
});
