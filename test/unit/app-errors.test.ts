import { TRPCError } from '@trpc/server';
import { expect } from 'chai';
import { z } from 'zod';
import { toAppError } from '#src/http/trpc.ts';

describe('toAppError: what a procedure threw, as the catalogue says it', () => {
  const invalid = z.object({ object: z.enum(['payout']) }).safeParse({ object: 'approval' }).error!;

  it('tells input that fails its schema VALIDATION_FAILED, field by field', () => {
    const error = toAppError(new TRPCError({ code: 'BAD_REQUEST', cause: invalid }));
    expect(error.code).to.equal('VALIDATION_FAILED');
    expect(error.details.map((d) => d.field)).to.deep.equal(['object']);
  });

  it('tells an output that fails its schema INTERNAL_ERROR, naming nothing of it', () => {
    const logged: unknown[] = [];
    const log = { error: (...args: unknown[]) => logged.push(args) } as never;
    const error = toAppError(
      new TRPCError({ code: 'INTERNAL_SERVER_ERROR', message: 'Output validation failed', cause: invalid }),
      log,
    );
    expect(error.code).to.equal('INTERNAL_ERROR');
    expect(error.details).to.deep.equal([]);
    expect(logged).to.have.length(1);
  });
});
