#!/usr/bin/env node
// Mail through an SMTP outage with two instances: is every message the backend committed
// delivered, and none twice?
//   - two instances of the example (compiled, NODE_ENV=production) on one PostgreSQL database,
//     sending over SMTP to a real SMTP server on loopback (the smtp-server package);
//   - BENCH_MAIL_USERS users (default 200) sign up (a confirmation mail each) and ask for a password
//     reset (a second mail), alternating between the instances; the SMTP server goes away for
//     BENCH_MAIL_OUTAGE_MS (default 5000) and comes back on the same port, and one instance is
//     killed (SIGKILL) and another started in its place;
//   - the first third of the users with no fault (and the outbox drained after them), the rest
//     with the outage at its start and the kill halfway;
//   - then, once the outbox has nothing left to send: per outbox row, whether its Message-ID
//     arrived (lost: never; duplicated: more than once), and the time from the row's commit to its
//     arrival (p50, p99), for the first third (no fault) and for all.
//
//   node bench/mail-outage.mjs
//
// Needs PostgreSQL (BENCH_PG_URL) and `pnpm install` done. Writes bench/results/mail-outage.json.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { api, children, exampleDir, expectStatus, freePort, startExampleBackend, stopChild, throwawayDatabase } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'mail-outage.json');
const users = Number(process.env.BENCH_MAIL_USERS ?? 200);
const outageMs = Number(process.env.BENCH_MAIL_OUTAGE_MS ?? 5000);
const requireFromRoot = createRequire(path.join(benchDir, '..', 'package.json'));
const { SMTPServer } = requireFromRoot('smtp-server');
const pg = createRequire(path.join(exampleDir, 'package.json'))('pg');

/** Message-ID -> arrival times (ms since the epoch). */
const arrivals = new Map();
let smtp;
const smtpPort = await freePort();

function startSmtp() {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    closeTimeout: 100,
    // No reverse DNS of 127.0.0.1 before the greeting: without a network it waits for a timeout.
    disableReverseLookup: true,
    onData(stream, _session, callback) {
      let raw = '';
      stream.on('data', (chunk) => (raw += chunk.toString()));
      stream.on('end', () => {
        const id = /^Message-ID:\s*<([^@>]+)@/im.exec(raw)?.[1];
        if (id) arrivals.set(id, [...(arrivals.get(id) ?? []), Date.now()]);
        callback();
      });
    },
  });
  return new Promise((resolve) => smtp.listen(smtpPort, '127.0.0.1', resolve));
}
const stopSmtp = () => new Promise((resolve) => smtp.close(resolve));

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : null;
};

const database = await throwawayDatabase('mail');
const db = new pg.Client({ connectionString: database.url });
try {
  await startSmtp();
  const env = { SMTP_URL: `smtp://127.0.0.1:${smtpPort}`, SMTP_TIMEOUT_MS: '2000', OUTBOX_POLL_MS: '200', OUTBOX_RETRY_MS: '500', LOG_LEVEL: process.env.BENCH_MAIL_LOG_LEVEL ?? 'error' };
  const instances = [await startExampleBackend({ dbUrl: database.url, env }), await startExampleBackend({ dbUrl: database.url, env })];
  await db.connect();

  /** Waits until the outbox has nothing left to send (at most two minutes). */
  async function drained() {
    for (let waited = 0; waited < 120_000; waited += 250) {
      const { rows } = await db.query(`SELECT count(*)::int AS "left" FROM "authstrap_outbox" WHERE "status" <> 'sent'`);
      if (rows[0].left === 0) return;
      await sleep(250);
    }
  }

  const started = Date.now();
  // The first third without faults (the delivery time of a healthy system), then the rest with the
  // outage at its start and the kill halfway.
  const calm = Math.floor(users / 3);
  let outage = { from: Infinity };
  for (let i = 0; i < users; i++) {
    const { base } = instances[i % 2];
    const email = `mail-${i}@example.com`;
    await expectStatus(api(base, 'POST', '/api/auth/sign-up/email', { body: { email, name: `User ${i}`, password: 'correct horse battery' } }), 201, 'sign-up');
    await expectStatus(api(base, 'POST', '/api/auth/forgot-password', { body: { email } }), 200, 'forgot-password');
    if (i === calm - 1) {
      await drained();
      if (process.env.BENCH_MAIL_LOG_LEVEL) for (const { child } of instances) console.error(child.output.split('\n').slice(-15).join('\n'));
    }
    if (i === calm) {
      // The SMTP server goes away (connections cut), and comes back on the same port later.
      outage = { from: Date.now() };
      await stopSmtp();
      setTimeout(() => startSmtp().then(() => (outage.to = Date.now())), outageMs);
    }
    if (i === Math.floor(users / 2)) {
      // One instance dies mid-work, whatever it held; another takes its place.
      instances[1].child.kill('SIGKILL');
      await instances[1].child.exited;
      children.delete(instances[1].child);
      instances[1] = await startExampleBackend({ dbUrl: database.url, env });
    }
  }
  const requestsDone = Date.now();

  // Everything committed leaves.
  await drained();
  await sleep(1000);
  const { rows } = await db.query(`SELECT "id", "status", "attempts", "lastError", "createdAt" FROM "authstrap_outbox" WHERE "channel" = 'mail'`);
  const lost = rows.filter((row) => !arrivals.has(row.id)).length;
  const duplicated = rows.filter((row) => (arrivals.get(row.id)?.length ?? 0) > 1).length;
  const latency = (filter) => rows.filter((row) => arrivals.has(row.id) && filter(row)).map((row) => arrivals.get(row.id)[0] - new Date(row.createdAt).getTime());
  const beforeFaults = latency((row) => new Date(row.createdAt).getTime() < outage.from);
  const all = latency(() => true);
  const result = {
    measuredAt: new Date().toISOString(),
    users,
    messages: rows.length,
    notSent: rows.filter((row) => row.status !== 'sent').length,
    lost,
    duplicated,
    retried: rows.filter((row) => row.attempts > 1).length,
    retriedBeforeFaults: rows.filter((row) => row.attempts > 1 && new Date(row.createdAt).getTime() < outage.from).length,
    outageMs,
    requestsSeconds: (requestsDone - started) / 1000,
    commitToDeliveryMs: {
      beforeFaults: { p50: percentile(beforeFaults, 50), p99: percentile(beforeFaults, 99), count: beforeFaults.length },
      all: { p50: percentile(all, 50), p99: percentile(all, 99), max: Math.max(...all) },
    },
  };
  console.log(JSON.stringify(result, null, 2));
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify(result, null, 2)}\n`);
  if (lost > 0 || duplicated > 0 || result.notSent > 0) process.exitCode = 1;
} finally {
  for (const child of children) await stopChild(child);
  await db.end().catch(() => {});
  await stopSmtp().catch(() => {});
  await database.drop();
}
