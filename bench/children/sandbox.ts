/**
 * The sandbox providers (rates, directory, chains, bank) in a process of their own, so that the
 * provider calls the workers make cost the service what a remote provider would: a round trip,
 * not a share of its event loop. Blocks are mined only on request; callbacks go out at once.
 */
import { Corridors } from '#src/corridors/corridors.ts';
import { systemClock } from '#src/lib/clock.ts';
import { createLogger } from '#src/lib/log.ts';
import { startSandbox } from '#src/sandbox/server.ts';
import { onStop, readChildOptions, sendToParent } from '../lib/ipc.ts';
import { paidOutflows } from '../lib/recon-outflows.ts';

export interface SandboxChildOptions {
  callbackSecret: string;
  /** The processor's payouts paid on a past day (the reconciliation scenario's outflows), recorded before it listens. */
  paidOutflows?: { day: string; rows: number };
}

const options = readChildOptions<SandboxChildOptions>();
const sandbox = await startSandbox({
  corridors: Corridors.load(),
  clock: systemClock,
  log: createLogger({ level: 'silent' }),
  port: 0,
  blockIntervalMs: 0,
  callbackDelayMs: 0,
  callbackSecret: options.callbackSecret,
});
if (options.paidOutflows) {
  sandbox.processor.recordPaid(paidOutflows(options.paidOutflows.day, options.paidOutflows.rows));
}
onStop(() => sandbox.close());
sendToParent({ type: 'ready', url: sandbox.url });
