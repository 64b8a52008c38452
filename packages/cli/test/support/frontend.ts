import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { startMailbox, type Mailbox } from '../../../../examples/saas-backend/test/support/mailbox.js';
import { tempDir } from './cli.js';
import { freePort, runCliProcess, startWithNpm, userEnv, type StartedProject } from './setup.js';

/** Debian's Chromium: the browser tests never download one. */
export const chromiumPath = process.env.AUTHSTRAP_CHROMIUM ?? '/usr/bin/chromium';

/** A backend and its Next.js app as `setup --frontend` writes them, built and started, with a browser. */
export interface GeneratedApp {
  workspace: string;
  backendPort: number;
  frontendPort: number;
  mailbox: Mailbox;
  browser: Browser;
  /** The app's address of a route: `app('/sign-in')`. */
  app(route?: string): string;
  /** The backend's address of a route. */
  api(route: string): string;
  /** Stops the backend, runs `work` (a command that needs the embedded database to itself), and starts it again. */
  whileBackendStopped(work: () => void | Promise<void>): Promise<void>;
  close(): Promise<void>;
}

/**
 * `authstrap setup --frontend` in a new folder (`<name>` and `<name>-web`, both installed), the app
 * built for production (which type-checks it), the backend's mail sent to a real SMTP server on
 * loopback, both started as `npm start` does, and Chromium launched. `backendEnv` goes into the
 * backend's .env too (WEBHOOKS_ALLOW_PRIVATE for a receiver on loopback).
 */
export async function startGeneratedApp(name: string, backendEnv: Record<string, string> = {}): Promise<GeneratedApp> {
  if (!fs.existsSync(chromiumPath)) throw new Error(`${chromiumPath} is missing: apt-get install chromium (.ci/run does)`);
  const workspace = tempDir(`authstrap-${name}-`);
  const backendPort = await freePort();
  // A free port is released before it is used, so the second may be the first again: ask until it differs.
  let frontendPort = await freePort();
  for (let tries = 0; frontendPort === backendPort && tries < 10; tries++) frontendPort = await freePort();
  const setup = runCliProcess(
    ['setup', '--yes', '--db', 'embedded', '--project-name', name, '--frontend', '--backend-port', String(backendPort), '--frontend-port', String(frontendPort)],
    { cwd: workspace, timeoutMs: 480_000 },
  );
  expect(setup.status, setup.output).toBe(0);
  expect(setup.output).toContain('Write the frontend');
  execFileSync('npm', ['run', 'build'], { cwd: path.join(workspace, `${name}-web`), env: userEnv(), stdio: 'pipe', timeout: 300_000 });
  const mailbox = await startMailbox();
  const extraEnv = Object.entries({ SMTP_URL: mailbox.url, ...backendEnv }).map(([key, value]) => `${key}=${value}\n`);
  fs.appendFileSync(path.join(workspace, name, '.env'), `\n${extraEnv.join('')}`);
  const started: StartedProject[] = [];
  let browser: Browser | undefined;
  const close = async () => {
    await browser?.close();
    for (const project of started.reverse()) await project.stop();
    await mailbox.close();
    fs.rmSync(workspace, { recursive: true, force: true });
  };
  try {
    started.push(await startWithNpm(path.join(workspace, name), backendPort));
    started.push(await startWithNpm(path.join(workspace, `${name}-web`), frontendPort, 60_000, '/sign-in'));
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
  return {
    workspace,
    backendPort,
    frontendPort,
    mailbox,
    browser,
    app: (route = '/') => `http://localhost:${frontendPort}${route}`,
    api: (route) => `http://localhost:${backendPort}${route}`,
    async whileBackendStopped(work) {
      const [backend] = started.splice(0, 1);
      await backend!.stop();
      try {
        await work();
      } finally {
        started.unshift(await startWithNpm(path.join(workspace, name), backendPort));
      }
    },
    close,
  };
}

/** Signs up through the app's form; the app opens on the data page. */
export async function signUpThroughPage(page: Page, app: (route?: string) => string, name: string, email: string, password = 'correct horse battery') {
  await page.goto(app('/sign-up'));
  await page.getByLabel('Name').fill(name);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign up' }).click();
  await page.waitForURL(app('/projects'));
}

const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's verdict on the page as it is now: no serious or critical violation. */
export async function expectAccessible(page: Page, name: string) {
  await page.addScriptTag({ content: axeSource });
  const violations = await page.evaluate(async () => {
    const result = await (window as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; help: string; nodes: { target: unknown }[] }[] }> } }).axe.run();
    return result.violations.map((violation) => ({ id: violation.id, impact: violation.impact, help: violation.help, targets: violation.nodes.map((node) => node.target) }));
  });
  expect(violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical'), name).toEqual([]);
}

/** A full-page screenshot for the docs (`folder/name.png`), and axe-core's verdict on the page. */
export async function shootAndCheck(page: Page, folder: string, name: string) {
  await page.screenshot({ path: path.join(folder, `${name}.png`), fullPage: true });
  await expectAccessible(page, name);
}
