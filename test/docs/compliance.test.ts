import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import Koa from 'koa';
import { type AnyStateMachine, createMachine } from 'xstate';
import { payoutMachine, payoutTexts } from '#machines/payout.machine.ts';
import { loadConfig } from '#src/config.ts';
import { Corridors } from '#src/corridors/corridors.ts';
import { buildComplianceModel, type ComplianceMachine, MONEY_PLACES } from '#src/docs/compliance.ts';
import { committedModel, IncompleteTexts, unregisteredMachines } from '#src/docs/generate.ts';
import { MACHINE_DOCS, type MachineDoc } from '#src/docs/registry.ts';
import { docsRoutes } from '#src/docs/serve.ts';
import { toDecimal } from '#src/lib/money.ts';

/**
 * The compliance view of the machines: every state, transition and guard in plain words, with
 * where the money is, who acts, the thresholds in force and the links between machines, all read
 * from the machines and the texts beside them.
 */

const defaults = loadConfig({});

function machineOf(name: string, config = defaults): ComplianceMachine {
  const { model, problems } = buildComplianceModel(MACHINE_DOCS, config);
  expect(problems).to.deep.equal([]);
  return model.machines.find((m) => m.name === name)!;
}

type Config = Record<string, unknown> & { states: Record<string, Record<string, unknown>> };

/** The payout machine with its configuration changed by `change`, and its own texts. */
function payoutVariant(change: (config: Config) => Config, texts = payoutTexts): MachineDoc[] {
  const config = change(payoutMachine.config as unknown as Config);
  const machine = createMachine(config as never, payoutMachine.implementations as never) as AnyStateMachine;
  return MACHINE_DOCS.map((d) => (d.name === 'payout' ? { ...d, machine, texts } : d));
}

function problemsOf(docs: readonly MachineDoc[]): string[] {
  return buildComplianceModel(docs, defaults).problems;
}

