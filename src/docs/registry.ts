import type { AnyStateMachine } from 'xstate';
import { outflowMachine } from '#machines/outflow.machine.ts';
import { paymentInstructionMachine } from '#machines/payment-instruction.machine.ts';
import { payoutMachine } from '#machines/payout.machine.ts';
import { quoteMachine } from '#machines/quote.machine.ts';
import { refundMachine } from '#machines/refund.machine.ts';
import { webhookDeliveryMachine } from '#machines/webhook-delivery.machine.ts';

/** One machine to document: `name` is its file's stem in `machines/` and the stem of its generated files. */
export interface MachineDoc {
  name: string;
  machine: AnyStateMachine;
  summary: string;
}

/**
 * Every machine the service runs, in the order the index lists them. A new machine is one line
 * here; the docs test fails while a `machines/*.machine.ts` file is missing from this list.
 */
// biome-ignore format: one line per machine keeps the list easy to scan and to extend
export const MACHINE_DOCS: readonly MachineDoc[] = [
  { name: 'payout', machine: payoutMachine, summary: 'The life of a payout, from creation to success, failure or expiry.' },
  { name: 'payment-instruction', machine: paymentInstructionMachine, summary: 'Whether what the merchant was asked to pay was paid in time.' },
  { name: 'quote', machine: quoteMachine, summary: 'A frozen price: accepted, used once by a payout, or expired.' },
  { name: 'outflow', machine: outflowMachine, summary: 'One dispatch attempt of a payout to the processor.' },
  { name: 'refund', machine: refundMachine, summary: "The refund of a failed payout's settlement to the merchant." },
  { name: 'webhook-delivery', machine: webhookDeliveryMachine, summary: 'One webhook event to one URL: attempts, retries with backoff, success or DEAD.' },
];
