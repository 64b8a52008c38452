#!/usr/bin/env node
// The team console's two largest pages, rendered in Chromium (issue 41): the members page with
// MEMBERS (1,000) members and the audit log with EVENTS (100,000) events in the organization.
// A backend and its Next.js frontend as `authstrap setup --frontend` writes them (the CLI built in
// this repository), on a throwaway PostgreSQL database; the frontend built (`next build`) and
// started (`next start`); the people and events written with SQL (bench/lib/harness.mjs). Debian's
// Chromium (playwright-core), signed in as the organization's owner, loads each page ROUNDS (10)
// times (after one unmeasured load):
//
//   members     /settings/members      navigation start until the table shows its first 50 rows
//   audit-log   /settings/audit-log    until the table shows its first page and the chart its days
//
// p50 and p95 in ms, and the page's own data requests as the browser timed them (the slowest
// `fetch` of each load, PerformanceResourceTiming).
//
//   npm run bootstrap   # builds the CLI
//   apt-get install -y chromium
//   node bench/console-render.mjs
//
// Settings: BENCH_PG_URL, MEMBERS, EVENTS, ROUNDS, KEEP (keep the written projects; prints where).
// Takes about 5 minutes, most of it `npm install` and `next build`. Writes bench/results/console-render.json.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, insertAuditEvents, queryAsOwner, repoDir, throwawayDatabase } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'console-render.json');
const memberCount = Number(process.env.MEMBERS ?? 1000);
const eventCount = Number(process.env.EVENTS ?? 100_000);
const rounds = Number(process.env.ROUNDS ?? 10);
const chromiumPath = '/usr/bin/chromium';
const cli = path.join(repoDir, 'packages', 'cli', 'dist', 'cli.js');
const { chromium } = createRequire(path.join(repoDir, 'packages', 'cli', 'package.json'))('playwright-core');
const percentile = (values, p) => values.slice().sort((x, y) => x - y)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))];

if (!fs.existsSync(chromiumPath)) throw new Error(`${chromiumPath} is missing: apt-get install -y chromium`);
if (!fs.existsSync(cli)) throw new Error(`${cli} is missing: npm run bootstrap builds the CLI`);

