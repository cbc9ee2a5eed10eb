import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { AuditEntry } from '#src/audit/entities.ts';
import { redactArguments } from '#src/audit/service.ts';
import { emSql } from '#src/db/sql.ts';
import { PaymentInstruction } from '#src/instructions/entities.ts';
import { runInstructionsOnce } from '#src/instructions/job.ts';
import { accountName } from '#src/ledger/chart.ts';
import { post } from '#src/ledger/ledger.ts';
import { dayOf } from '#src/lib/days.ts';
import { toDecimal } from '#src/lib/money.ts';
import { ROOT_OPERATOR_ID } from '#src/operators/entities.ts';
import { appRouter } from '#src/router.ts';
import { Inflow } from '#src/settlement/entities.ts';
import { failedRefund, heldMoney, heldPayout, strayInflow } from '../approvals/fixtures.ts';
import { uniqueName } from '../client.ts';
import { deps, eventually, merchantWith, paidPayout, payoutTo } from '../dispatch/fixtures.ts';
import { harness } from '../harness.ts';
import { paidOut } from '../ledger/fixtures.ts';
import { cliAs, newOperator } from '../operators/fixtures.ts';
import { payeeHeldPayout } from '../payees/fixtures.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import { sandbox } from '../settlement/fixtures.ts';
import { deadDelivery } from '../webhooks/receiver.ts';

/** One tRPC call over HTTP with its own request id; the parsed body. */
async function call(
  path: string,
  type: 'query' | 'mutation',
  input: unknown,
  token: string,
  requestId: string,
): Promise<{ status: number; body: any }> {
  const headers = { authorization: `Bearer ${token}`, 'x-request-id': requestId };
  const url = `${harness().url}/trpc/${path}`;
  const res =
    type === 'query'
      ? await fetch(`${url}?input=${encodeURIComponent(JSON.stringify(input ?? {}))}`, { headers })
      : await fetch(url, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify(input ?? {}),
        });
  return { status: res.status, body: await res.json() };
}

/** The audit rows written under one request id. */
async function rowsOf(requestId: string): Promise<AuditEntry[]> {
  return harness().service.deps.orm.em.fork().find(AuditEntry, { requestId });
}

function adminMutations(): string[] {
  const procedures = (appRouter._def as unknown as { procedures: Record<string, any> }).procedures;
  return Object.entries(procedures)
    .filter(([path, p]) => path.startsWith('admin.') && p._def.type === 'mutation')
    .map(([path]) => path)
    .sort();
}

/**
 * For every `admin.*` mutation, a call that changes something: the input (built with whatever it
 * needs first) and the ids its audit row must name. A mutation missing here fails the walk: give
 * it an entry, and make it write through `ctx.commit` so that its row is written.
 */
type Case = (token: string) => Promise<{
  input: unknown;
  targets: string[];
  /** Puts back what the case set up, once its row is checked. */
  after?: () => Promise<void>;
}>;

const rootToken = () => harness().adminToken;
const root = () => cliAs();

