// Speeds of a few variants of the example (settings, or what stands between it and PostgreSQL)
// under (a)'s list load, measured in turns so that the machine's drift falls on all alike: each
// round starts each variant afresh, warms it up and loads it, the order reversed every other round
// (A B C, C B A, A B C, ...). Used by bench/observability.mjs and bench/pgbouncer.mjs.
import { cpuTicks, listLoadArgs, postgresCpuTicks, runWrk, stopChild } from './harness.mjs';

/** The rounds and the load's length, from BENCH_ROUNDS (3), BENCH_WARMUP_SECONDS (3) and BENCH_DURATION_SECONDS (8). */
export const roundSettings = () => ({
  rounds: Number(process.env.BENCH_ROUNDS ?? 3),
  warmupSeconds: Number(process.env.BENCH_WARMUP_SECONDS ?? 3),
  seconds: Number(process.env.BENCH_DURATION_SECONDS ?? 8),
});

/** The middle value (of an even count, the mean of the two middle ones). */
const median = (values) => {
  const sorted = values.slice().sort((x, y) => x - y);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

/**
 * `variants`: [{ name, start(): Promise<{ base, child }>, extraPids?(): number[] }]; every variant
 * must answer the list with the same body as the first. `seed` is what the load sends (the
 * session token and the organization). Resolves each variant's runs and their medians: rps, p50,
 * p99, and CPU per request of the backend, of PostgreSQL (every `postgres` process on the machine)
 * and of the variant's extra processes (PgBouncer); and `againstFirst`, each other variant's
 * median over the rounds of its ratio to the first variant of the same round.
 */
export async function alternate(variants, { seed, rounds, warmupSeconds, seconds }) {
  const runs = Object.fromEntries(variants.map((variant) => [variant.name, []]));
  let reference;
  for (let round = 0; round < rounds; round += 1) {
    for (const variant of round % 2 === 0 ? variants : [...variants].reverse()) {
      const { base, child } = await variant.start();
      try {
        const body = await (await fetch(`${base}/Projects?limit=20`, { headers: { authorization: `Bearer ${seed.token}`, 'x-organization-id': seed.organizationId } })).text();
        reference ??= body;
        if (body !== reference) throw new Error(`${variant.name} answers the list differently:\n${body.slice(0, 300)}\n${reference.slice(0, 300)}`);
        const args = listLoadArgs(base, seed);
        await runWrk(['-d', `${warmupSeconds}s`, ...args], warmupSeconds);
        const pids = [child.pid, ...(variant.extraPids?.() ?? [])];
        const before = pids.map(cpuTicks);
        const postgresBefore = postgresCpuTicks();
        const result = await runWrk(['-d', `${seconds}s`, ...args], seconds);
        const postgres = ((postgresCpuTicks() - postgresBefore) * 10_000) / result.requests;
        const [node, ...extra] = pids.map((pid, index) => ((cpuTicks(pid) - before[index]) * 10_000) / result.requests);
        const run = {
          rps: Math.round(result.rps),
          p50Ms: result.latencyUs.p50 / 1000,
          p99Ms: result.latencyUs.p99 / 1000,
          nodeCpuUsPerRequest: Math.round(node),
          postgresCpuUsPerRequest: Math.round(postgres),
          extraCpuUsPerRequest: Math.round(extra.reduce((sum, value) => sum + value, 0)),
          requests: result.requests,
        };
        runs[variant.name].push(run);
        console.log(`[bench] round ${round + 1} ${variant.name}: ${run.rps} rps, p50 ${run.p50Ms} ms, p99 ${run.p99Ms} ms, Node ${run.nodeCpuUsPerRequest} µs/request, PostgreSQL ${run.postgresCpuUsPerRequest} µs/request${run.extraCpuUsPerRequest ? `, others ${run.extraCpuUsPerRequest} µs/request` : ''}`);
        await variant.afterRun?.({ base, run });
      } finally {
        await stopChild(child);
      }
    }
  }
  const medians = Object.fromEntries(
    Object.entries(runs).map(([name, list]) => [
      name,
      Object.fromEntries(['rps', 'p50Ms', 'p99Ms', 'nodeCpuUsPerRequest', 'postgresCpuUsPerRequest', 'extraCpuUsPerRequest'].map((key) => [key, median(list.map((run) => run[key]))])),
    ]),
  );
  // Each round measures every variant within a minute or so: against the first variant of the same
  // round, a variant's rate and CPU suffer the machine's drift much less than across rounds.
  const first = variants[0].name;
  const againstFirst = Object.fromEntries(
    variants.slice(1).map(({ name }) => [
      name,
      Object.fromEntries(['rps', 'nodeCpuUsPerRequest', 'postgresCpuUsPerRequest'].map((key) => [key, median(runs[name].map((run, round) => run[key] / runs[first][round][key]))])),
    ]),
  );
  return { runs, medians, againstFirst };
}
