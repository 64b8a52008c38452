/**
 * Whether two kinds of request take about the same time, so that the time of an answer tells
 * nobody whether an address has an account.
 *
 * Measured in pairs, one of each kind a round, the order alternating, so that what the machine is
 * doing at that moment slows both alike; the median of the differences is what counts. The suite
 * runs its files side by side on two cores, and a busy stretch can still leave one kind slower in
 * most pairs of ten. So a median past the bound is measured again, up to `attempts` times, and the
 * smallest one is returned: a real difference (one kind doing work the other does not) is there in
 * every attempt, where a busy stretch is not.
 */
export async function medianGapMs(
  { rounds, attempts, boundMs }: { rounds: number; attempts: number; boundMs: number },
  kinds: {
    /** Work for the round that is timed for neither kind (a fresh organization, say). */
    prepare?: (round: number) => Promise<void>;
    a: (round: number) => Promise<unknown>;
    b: (round: number) => Promise<unknown>;
  },
): Promise<{ smallest: number; medians: number[] }> {
  const medians: number[] = [];
  let round = 0;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const differences: number[] = [];
    for (let i = 0; i < rounds; i++, round++) {
      await kinds.prepare?.(round);
      const took = { a: 0, b: 0 };
      for (const kind of round % 2 === 0 ? (['a', 'b'] as const) : (['b', 'a'] as const)) {
        took[kind] = await timedMs(() => kinds[kind](round));
      }
      differences.push(took.a - took.b);
    }
    medians.push(median(differences));
    if (Math.abs(medians.at(-1)!) < boundMs) break;
  }
  return { smallest: Math.min(...medians.map(Math.abs)), medians };
}

/** Milliseconds `work` took. */
async function timedMs(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
}