const CASES: Record<string, Case> = {
  'admin.operators.create': async () => ({
    input: { name: `audited ${randomUUID().slice(0, 8)}`, role: 'viewer' },
    targets: [],
  }),
  'admin.operators.role': async () => {
    const lowered = await newOperator('operator');
    return { input: { operator_id: lowered.id, role: 'viewer' }, targets: [lowered.id] };
  },
  'admin.approvalRules.propose': async () => ({
    input: { action: 'refund.raise', above: '987654', currency: 'USDT', approvers: 2 },
    targets: [],
  }),
  'admin.operators.revoke': async () => {
    const victim = await newOperator('viewer');
    return { input: { operator_id: victim.id }, targets: [victim.id] };
  },
  'admin.tenant.create': async () => ({ input: { name: uniqueName('Audited tenant') }, targets: [] }),
  'admin.tenant.approve': async () => {
    const tenant = await root()('tenant', 'create', '--name', uniqueName('To approve'));
    return { input: { tenant_id: tenant.id }, targets: [tenant.id] };
  },
  'admin.key.issue': async () => {
    const tenant = await root()('tenant', 'create', '--name', uniqueName('Keyed'));
    return { input: { tenant_id: tenant.id }, targets: [tenant.id] };
  },
  'admin.key.revoke': async () => {
    const tenant = await root()('tenant', 'create', '--name', uniqueName('Keyed'));
    const key = await root()('key', 'issue', '--tenant', tenant.id);
    return { input: { key_id: key.id }, targets: [key.id] };
  },
  'admin.webhooks.redeliver': async () => {
    const { job } = await deadDelivery();
    return { input: { delivery_id: job.id }, targets: [job.id, job.event.id] };
  },
  // Money moves are proposals: their call writes the proposal (and its row) and moves nothing.
  // Proposing checks that the move would run, so each needs a target in the state it needs.
  'admin.settlement.attribute': async () => {
    const stray = await strayInflow(await payoutReadyMerchant());
    return {
      input: { inflow_id: stray.inflowId, payout_id: stray.payoutId, note: 'n' },
      targets: [stray.inflowId, stray.payoutId],
    };
  },
  'admin.settlement.returnInflow': async () => {
    const { inflowId } = await strayInflow(await payoutReadyMerchant());
    return { input: { inflow_id: inflowId, reference: 'FT1', note: 'n' }, targets: [inflowId] };
  },
  'admin.settlement.failPayout': async () => {
    const { payoutId } = await heldPayout(await payoutReadyMerchant());
    return { input: { payout_id: payoutId, note: 'n' }, targets: [payoutId] };
  },
  'admin.payees.accept': async () => {
    const { payoutId } = await payeeHeldPayout();
    return { input: { payout_id: payoutId, note: 'n' }, targets: [payoutId] };
  },
  'admin.payees.setPolicy': async () => {
    const tenant = await root()('tenant', 'create', '--name', uniqueName('Payee policy'));
    return { input: { tenant_id: tenant.id, policy: 'hold' }, targets: [tenant.id] };
  },
  'admin.refunds.retry': async () => {
    const { refundId } = await failedRefund({ corrected: true });
    return { input: { refund_id: refundId, note: 'n' }, targets: [refundId] };
  },
  'admin.refunds.raise': async () => {
    const { payoutId } = await heldMoney({ destination: true });
    return { input: { payout_id: payoutId, note: 'n' }, targets: [payoutId] };
  },
  'admin.refunds.returnOverpayment': async () => {
    const merchant = await merchantWith();
    const payoutId = await paidPayout(merchant, payoutTo('5682', 'USDT'), { overpay: '3' });
    expect((await paidOut(merchant, payoutId)).status).to.equal('SUCCESSFUL');
    return { input: { payout_id: payoutId, note: 'n' }, targets: [payoutId] };
  },
  'admin.ledger.check': async () => {
    const { misplace } = await misplacedMoney();
    return { input: {}, targets: [], after: () => misplace(-1) };
  },
  'admin.recon.run': async () => ({
    input: { date: dayOf(harness().clock.now()), rail: 'PROCESSOR' },
    targets: [],
  }),
  'admin.recon.resolve': async () => {
    const breakId = await bankBreak();
    return { input: { break_id: breakId, note: 'statement corrected by the bank' }, targets: [breakId] };
  },
  'admin.recon.propose': async () => {
    const breakId = await bankBreak();
    return {
      input: { break_id: breakId, resolution: 'BOOKED_RAIL', note: 'the statement is right' },
      targets: [breakId],
    };
  },
  'admin.approvals.approve': async () => {
    const { approval } = await proposedByAnother();
    return { input: { approval_id: approval.id }, targets: [approval.id, ...approval.target_ids] };
  },
  'admin.approvals.reject': async () => {
    const { approval } = await proposedByAnother();
    return { input: { approval_id: approval.id, note: 'no' }, targets: [approval.id] };
  },
};

/** A proposal of an operator other than root (root approves or rejects it): failing a held payout. */
async function proposedByAnother(): Promise<{ approval: { id: string; target_ids: string[] } }> {
  const proposer = cliAs(await newOperator('operator'));
  const { payoutId } = await heldPayout(await payoutReadyMerchant());
  return proposer('payout', 'fail', payoutId, '--note', 'audited');
}

/**
 * A paid payout whose ledger holds 7 NGN in fees that is still the payout's: balanced, but out of
 * place, so the ledger's check finds it. `misplace(-1)` puts it back.
 */
