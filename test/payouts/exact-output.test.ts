import { randomUUID } from 'node:crypto';
import { callTRPCProcedure } from '@trpc/server';
import { expect } from 'chai';
import { z } from 'zod';
import { pageOf } from '#src/http/pagination.ts';
import { publicProcedure, router, settleOutputChecks } from '#src/http/trpc.ts';
import { PAYEE_CHECKS } from '#src/payees/name-match.ts';
import { PAYOUT_STATUSES, type PayoutStatus } from '#src/payouts/entities.ts';
import { type PayoutView, payoutOut, toPayoutPage, toPayoutResource } from '#src/payouts/resource.ts';
import { appRouter } from '#src/router.ts';
import { payoutView } from '../../bench/lib/payout-views.ts';

// Under NODE_ENV=production the hot paths (create, list and get payouts) send their handler's
// output without parsing it with the output schema: it must be exactly what the schema renders.

const at = (second: number) =>
  `2026-11-0${1 + (second % 9)} 10:00:${String(second % 60).padStart(2, '0')}.12+00`;

/**
 * A payout as the page query reads it, in `status`, with or without its optional parts: the
 * bench's built payout, varied in what the resource renders in more than one way.
 */
function view(status: PayoutStatus, variant: number): PayoutView {
  const full = variant % 2 === 1;
  const rail = variant % 3 === 0 ? 'CRYPTO' : 'BANK_TRANSFER';
  const check = PAYEE_CHECKS[variant % PAYEE_CHECKS.length]!;
  const built = payoutView(status, at(variant), { rail });
  const [created, step] = built.timeline;
  return {
    ...built,
    merchant_reference: full ? `ref-${variant}` : null,
    metadata: full ? { zeta: 'last', alpha: 'first', 'order-7': 'x' } : {},
    notification_url: full ? 'https://merchant.example/hooks' : null,
    destination_type: full ? 'BANK_ACCOUNT' : 'MOBILE_MONEY',
    destination_amount: full ? '150000.5' : '2500',
    destination_provider_code: full ? '044' : null,
    destination_account_name: full ? 'Ada Obi' : null,
    payee_check: variant % 4 === 0 ? null : check,
    payee_institution_name: check === 'CLOSE_MATCH' ? 'ADA OBI' : null,
    payee_checked_at: check === 'PENDING' ? null : at(variant + 1),
    is_refunded: status === 'FAILED' && full,
    refund_reference: status === 'FAILED' && full ? randomUUID() : null,
    updated_at: new Date(Date.UTC(2026, 10, 3, 0, 0, 0, variant)),
    timeline: [
      { ...created!, metadata: full ? { request_id: 'req_1', nested: { b: 1, a: [1, 'x'] } } : null },
      ...(step
        ? [
            {
              ...step,
              triggered_by: full ? ('PROCESSOR_WEBHOOK' as const) : ('SYSTEM' as const),
              reason_detail: full ? { rail, z: null, a: '1.50' } : null,
              created_at: new Date(Date.UTC(2026, 10, 2, 10, 0, variant, 5)),
            },
          ]
        : []),
    ],
  };
}

/** The value is what the schema renders, byte for byte. */
function expectExact(schema: z.ZodType, value: unknown): void {
  expect(JSON.stringify(schema.parse(value))).to.equal(JSON.stringify(value));
}

describe('exact output of the hot paths', () => {
  const views = PAYOUT_STATUSES.flatMap((status) => [0, 1, 2, 3, 4, 5].map((v) => view(status, v)));

  it('renders a payout in every status and shape exactly as its schema does', () => {
    for (const v of views) expectExact(payoutOut, toPayoutResource(v));
  });

  it('renders a page of them, with and without a next cursor, exactly as its schema does', () => {
    const page = pageOf(payoutOut);
    expectExact(page, toPayoutPage(views, { next_cursor: 'abc.def', has_more: true, limit: views.length }));
    expectExact(page, toPayoutPage([], { next_cursor: null, has_more: false, limit: 20 }));
  });

  it('marks create, list and get, and no other procedure', () => {
    const marked = Object.entries(appRouter._def.procedures as Record<string, unknown>)
      .filter(([, p]) => (p as { _def: { meta?: { exactOutput?: boolean } } })._def.meta?.exactOutput)
      .map(([path]) => path)
      .sort();
    expect(marked).to.deep.equal(['payouts.create', 'payouts.get', 'payouts.list']);
  });

  describe('settleOutputChecks', () => {
    const out = z.object({ a: z.string(), b: z.number() });
    const probe = (production: boolean) =>
      settleOutputChecks(
        router({
          exact: publicProcedure
            .meta({ exactOutput: true })
            .input(z.object({ value: z.unknown() }))
            .output(out)
            .query(({ input }) => input.value as z.infer<typeof out>),
          checked: publicProcedure
            .input(z.object({ value: z.unknown() }))
            .output(out)
            .query(({ input }) => input.value as z.infer<typeof out>),
        }),
        production,
      );
    const call = (r: ReturnType<typeof probe>, path: string, value: unknown) =>
      callTRPCProcedure({
        router: r,
        path,
        type: 'query',
        ctx: {},
        getRawInput: async () => ({ value }),
        signal: undefined,
        batchIndex: 0,
      });

    it('outside production, sends an exact output as it is and refuses one the schema would change', async () => {
      const r = probe(false);
      const exact = { a: 'x', b: 1 };
      expect(await call(r, 'exact', exact)).to.equal(exact);
      for (const changed of [{ a: 'x', b: 1, extra: true }, { b: 1, a: 'x' }, { a: 'x' }]) {
        const error = await call(r, 'exact', changed).then(
          () => null,
          (err: unknown) => err,
        );
        expect(error, JSON.stringify(changed)).to.have.property('code', 'INTERNAL_SERVER_ERROR');
      }
    });

    it('in production, skips the check of a marked procedure only', async () => {
      const r = probe(true);
      const extra = { a: 'x', b: 1, extra: true };
      expect(await call(r, 'exact', extra)).to.equal(extra);
      expect(await call(r, 'checked', extra)).to.deep.equal({ a: 'x', b: 1 });
      const error = await call(r, 'checked', { a: 'x' }).then(
        () => null,
        (err: unknown) => err,
      );
      expect(error).to.have.property('code', 'INTERNAL_SERVER_ERROR');
    });
  });
});
