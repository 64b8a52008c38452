/**
 * Whether two kinds of request take about the same time, so that the time of an answer tells
 * nobody whether an address has an account.
 *
 * Measured one of each kind a round, the order alternating, so that what the machine is doing at
 * that moment slows both alike. What counts is the gap between the kinds' lower quartiles: work
 * one kind does and the other does not is in its fastest answers too, while the suite's other
 * files (side by side on two cores) mostly add slow answers at random. Under that load the median
 * of the paired differences swung by 45 ms either way on the same code (15 rounds at a load of
 * 10); the lower quartiles' gap stayed within 4 ms. A gap past the bound is still measured again,
 * up to `attempts` times, and the smallest is returned: a real difference is there in every
 * attempt, where a busy stretch is not.
 */
export async function timingGapMs(
  { rounds, attempts, boundMs }: { rounds: number; attempts: number; boundMs: number },
  kinds: {
    /** Work for the round that is timed for neither kind (a fresh organization, say). */
    prepare?: (round: number) => Promise<void>;
    a: (round: number) => Promise<unknown>;
    b: (round: number) => Promise<unknown>;
  },
): Promise<{ smallest: number; gaps: number[] }> {
  const gaps: number[] = [];
  let round = 0;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const times: { a: number[]; b: number[] } = { a: [], b: [] };
    for (let i = 0; i < rounds; i++, round++) {
      await kinds.prepare?.(round);
      const took = { a: 0, b: 0 };
      for (const kind of round % 2 === 0 ? (['a', 'b'] as const) : (['b', 'a'] as const)) {
        took[kind] = await timedMs(() => kinds[kind](round));
      }
      times.a.push(took.a);
      times.b.push(took.b);
    }
    gaps.push(lowerQuartile(times.a) - lowerQuartile(times.b));
    if (Math.abs(gaps.at(-1)!) < boundMs) break;
  }
  return { smallest: Math.min(...gaps.map(Math.abs)), gaps };
}

/** Milliseconds `work` took. */
async function timedMs(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

function lowerQuartile(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 4)]!;
}