async function misplacedMoney(): Promise<{ misplace: (sign: 1 | -1) => Promise<void> }> {
  const merchant = await merchantWith();
  const payoutId = await paidPayout(merchant, payoutTo('5681', 'NGN'));
  const payoutAccount = accountName('payout', { tenant: merchant.tenantId, payout: payoutId });
  const misplace = async (sign: 1 | -1) => {
    const [from, to] = sign === 1 ? [payoutAccount, 'fees:platform'] : ['fees:platform', payoutAccount];
    await post(emSql(deps().orm.em.fork()), [
      {
        tenantId: merchant.tenantId,
        payoutId,
        cause: { object: 'payout', id: payoutId, transition: 'TEST (PAYMENT_RECEIVED → PAYMENT_RECEIVED)' },
        at: harness().clock.now(),
        entries: [
          { account: from, currency: 'NGN', amount: toDecimal('-7'), movement: 'platform_fee' as const },
          { account: to, currency: 'NGN', amount: toDecimal('7'), movement: 'platform_fee' as const },
        ].map((e) => (e.account.startsWith('fees:') ? { ...e, movement: null } : e)),
      },
    ]);
  };
  await misplace(1);
  return { misplace };
}

/** An open reconciliation break: a bank statement line of 90 NGN for a credit notified as 100. */
async function bankBreak(): Promise<string> {
  const merchant = await merchantWith();
  const created = await fetch(`${harness().url}/v1/payouts`, {
    method: 'POST',
    headers: {
      'x-api-key': merchant.key,
      'idempotency-key': randomUUID(),
      'content-type': 'application/json',
    },
    body: JSON.stringify(payoutTo('4322', 'NGN')),
  });
  expect(created.status).to.equal(201);
  const payoutId = ((await created.json()) as { id: string }).id;
  await runInstructionsOnce(deps());
  const instruction = await deps().orm.em.fork().findOneOrFail(PaymentInstruction, { payout: payoutId });
  const short = await sandbox('/sandbox/bank/transfers', {
    account_number: instruction.accountUnique,
    amount: '100.00',
    statement_amount: '90.00',
    currency: 'NGN',
  });
  expect(short.status, short.text).to.equal(201);
  const sessionId = short.body.session_id as string;
  await eventually('the credit to be recorded', async () =>
    (await deps().orm.em.fork().count(Inflow, { externalRef: sessionId })) === 1 ? true : null,
  );
  await cliAs()('recon', 'run', '--date', dayOf(harness().clock.now()), '--rail', 'BANK_TRANSFER');
  const open = await cliAs()('recon', 'breaks', '--open', '--limit', '100');
  const found = open.data.find((b: { reference: string }) => b.reference === sessionId);
  expect(found, 'the bank statement difference as an open break').to.have.property('kind', 'AMOUNT_DIFFERS');
  return found.id as string;
}

/** The outcome each call above must record, when it is not OK. */
const OUTCOMES: Record<string, string> = {
  'admin.settlement.attribute': 'PENDING',
  'admin.settlement.returnInflow': 'PENDING',
  'admin.settlement.failPayout': 'PENDING',
  'admin.refunds.retry': 'PENDING',
  'admin.refunds.raise': 'PENDING',
  'admin.refunds.returnOverpayment': 'PENDING',
  'admin.payees.accept': 'PENDING',
  'admin.approvals.approve': 'APPROVED',
  'admin.approvalRules.propose': 'PENDING',
  'admin.recon.propose': 'PENDING',
  'admin.approvals.reject': 'REJECTED',
};

