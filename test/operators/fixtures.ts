import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { run } from '#src/cli/admin.ts';
import { ROOT_OPERATOR_ID } from '#src/operators/entities.ts';
import type { Role } from '#src/operators/roles.ts';
import { createOperator } from '#src/operators/service.ts';
import { harness } from '../harness.ts';

/** Operators of the tests: what the CLI and tRPC need to act as one. */
export interface TestOperator {
  id: string;
  name: string;
  role: Role;
  token: string;
}

/** A new operator with `role`, made through the service as `operator create` makes one. */
export async function newOperator(
  role: Role,
  name = `${role} ${randomUUID().slice(0, 8)}`,
): Promise<TestOperator> {
  const em = harness().service.deps.orm.em.fork();
  const { operator, token } = await createOperator(em, { name, role, createdBy: ROOT_OPERATOR_ID });
  return { id: operator.id, name: operator.name, role: operator.role, token };
}

const shared = new Map<Role, Promise<TestOperator>>();

/** One operator per role for the whole run, made on first use. */
export function operatorWith(role: Role): Promise<TestOperator> {
  let made = shared.get(role);
  if (!made) {
    made = newOperator(role);
    shared.set(role, made);
  }
  return made;
}

/** The admin CLI as `operator` (root when none is given). */
export function cliAs(operator?: { token: string }) {
  return (...argv: string[]): Promise<any> =>
    run(argv, { serviceUrl: harness().url, token: operator?.token ?? harness().adminToken });
}

/** One tRPC call over plain HTTP, as any client would make it; the parsed body either way. */
export async function trpcCall(
  path: string,
  type: 'query' | 'mutation',
  input: unknown,
  token: string | null,
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const url = `${harness().url}/trpc/${path}`;
  const res =
    type === 'query'
      ? await fetch(input === undefined ? url : `${url}?input=${encodeURIComponent(JSON.stringify(input))}`, {
          headers,
        })
      : await fetch(url, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify(input ?? {}),
        });
  return { status: res.status, body: await res.json() };
}

/**
 * A money move as the CLI makes it, proposed by root (with a note unless the arguments carry
 * one) and approved by a second operator, an approver: the move's result. A move its checks
 * refuse is thrown as the move's own refusal: the proposal's when they refuse it then, else the
 * approval's with the proposal's failure code and the details.
 */
export async function approvedMove(...argv: string[]): Promise<any> {
  const args = argv.includes('--note') ? argv : [...argv, '--note', 'approved in a test'];
  const { approval } = await cliAs()(...args);
  const approver = await operatorWith('approver');
  try {
    const decided = await cliAs(approver)('approval', 'approve', approval.id);
    return decided.approval.result;
  } catch (err) {
    const e = err as { data?: { app_code?: string; details?: unknown } };
    if (e.data?.app_code !== 'APPROVAL_ACTION_FAILED') throw err;
    const failed = await cliAs()('approval', 'show', approval.id);
    Object.assign(e.data, { app_code: failed.failure_code });
    throw err;
  }
}

/**
 * How a refused admin call (a CLI command or a tRPC call) failed: its catalogue code (USAGE for a
 * CLI usage error), message and details. Fails the test when the call succeeded.
 */
export async function refusal(
  promise: Promise<unknown>,
  what = 'the call',
): Promise<{ code: string; message: string; details: any }> {
  const err = (await promise.then(
    () => null,
    (e: unknown) => e,
  )) as { message: string; data?: { app_code?: string; details?: unknown } } | null;
  expect(err, `${what} should have been refused`).to.not.equal(null);
  return { code: err!.data?.app_code ?? 'USAGE', message: err!.message, details: err!.data?.details };
}