/** `npm start` in `dir`, resolved once `url` answers; `stop()` ends its process group. */
async function start(dir, url) {
  const child = spawn('npm', ['start'], { cwd: dir, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const stop = () => {
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      // already gone
    }
  };
  for (let attempt = 0; attempt < 240; attempt++) {
    if (child.exitCode !== null) break;
    const answered = await fetch(url).then((response) => response.status < 500, () => false);
    if (answered) return { stop };
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  stop();
  throw new Error(`npm start in ${dir} did not answer ${url}:\n${output.slice(-2000)}`);
}

const database = await throwawayDatabase('render');
const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-render-'));
const started = [];
let browser;
try {
  const backendPort = await freePort();
  const frontendPort = await freePort();
  console.log(`writing a backend and a frontend into ${workspace} (authstrap setup --frontend, npm install, next build) ...`);
  execFileSync(
    process.execPath,
    [cli, 'setup', '--yes', '--db', 'postgres', '--database-url', database.url, '--project-name', 'render', '--frontend', '--backend-port', String(backendPort), '--frontend-port', String(frontendPort), '--no-start'],
    { cwd: workspace, stdio: ['ignore', 'ignore', 'inherit'], timeout: 900_000 },
  );
  const backendDir = path.join(workspace, 'render');
  const frontendDir = path.join(workspace, 'render-web');
  execFileSync('npm', ['run', 'build'], { cwd: backendDir, stdio: 'ignore', timeout: 300_000 });
  execFileSync('npm', ['run', 'build'], { cwd: frontendDir, stdio: 'ignore', timeout: 600_000 });
  started.push(await start(backendDir, `http://localhost:${backendPort}/ready`));
  started.push(await start(frontendDir, `http://localhost:${frontendPort}/sign-in`));
  const app = (route) => `http://localhost:${frontendPort}${route}`;

  browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
  const page = await (await browser.newContext()).newPage();
  await page.goto(app('/sign-up'));
  await page.getByLabel('Name').fill('Olivia Owner');
  await page.getByLabel('E-mail').fill('owner@example.com');
  await page.getByLabel('Password').fill('correct horse battery');
  await page.getByRole('button', { name: 'Sign up' }).click();
  await page.waitForURL(app('/projects'));
  const organizationId = await page.evaluate(() => localStorage.getItem('authstrap.organizationId'));
  const ownerId = (await queryAsOwner(database.url, `SELECT "id" FROM "User" WHERE "email" = 'owner@example.com'`)).rows[0].id;

  // The owner and memberCount - 1 more people; eventCount events of the organization, as many of another.
  await queryAsOwner(
    database.url,
    `WITH "people" AS (
       INSERT INTO "User" ("email", "name") SELECT 'member' || n || '@example.com', 'Member ' || n FROM generate_series(1, $2 - 1) n RETURNING "id"
     )
     INSERT INTO "member" ("organizationId", "userId", "role") SELECT $1, "id", 'member' FROM "people"`,
    [organizationId, memberCount],
  );
  await insertAuditEvents(database.url, organizationId, ownerId, eventCount);
  await insertAuditEvents(database.url, crypto.randomUUID(), crypto.randomUUID(), eventCount);
  await queryAsOwner(database.url, 'VACUUM ANALYZE "authstrap_event", "User", "member"');

  const pages = {
    members: { route: '/settings/members', shown: () => page.locator('tbody tr').nth(49).waitFor({ timeout: 30_000 }) },
    'audit-log': {
      route: '/settings/audit-log',
      shown: async () => {
        await page.locator('tbody tr').nth(24).waitFor({ timeout: 30_000 });
        await page.locator('figure svg[role="img"] rect').first().waitFor({ timeout: 30_000 });
      },
    },
  };
  const results = { when: new Date().toISOString(), members: memberCount, events: eventCount, rounds, pages: {} };
  for (const [name, { route, shown }] of Object.entries(pages)) {
    const times = [];
    const slowestRequests = [];
    for (let round = 0; round <= rounds; round++) {
      await page.goto(app(route), { waitUntil: 'commit' });
      await shown();
      const { loadedMs, slowestRequestMs } = await page.evaluate(() => {
        const requests = performance.getEntriesByType('resource').filter((entry) => entry.initiatorType === 'fetch');
        return { loadedMs: performance.now(), slowestRequestMs: Math.max(0, ...requests.map((entry) => entry.duration)) };
      });
      if (round === 0) continue; // the first load compiles nothing in `next start`, but warms the backend's statements
      times.push(loadedMs);
      slowestRequests.push(slowestRequestMs);
    }
    const round1 = (value) => Math.round(value);
    results.pages[name] = {
      route,
      shownMs: { p50: round1(percentile(times, 50)), p95: round1(percentile(times, 95)) },
      slowestDataRequestMs: { p50: round1(percentile(slowestRequests, 50)), p95: round1(percentile(slowestRequests, 95)) },
    };
    console.log(`${name.padEnd(10)} shown p50 ${results.pages[name].shownMs.p50} ms, p95 ${results.pages[name].shownMs.p95} ms; its slowest data request p50 ${results.pages[name].slowestDataRequestMs.p50} ms, p95 ${results.pages[name].slowestDataRequestMs.p95} ms`);
  }
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`written to ${path.relative(process.cwd(), resultsFile)}`);
} finally {
  await browser?.close();
  for (const project of started.reverse()) project.stop();
  await new Promise((resolve) => setTimeout(resolve, 2000));
  await database.drop();
  if (process.env.KEEP) console.log(`kept ${workspace}`);
  else fs.rmSync(workspace, { recursive: true, force: true });
}