describe('the audit trail (admin.audit.*)', () => {
  it('has a row, in the transaction of the change, for every admin mutation of the router', async () => {
    const mutations = adminMutations();
    const missing = mutations.filter((path) => !CASES[path]);
    expect(missing, 'admin mutations without an audit case').to.deep.equal([]);
    for (const path of mutations) {
      const { input, targets, after } = await CASES[path]!(rootToken());
      const requestId = `audit-${randomUUID()}`;
      const res = await call(path, 'mutation', input, rootToken(), requestId);
      expect(res.status, `${path}: ${JSON.stringify(res.body)}`).to.equal(200);
      const rows = await rowsOf(requestId);
      expect(rows, `${path} wrote no audit row`).to.have.length(1);
      const row = rows[0]!;
      expect(row, path).to.include({
        action: path,
        operatorId: ROOT_OPERATOR_ID,
        operatorName: 'root',
        outcome: OUTCOMES[path] ?? 'OK',
      });
      expect(row.targetIds, path).to.include.members(targets);
      const data = res.body.result.data as { id?: string; approval?: { id: string } };
      const resultId = data.id ?? data.approval?.id;
      if (resultId) expect(row.targetIds, path).to.include(resultId);
      await after?.();
    }
  });

  it('writes nothing for a call that changed nothing', async () => {
    const refused: [string, Record<string, unknown>][] = [
      ['admin.operators.revoke', { operator_id: randomUUID() }],
      // A proposal its move refuses (no such payout) is refused, and no proposal is made.
      ['admin.settlement.failPayout', { payout_id: randomUUID(), note: 'n' }],
    ];
    for (const [path, input] of refused) {
      const requestId = `audit-${randomUUID()}`;
      const res = await call(path, 'mutation', input, rootToken(), requestId);
      expect(res.status, path).to.equal(404);
      expect(await rowsOf(requestId), path).to.deep.equal([]);
    }
  });

  it('leaves secrets out of the arguments it keeps', () => {
    expect(
      redactArguments({ name: 'x', token: 'op_1', nested: { api_key: 'k', secret: 's', url: 'https://a' } }),
    ).to.deep.equal({
      name: 'x',
      token: '[redacted]',
      nested: { api_key: '[redacted]', secret: '[redacted]', url: 'https://a' },
    });
  });

  it('refuses to change or delete a row, even to the service itself', async () => {
    const requestId = `audit-${randomUUID()}`;
    await call('admin.tenant.create', 'mutation', { name: uniqueName('Immutable') }, rootToken(), requestId);
    const [row] = await rowsOf(requestId);
    const em = harness().service.deps.orm.em.fork();
    for (const statement of [
      `update audit set outcome = 'FORGED' where id = '${row!.id}'`,
      `delete from audit where id = '${row!.id}'`,
    ]) {
      const err = await em.execute(statement).then(
        () => null,
        (e: Error) => e,
      );
      expect(err?.message, statement).to.match(/audit trail is immutable/);
    }
    expect((await rowsOf(requestId))[0]).to.include({ outcome: 'OK' });
  });

  it('refuses to truncate the trail or any of its monthly partitions', async () => {
    const em = () => harness().service.deps.orm.em.fork();
    const partitions = await em().execute<{ name: string }[]>(
      `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
        where i.inhparent = 'audit'::regclass order by 1`,
    );
    expect(partitions.length, 'this month, three ahead and the default').to.be.at.least(5);
    for (const table of ['audit', ...partitions.map((p) => p.name)]) {
      const err = await em()
        .execute(`truncate ${table}`)
        .then(
          () => null,
          (e: Error) => e,
        );
      expect(err?.message, table).to.match(/audit trail is immutable: TRUNCATE refused/);
    }
  });

  it('lists rows newest first, by operator, target and time, a page at a time, through the CLI too', async () => {
    const ada = await newOperator('operator');
    const as = cliAs(ada);
    const before = harness().clock.now();
    const tenant = await as('tenant', 'create', '--name', uniqueName('By Ada'));
    await as('tenant', 'approve', tenant.id);
    await as('key', 'issue', '--tenant', tenant.id);

    const mine = await as('audit', 'list', '--operator', ada.id);
    expect(mine.data.map((r: { action: string }) => r.action)).to.deep.equal([
      'admin.key.issue',
      'admin.tenant.approve',
      'admin.tenant.create',
    ]);
    expect(mine.data[0]).to.include({
      operator_id: ada.id,
      operator_name: ada.name,
      operator_role: 'operator',
    });
    expect(JSON.stringify(mine)).to.not.include('api_key":"pk_');

    const aboutTenant = await as('audit', 'list', '--target', tenant.id);
    expect(aboutTenant.data).to.have.length(3);

    const first = await as('audit', 'list', '--operator', ada.id, '--limit', '2');
    expect(first.meta.has_more).to.equal(true);
    const second = await as(
      'audit',
      'list',
      '--operator',
      ada.id,
      '--limit',
      '2',
      '--cursor',
      first.meta.next_cursor,
    );
    expect(second.data.map((r: { action: string }) => r.action)).to.deep.equal(['admin.tenant.create']);

    const viewer = cliAs(await newOperator('viewer'));
    const since = await viewer('audit', 'list', '--operator', ada.id, '--since', before.toISOString());
    expect(since.data).to.have.length(3);
    const until = await viewer('audit', 'list', '--operator', ada.id, '--until', before.toISOString());
    expect(until.data).to.have.length(0);
  });
});
