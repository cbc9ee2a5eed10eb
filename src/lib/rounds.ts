/**
 * Runs `round` again and again, each time on a batch of at most `batch` items it claims itself,
 * until one comes back short (nothing more is left, or what is left is another instance's) or
 * `maxRounds` ran; the next pass carries on from there. `round` returns how many items it took.
 * Returns how many were taken in all.
 */
export async function inRounds(
  limits: { batch: number; maxRounds: number },
  round: () => Promise<number>,
): Promise<number> {
  let taken = 0;
  for (let n = 0; n < limits.maxRounds; n++) {
    const count = await round();
    taken += count;
    if (count < limits.batch) break;
  }
  return taken;
}
