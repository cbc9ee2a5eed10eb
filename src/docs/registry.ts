import type { AnyStateMachine } from 'xstate';
import { approvalMachine, approvalTexts } from '#machines/approval.machine.ts';
import { inflowMachine, inflowTexts } from '#machines/inflow.machine.ts';
import { outflowMachine, outflowTexts } from '#machines/outflow.machine.ts';
import { paymentInstructionMachine, paymentInstructionTexts } from '#machines/payment-instruction.machine.ts';
import { payoutMachine, payoutTexts } from '#machines/payout.machine.ts';
import { quoteMachine, quoteTexts } from '#machines/quote.machine.ts';
import { reconBreakMachine, reconBreakTexts } from '#machines/recon-break.machine.ts';
import { refundMachine, refundTexts } from '#machines/refund.machine.ts';
import type { MachineTexts } from '#machines/texts.ts';
import { webhookDeliveryMachine, webhookDeliveryTexts } from '#machines/webhook-delivery.machine.ts';

/**
 * One machine to document: `name` is its file's stem in `machines/` and the stem of its generated
 * files; `texts` are the plain-language texts its file exports beside it (`machines/texts.ts`).
 */
export interface MachineDoc {
  name: string;
  machine: AnyStateMachine;
  texts: MachineTexts<AnyStateMachine>;
}

/** A machine with its own texts: the type checker refuses another machine's. */
function entry<M extends AnyStateMachine>(name: string, machine: M, texts: MachineTexts<M>): MachineDoc {
  return { name, machine, texts: texts as MachineTexts<AnyStateMachine> };
}

/**
 * Every machine the service runs, in the order the pages list them. A new machine is one line
 * here; the docs test fails while a `machines/*.machine.ts` file is missing from this list.
 */
export const MACHINE_DOCS: readonly MachineDoc[] = [
  entry('payout', payoutMachine, payoutTexts),
  entry('payment-instruction', paymentInstructionMachine, paymentInstructionTexts),
  entry('inflow', inflowMachine, inflowTexts),
  entry('quote', quoteMachine, quoteTexts),
  entry('outflow', outflowMachine, outflowTexts),
  entry('refund', refundMachine, refundTexts),
  entry('webhook-delivery', webhookDeliveryMachine, webhookDeliveryTexts),
  entry('approval', approvalMachine, approvalTexts),
  entry('recon-break', reconBreakMachine, reconBreakTexts),
];
