import { randomUUID } from 'node:crypto';
import { TRPC_ERROR_CODES_BY_KEY } from '@trpc/server/rpc';
import { expect } from 'chai';
import fc from 'fast-check';
import { ERROR_CATALOGUE, type ErrorCode } from '#src/http/errors.ts';
import type { TextRule } from '#src/http/input.ts';
import { trpcCodeOf } from '#src/http/trpc.ts';
import { harness } from '../harness.ts';

/**
 * What the fuzz tests send: values no field of the service accepts, and the row counts that show
 * nothing was written. Bounded (FUZZ_RUNS runs per operation, 10 by default) and reproducible
 * (FUZZ_SEED, printed by fast-check with the failing request when something fails).
 */
export const RUNS = Number(process.env.FUZZ_RUNS ?? 10);
export const SEED = Number(process.env.FUZZ_SEED ?? 17_2026);

/** Stand-ins replaced in the JSON text by what JSON.stringify cannot write. */
const HUGE = '__FUZZ_1E309__';
const TINY = '__FUZZ_-1E309__';
export const rawJson = (value: unknown): string =>
  JSON.stringify(value).replaceAll(`"${HUGE}"`, '1e309').replaceAll(`"${TINY}"`, '-1e309');

/** Tab, line feed and carriage return: operators' multi-line notes may hold them. */
const LINE_BREAKS = new Set([0x09, 0x0a, 0x0d]);

/** Arrays nested `depth` deep; fast-check reports one by its depth (its own printing would recurse). */
const nested = fc.integer({ min: 33, max: 2500 }).map((depth) => {
  let value: unknown[] = [];
  for (let i = 1; i < depth; i++) value = [value];
  return Object.defineProperty(value, fc.toStringMethod, { value: () => `<arrays nested ${depth} deep>` });
});

/**
 * Values that no field of a procedure whose text follows `rule` accepts (`hostile`), and values no
 * id field accepts (`hostileId`: hostile, or text that is not a UUID): text with a control
 * character the rule refuses, arrays nested past the depth limit, a number beyond a double,
 * objects where scalars go.
 */
export function hostileValues(rule: TextRule): {
  hostile: fc.Arbitrary<unknown>;
  hostileId: fc.Arbitrary<unknown>;
} {
  const control = fc
    .oneof(fc.integer({ min: 0, max: 0x1f }), fc.integer({ min: 0x7f, max: 0x9f }))
    .filter((c) => rule === 'single-line' || !LINE_BREAKS.has(c))
    .map((c) => String.fromCharCode(c));
  /** Text with at least one refused control character somewhere in it. */
  const controlText = fc
    .tuple(fc.string({ maxLength: 12 }), control, fc.string({ maxLength: 12 }))
    .map(([a, c, b]) => a + c + b);
  const hostile: fc.Arbitrary<unknown> = fc.oneof(
    { weight: 4, arbitrary: controlText },
    { weight: 1, arbitrary: nested },
    { weight: 1, arbitrary: fc.constantFrom(HUGE, TINY) },
    {
      weight: 1,
      arbitrary: fc.constantFrom<unknown>(
        { __proto__: { admin: true } },
        JSON.parse('{"__proto__":{"polluted":1}}'),
        { $ne: null },
        ['a\u0000'],
      ),
    },
  );
  const hostileId = fc.oneof(
    hostile,
    fc.constantFrom('abc', '0', '-1', `${randomUUID()}x`, 'x'.repeat(300), "' OR 1=1 --"),
  );
  return { hostile, hostileId };
}

/** Rows in every table of the schema; with `tenantId`, only the tenant's, in every table with a tenant_id. */
export async function rowCounts(tenantId?: string): Promise<Record<string, number>> {
  const connection = harness().service.deps.orm.em.fork().getConnection();
  // Tables and partitioned tables, not their partitions: a partition's rows are its parent's.
  const tables = await connection.execute<{ table_name: string }[]>(
    `select c.relname as table_name from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = current_schema() and c.relkind in ('r', 'p') and not c.relispartition
        and (? or exists (select 1 from pg_attribute a
                           where a.attrelid = c.oid and a.attname = 'tenant_id' and not a.attisdropped))
      order by c.relname`,
    [tenantId === undefined],
  );
  const out: Record<string, number> = {};
  for (const { table_name } of tables) {
    const [row] = await connection.execute<{ n: string }[]>(
      `select count(*) as n from "${table_name}"${tenantId === undefined ? '' : ' where tenant_id = ?'}`,
      tenantId === undefined ? [] : [tenantId],
    );
    out[table_name] = Number(row!.n);
  }
  return out;
}

/**
 * Checks a tRPC answer is a refusal in tRPC's error shape: a 4xx, the catalogue code of that status
 * in `data.app_code`, and the tRPC code and JSON-RPC code of the same status.
 */
export function expectTrpcRefusal(status: number, text: string, label: string): void {
  const what = `${label.slice(0, 300)}: ${status} ${text.slice(0, 500)}`;
  expect(status, what).to.be.within(400, 499);
  const error = (JSON.parse(text) as { error?: TrpcError }).error;
  expect(error?.data, what).to.be.an('object');
  const appCode = error!.data!.app_code as ErrorCode;
  expect(Object.keys(ERROR_CATALOGUE), what).to.include(appCode);
  expect(ERROR_CATALOGUE[appCode].status, what).to.equal(status);
  expect(error!.data?.httpStatus, what).to.equal(status);
  expect(error!.data?.code, what).to.equal(trpcCodeOf(appCode));
  expect(error!.code, what).to.equal(TRPC_ERROR_CODES_BY_KEY[trpcCodeOf(appCode)]);
  expect(error!.message, what).to.be.a('string');
}

interface TrpcError {
  message?: unknown;
  code?: unknown;
  data?: { code?: unknown; httpStatus?: unknown; app_code?: unknown };
}
