// Speeds of a few variants of the example (settings, or what stands between it and PostgreSQL, or
// the Node it runs on) under (a)'s list load or the write, measured in turns so that the machine's
// drift falls on all alike: each round starts each variant afresh, warms it up and loads it, the
// order reversed every other round (A B C, C B A, A B C, ...). Used by bench/observability.mjs,
// bench/pgbouncer.mjs and bench/node-lines.mjs.
import { fileURLToPath } from 'node:url';
import { cpuTicks, listLoadArgs, postgresCpuTicks, runWrk, stopChild, writeLoadArgs } from './harness.mjs';

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
 * median over the rounds of its ratio to the first variant of the same round. `load` is 'list'
 * (the default) or 'write' (POST /Projects, each request a new project: the list then changes from
 * one variant to the next, so only its status is checked).
 */
export async function alternate(variants, { seed, rounds, warmupSeconds, seconds, load = 'list' }) {
  const runs = Object.fromEntries(variants.map((variant) => [variant.name, []]));
  // wrk-create.lua reports through wrk-report.lua, which it is told the path of.
  const wrkEnv = { ...process.env, BENCH_REPORT_LUA: fileURLToPath(new URL('../wrk-report.lua', import.meta.url)) };
  let reference;
  for (let round = 0; round < rounds; round += 1) {
    for (const variant of round % 2 === 0 ? variants : [...variants].reverse()) {
      const { base, child } = await variant.start();
      try {
        const answer = await fetch(`${base}/Projects?limit=20`, { headers: { authorization: `Bearer ${seed.token}`, 'x-organization-id': seed.organizationId } });
        const body = await answer.text();
        if (answer.status !== 200) throw new Error(`${variant.name} answers the list with ${answer.status}: ${body.slice(0, 300)}`);
        reference ??= body;
        if (load === 'list' && body !== reference) throw new Error(`${variant.name} answers the list differently:\n${body.slice(0, 300)}\n${reference.slice(0, 300)}`);
        const args = load === 'write' ? writeLoadArgs(base, seed) : listLoadArgs(base, seed);
        await runWrk(['-d', `${warmupSeconds}s`, ...args], warmupSeconds, wrkEnv);
        const pids = [child.pid, ...(variant.extraPids?.() ?? [])];
        const before = pids.map(cpuTicks);
        const postgresBefore = postgresCpuTicks();
        const result = await runWrk(['-d', `${seconds}s`, ...args], seconds, wrkEnv);
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
