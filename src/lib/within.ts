/** What {@link within} saw: the work's value, or that the time ran out first. */
export type Within<T> = { late: false; value: T } | { late: true };

/**
 * Waits for `work`, or `ms` at most. A rejection of `work` before the time runs out rejects; the
 * work itself goes on either way (nothing here can stop it). The timer never keeps the process up.
 */
export async function within<T>(work: Promise<T>, ms: number): Promise<Within<T>> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Within<T>>((resolve) => {
    timer = setTimeout(() => resolve({ late: true }), ms);
    timer.unref();
  });
  try {
    return await Promise.race([work.then((value): Within<T> => ({ late: false, value })), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