describe('the compliance view of the machines', () => {
  it('has a plain-language text for every state, transition and guard of every machine', () => {
    expect(buildComplianceModel(MACHINE_DOCS, defaults).problems).to.deep.equal([]);
    for (const machine of committedModel().machines) {
      expect(machine.summary, machine.name).to.not.equal('');
      for (const s of machine.states)
        expect(s.description, `${machine.name} ${s.path}`).to.have.length.above(10);
      for (const t of machine.transitions) {
        expect(t.description, `${machine.name} ${t.number}`).to.have.length.above(10);
        expect(t.by, `${machine.name} ${t.number}`).to.not.be.empty;
        if (t.guard)
          expect(t.guard.text, `${machine.name} ${t.number}`).to.not.match(/\b[a-z]+[A-Z]\w*\b(?![`])/);
      }
    }
  });

  it('says, for every state where money or a decision waits for a person, how long, who is alerted and what follows', () => {
    const waits: string[] = [];
    for (const machine of committedModel().machines) {
      for (const s of machine.states) {
        if (s.money === 'HELD_FOR_PERSON') expect(s.waiting, `${machine.name} ${s.path}`).to.not.be.empty;
        for (const w of s.waiting) {
          waits.push(`${machine.name}/${s.path}:${w.queue}`);
          expect(w.overdue_after).to.match(/^`OVERDUE_[A-Z_]+_HOURS` = \d+ hours$/);
          expect(w.alerted).to.include('ExceptionQueueOverdue');
          expect(w.afterwards).to.have.length.above(20);
        }
      }
    }
    expect(waits).to.include.members([
      'payout/PENDING_PAYMENT.held:PAYOUTS_HELD_UNDERPAID',
      'inflow/UNMATCHED:INFLOWS_UNMATCHED',
      'refund/FAILED:REFUNDS_FAILED',
      'webhook-delivery/DEAD:WEBHOOK_DELIVERIES_DEAD',
      'approval/PENDING:APPROVALS_PENDING',
    ]);
    // The limit in force, not the default: a deployment's own setting shows.
    const held = machineOf('payout', loadConfig({ OVERDUE_PAYOUTS_HELD_UNDERPAID_HOURS: '6' })).states.find(
      (s) => s.path === 'PENDING_PAYMENT.held',
    )!;
    expect(held.waiting[0]!.overdue_after).to.equal('`OVERDUE_PAYOUTS_HELD_UNDERPAID_HOURS` = 6 hours');
  });

  it('refuses a state that holds money for a person with no exception queue naming it', () => {
    const problems = problemsOf(
      payoutVariant((config) => ({
        ...config,
        states: {
          ...config.states,
          EXPIRED: { ...config.states['EXPIRED'], meta: { money: 'HELD_FOR_PERSON' } },
        },
      })),
    );
    expect(problems.join('\n')).to.include(
      'payout: state EXPIRED holds money for a person, but no exception queue',
    );
  });

  it('says where the money is in every plain state of a machine that holds money, and nowhere else', () => {
    for (const machine of committedModel().machines) {
      for (const s of machine.states) {
        const plain = s.children.length === 0;
        if (machine.holds_money && plain && s.cases.length === 0)
          expect(MONEY_PLACES, `${machine.name} ${s.path}`).to.include(s.money);
        else if (s.cases.length > 0)
          for (const c of s.cases)
            expect(MONEY_PLACES, `${machine.name} ${s.path} ${c.code}`).to.include(c.money);
        else expect(s.money, `${machine.name} ${s.path}`).to.equal(null);
      }
    }
    const payout = machineOf('payout');
    const money = Object.fromEntries(payout.states.map((s) => [s.path, s.money]));
    expect(money).to.include({
      'CREATED.preparing': 'NOT_YET_RECEIVED',
      'CREATED.payeeHeld': 'NOT_YET_RECEIVED',
      'PENDING_PAYMENT.held': 'HELD_FOR_PERSON',
      PAYMENT_RECEIVED: 'WITH_US',
      'PROCESSING.inFlight': 'WITH_PROCESSOR',
      SUCCESSFUL: 'WITH_BENEFICIARY',
    });
    expect(machineOf('refund').states.find((s) => s.path === 'SUCCESSFUL')!.money).to.equal(
      'BACK_WITH_MERCHANT',
    );
    // Awaiting confirmations, a transfer is on the chain and not ours; a refund sent is on its way back.
    expect(machineOf('inflow').states.find((s) => s.path === 'PENDING_CONFIRMATION')!.money).to.equal(
      'ON_THE_CHAIN',
    );
    expect(machineOf('refund').states.find((s) => s.path === 'PROCESSING')!.money).to.equal(
      'ON_ITS_WAY_BACK',
    );
    expect(machineOf('quote').holds_money).to.equal(false);
  });

  it("tells a failed payout's money apart by the ledger, not by the state name, and names the refund fee", () => {
    const failed = machineOf('payout').states.find((s) => s.path === 'FAILED')!;
    expect(failed.money).to.equal(null);
    expect(failed.cases.map((c) => [c.code, c.money, c.test])).to.deep.equal([
      ['AWAITING_REFUND', 'WITH_US', { test: 'holds', accounts: ['payout'] }],
      ['REFUND_ON_ITS_WAY', 'ON_ITS_WAY_BACK', { test: 'holds', accounts: ['refundRail'] }],
      ['RETURNED_TO_MERCHANT', 'BACK_WITH_MERCHANT', { test: 'holds', accounts: ['merchant'] }],
      ['KEPT_AS_REFUND_FEE', 'WITH_US', { test: 'holds', accounts: ['refundFee'] }],
      ['NOTHING_RECEIVED', 'NOT_YET_RECEIVED', { test: 'empty', accounts: ['payout'] }],
    ]);
    const returned = failed.cases.find((c) => c.code === 'RETURNED_TO_MERCHANT')!;
    // The fee is named with its amounts in force, from the corridors file the service runs with.
    expect(returned.description).to.include('refund fee').and.include('50.00 NGN on the bank');
    expect(returned.ledger).to.equal(
      'the ledger shows the payout’s money above zero in `world:merchants:<tenant>`',
    );
    const corridors = Corridors.load();
    const cheaper = Object.create(corridors) as Corridors;
    cheaper.refundFee = (c, n) => (c === 'NGN' ? toDecimal('25') : corridors.refundFee(c, n));
    const { model } = buildComplianceModel(MACHINE_DOCS, defaults, cheaper);
    const fee = model.fees.find((f) => f.kind === 'refund')!;
    expect(fee.account).to.equal('fees:refund');
    expect(fee.text).to.include('25.00 NGN on the bank');
    expect(model.fees.map((f) => f.kind)).to.deep.equal(['platform', 'network', 'refund']);
  });

  it('refuses a money case that reads an account kind the ledger does not have', () => {
    const docs = payoutVariant((c) => ({
      ...c,
      states: {
        ...c.states,
        EXPIRED: {
          ...c.states['EXPIRED'],
          meta: {
            cases: [
              {
                code: 'X',
                label: 'x',
                money: 'WITH_US',
                description: 'x',
                ledger: { test: 'holds', accounts: ['vault'] },
              },
            ],
          },
        },
      },
    }));
    expect(problemsOf(docs).join('\n')).to.include(
      'payout: state EXPIRED: money case X reads vault, no account kind',
    );
  });

  it('gives no two states of a machine, and no two transitions between different states, the same text', () => {
    for (const machine of committedModel().machines) {
      const states = new Map<string, string>();
      for (const s of machine.states) {
        expect(states.get(s.description), `${machine.name}: ${s.path} reads as ${states.get(s.description)}`)
          .to.be.undefined;
        states.set(s.description, s.path);
      }
      const transitions = new Map<string, string>();
      for (const t of machine.transitions) {
        const ends = `${t.from} → ${t.to}`;
        const seen = transitions.get(t.description);
        expect(
          seen === undefined || seen === ends,
          `${machine.name}: ${ends} reads as ${seen}: ${t.description}`,
        ).to.be.true;
        transitions.set(t.description, ends);
      }
    }
  });

  it('marks the final states from the machine itself', () => {
    const finals = machineOf('payout')
      .states.filter((s) => s.final)
      .map((s) => s.path);
    expect(finals).to.deep.equal(['SUCCESSFUL', 'FAILED', 'EXPIRED']);
    // A failed refund waits for an operator: not final.
    expect(machineOf('refund').states.find((s) => s.path === 'FAILED')!.final).to.equal(false);
    // Money held against a payout waits for a person; once the payout failed, its refund's.
    const inflow = machineOf('inflow');
    expect(inflow.states.filter((s) => s.final).map((s) => s.path)).to.have.members([
      'MATCHED',
      'RETURNED',
      'FOR_REFUND',
    ]);
    const money = Object.fromEntries(inflow.states.map((s) => [s.path, s.money]));
    expect(money).to.include({ 'HELD.attributed': 'HELD_FOR_PERSON', FOR_REFUND: 'WITH_US' });
  });

  it('writes every guard in plain words with the threshold read from the configuration', () => {
    const retry = machineOf('payout').transitions.find(
      (t) => t.from === 'PAYMENT_RECEIVED' && t.guard?.code === 'isRetryable and hasAttemptsLeft',
    )!;
    expect(retry.guard!.text).to.equal(
      'the processor says another attempt may succeed, and fewer than `DISPATCH_MAX_ATTEMPTS` = 3 attempts have been made',
    );
    // The fallback row names what failed, both ways round.
    const fail = machineOf('payout').transitions.find(
      (t) => t.from === 'PAYMENT_RECEIVED' && t.to === 'FAILED',
    )!;
    expect(fail.guard).to.deep.equal({
      code: 'otherwise',
      text: 'otherwise: the processor says the failure is final, or `DISPATCH_MAX_ATTEMPTS` = 3 attempts have been made',
    });
    const lapse = machineOf('payment-instruction').guards.find((g) => g.name === 'hasLapsed')!;
    expect(lapse.holds).to.equal(
      "the instruction's lifetime, `PAYMENT_INSTRUCTION_TTL_MS` = 30 min from its issue, has run out",
    );

    const configured = { ...defaults, DISPATCH_MAX_ATTEMPTS: 5, PAYMENT_INSTRUCTION_TTL_MS: 2_700_000 };
    const payout = machineOf('payout', configured);
    expect(payout.guards.find((g) => g.name === 'hasAttemptsLeft')!.holds).to.equal(
      'fewer than `DISPATCH_MAX_ATTEMPTS` = 5 attempts have been made',
    );
    expect(payout.thresholds).to.deep.include({
      name: 'PAYMENT_INSTRUCTION_TTL_MS',
      value: 2_700_000,
      display: '45 min',
      source: 'configuration',
    });
    expect(
      machineOf('webhook-delivery').thresholds.map((t) => [t.name, t.display, t.source]),
    ).to.deep.include(['WEBHOOK_MAX_ATTEMPTS', '5', 'code']);
  });

  it('says who can cause every transition', () => {
    const payout = machineOf('payout');
    const by = (from: string | null, event: string | null) =>
      payout.transitions.find((t) => t.from === from && t.event === event)!.by;
    expect(by(null, null)).to.deep.equal(['MERCHANT']);
    expect(by('PENDING_PAYMENT.held', 'OPERATOR_FAIL')).to.deep.equal(['OPERATOR_FOUR_EYES']);
    expect(by('PROCESSING', 'PROCESSOR_SUCCEEDED')).to.deep.equal(['PROCESSOR']);
    expect(by('PENDING_PAYMENT.awaiting', 'INSTRUCTION_EXPIRED')).to.deep.equal(['SYSTEM']);
    expect(by('PENDING_PAYMENT.awaiting', 'SETTLEMENT_CONFIRMED')).to.include('BANK_OR_CHAIN');
  });

  it('links the machines that move each other, both ways', () => {
    const { model } = buildComplianceModel(MACHINE_DOCS, defaults);
    const payout = model.machines.find((m) => m.name === 'payout')!;
    const refund = model.machines.find((m) => m.name === 'refund')!;
    // A payout FAILED with money raises a refund; one failed before any money was asked for does not.
    const toFailed = payout.transitions.filter((t) => t.to === 'FAILED');
    for (const t of toFailed) {
      const raises = t.causes.some((c) => c.machine === 'refund' && c.event === null);
      expect(raises, `payout ${t.number} (${t.event})`).to.equal(!t.from!.startsWith('CREATED'));
    }
    const raisedBy = refund.transitions[0]!.caused_by;
    expect(
      raisedBy
        .filter((c) => c.machine === 'payout')
        .map((c) => c.transition)
        .sort((a, b) => a - b),
    ).to.deep.equal(toFailed.filter((t) => !t.from!.startsWith('CREATED')).map((t) => t.number));
    // ... and an approved proposal raises the refund of money held without a destination.
    expect(raisedBy.filter((c) => c.machine !== 'payout').map((c) => c.machine)).to.deep.equal(['approval']);
    // An operator's failure of a held payout hands the money held against it to its refund, and
    // that is the only way money held against a payout goes FOR_REFUND.
    const inflow = model.machines.find((m) => m.name === 'inflow')!;
    const operatorFail = payout.transitions.find(
      (t) => t.event === 'OPERATOR_FAIL' && t.from === 'PENDING_PAYMENT.held',
    )!;
    const forRefund = inflow.transitions.filter((t) => t.to === 'FOR_REFUND');
    expect(forRefund.map((t) => [t.from, t.event])).to.deep.equal([['HELD.attributed', 'PAYOUT_FAILED']]);
    expect(
      operatorFail.causes.filter((c) => c.machine === 'inflow').map((c) => [c.event, c.transitions]),
    ).to.deep.equal([['PAYOUT_FAILED', forRefund.map((t) => t.number)]]);
    expect(forRefund[0]!.caused_by.map((c) => [c.machine, c.transition])).to.deep.equal([
      ['payout', operatorFail.number],
    ]);
    // An outflow's outcome moves its payout.
    const succeeded = payout.transitions.find((t) => t.event === 'PROCESSOR_SUCCEEDED')!;
    expect(succeeded.caused_by.map((c) => c.machine)).to.deep.equal(['outflow', 'outflow']);
    // Every payout event the merchant is told about creates webhook deliveries.
    for (const t of payout.transitions.filter((x) => x.effects.webhooks.length > 0)) {
      expect(
        t.causes.map((c) => [c.kind, c.machine]),
        `payout ${t.number}`,
      ).to.deep.include(['webhook', 'webhook-delivery']);
    }
    expect(model.links.filter((l) => l.to.machine === 'refund').map((l) => l.from.machine)).to.not.be.empty;
  });

  it('names the arrow that draws every transition in the picture', () => {
    const payout = machineOf('payout');
    for (const t of payout.transitions) expect(t.diagram_edges, `${t.number}`).to.not.be.empty;
    // A transition of PROCESSING that stays inside it is drawn from each inner state.
    const retried = payout.transitions.find(
      (t) => t.from === 'PROCESSING' && t.to === 'PROCESSING.redispatching',
    )!;
    expect(retried.diagram_edges.map((e) => e.from)).to.deep.equal([
      'PROCESSING.inFlight',
      'PROCESSING.redispatching',
    ]);
  });

  it('refuses to generate while a machine file is not registered, so a new machine cannot skip its texts', async () => {
    expect(await unregisteredMachines()).to.deep.equal([]);
    const root = await mkdtemp(path.join(os.tmpdir(), 'machines-'));
    try {
      await mkdir(path.join(root, 'machines'));
      for (const doc of MACHINE_DOCS) await writeFile(path.join(root, `machines/${doc.name}.machine.ts`), '');
      await writeFile(path.join(root, 'machines/settlement-batch.machine.ts'), '');
      await writeFile(path.join(root, 'machines/settlement-batch.machine.test.ts'), '');
      expect(await unregisteredMachines(root)).to.deep.equal([
        'machines/settlement-batch.machine.ts is not in src/docs/registry.ts (add it there, with its texts)',
      ]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  describe('refuses a machine changed without its texts (the docs check fails)', () => {
    const expectRefused = (docs: readonly MachineDoc[], problem: string) => {
      expect(problemsOf(docs)).to.include(problem);
      expect(() => committedModel(docs))
        .to.throw(IncompleteTexts)
        .with.property('message')
        .that.includes(problem);
    };

    it('a new state without its meaning or its money', () => {
      const docs = payoutVariant((c) => ({ ...c, states: { ...c.states, ON_HOLD: { type: 'atomic' } } }));
      expectRefused(docs, 'payout: state ON_HOLD has no description (what it means, in plain words)');
      expectRefused(
        docs,
        'payout: state ON_HOLD does not say where the money is (meta.money, or meta.cases)',
      );
    });

    it('a transition without what happens or who causes it', () => {
      const docs = payoutVariant((c) => ({
        ...c,
        states: {
          ...c.states,
          CREATED: {
            ...c.states['CREATED'],
            on: { ...(c.states['CREATED']!['on'] as object), CANCEL: 'EXPIRED' },
          },
        },
      }));
      expectRefused(
        docs,
        'payout: transition 2 (CREATED CANCEL) has no description (what happens, in plain words)',
      );
      expectRefused(docs, 'payout: transition 2 (CREATED CANCEL) does not say who can cause it (meta.by)');
    });

    it('a guard without its plain words', () => {
      const { isRetryable: _, ...guards } = payoutTexts.guards;
      const docs = payoutVariant((c) => c, { ...payoutTexts, guards } as never);
      expect(problemsOf(docs).some((p) => p.endsWith('guard isRetryable has no text'))).to.equal(true);
      expect(() => committedModel(docs)).to.throw(IncompleteTexts);
    });

    it('a threshold that is not in the configuration', () => {
      const docs = payoutVariant((c) => ({
        ...c,
        states: {
          ...c.states,
          SUCCESSFUL: { ...c.states['SUCCESSFUL'], description: 'Paid within {PAY_SLA_MS}.' },
        },
      }));
      expectRefused(
        docs,
        'payout: state SUCCESSFUL names {PAY_SLA_MS}, which is neither a configuration variable nor a known constant',
      );
    });

    it('a link to an event the other machine does not handle', () => {
      const docs = payoutVariant((c) => ({
        ...c,
        states: {
          ...c.states,
          EXPIRED: {
            ...c.states['EXPIRED'],
            type: 'atomic',
            on: {
              REOPEN: {
                target: 'CREATED',
                description: 'Reopened.',
                meta: { by: ['OPERATOR'], causes: [{ machine: 'refund', event: 'REOPEN' }] },
              },
            },
          },
        },
      }));
      expect(
        problemsOf(docs).some((p) =>
          p.endsWith('names event REOPEN of refund, which that machine does not handle'),
        ),
      ).to.equal(true);
    });
  });

  it('shows the thresholds of the running service on /docs/machines', async () => {
    const app = new Koa().use(docsRoutes({ ...defaults, DISPATCH_MAX_ATTEMPTS: 7 }));
    const server = app.listen(0, '127.0.0.1');
    try {
      await new Promise((resolve) => server.once('listening', resolve));
      const { port } = server.address() as AddressInfo;
      const html = await (await fetch(`http://127.0.0.1:${port}/docs/machines`)).text();
      expect(html).to.include('fewer than <code>DISPATCH_MAX_ATTEMPTS</code> = 7 attempts have been made');
      expect(html).to.not.include('<code>DISPATCH_MAX_ATTEMPTS</code> = 3');
    } finally {
      server.close();
    }
  });
});
