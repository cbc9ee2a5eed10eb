import { readdirSync } from 'node:fs';
import { JOB_NAMES } from '#src/config.ts';
import { type BenchContext, startService } from '../lib/context.ts';
import { resetWork } from '../lib/db.ts';
import { round } from '../lib/report.ts';

/** When the measurement is taken, counted from the start of the process. */
const AT_S = 75;

/**
 * An idle instance with every job: the HTTP service and one worker thread per job, on the
 * bench database with nothing to do (emptied first: a scenario before this one leaves work
 * behind, the console's queues of overdue items among it, which the jobs would take up). Measured
 * {@link AT_S} s after it was started, or once every job runs if that takes longer: the
 * process's resident memory and its threads (from /proc).
 */
export async function idleMemoryScenario(ctx: BenchContext): Promise<void> {
  const { results } = ctx;
  await resetWork(ctx.pool);
  const started = performance.now();
  const service = await startService(ctx, { jobs: [...JOB_NAMES], readyTimeoutMs: 180_000 });
  try {
    const readyS = (performance.now() - started) / 1000;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, AT_S - readyS) * 1000));
    const { rssMb } = service.memory();
    const threads = readdirSync(`/proc/${service.pid}/task`).length;
    const jobs = `all ${JOB_NAMES.length} (idle)`;
    const scenario = 'idle memory';
    results.add({ scenario, metric: 'start until every job runs', value: round(readyS, 1), unit: 's', jobs });
    results.add({
      scenario,
      metric: `resident memory ${AT_S} s after start`,
      value: rssMb,
      unit: 'MB',
      jobs,
      target: '≤ 300 MB',
      pass: rssMb <= 300,
    });
    results.add({ scenario, metric: 'threads', value: threads, unit: '', jobs });
  } finally {
    await service.stop();
  }
}
