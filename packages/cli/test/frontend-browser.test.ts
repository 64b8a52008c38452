import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Mailbox } from '../../../examples/saas-backend/test/support/mailbox.js';
import { repoRoot } from './support/cli.js';
import { signUpThroughPage, startGeneratedApp, type GeneratedApp } from './support/frontend.js';
import { runCliProcess } from './support/setup.js';

/**
 * The whole product as a new user meets it: `authstrap setup --frontend` writes a backend and a
 * Next.js app, both installed; the app is built and both are started as `npm start` does; then
 * Debian's Chromium (never a downloaded browser) signs up, creates and lists records, switches
 * organization, signs out and in, and a second user sees none of the first one's records; then,
 * with the backend's mail going to a real SMTP server on loopback, confirms an address and resets
 * a forgotten password by following the links in the mail. Screenshots of each page go to
 * test-artifacts/frontend/.
 */

const screenshots = path.join(repoRoot, 'test-artifacts/frontend');

describe('a generated frontend against a generated backend, in Chromium', () => {
  let generated: GeneratedApp | undefined;
  let workspace: string;
  let backendPort: number;
  let frontendPort: number;
  let browser: Browser;
  let mailbox: Mailbox;
  const app = (route = '/') => `http://localhost:${frontendPort}${route}`;

  beforeAll(async () => {
    fs.mkdirSync(screenshots, { recursive: true });
    generated = await startGeneratedApp('shop');
    ({ workspace, backendPort, frontendPort, browser, mailbox } = generated);
  }, 900_000);

  afterAll(async () => {
    await generated?.close();
  }, 60_000);

  const shoot = (page: Page, name: string) => page.screenshot({ path: path.join(screenshots, `${name}.png`), fullPage: true });

  const signUp = (page: Page, name: string, email: string) => signUpThroughPage(page, app, name, email);

  /**
   * Signs in through the page. Better Auth lets three sign-ins from one address through in ten
   * seconds (and every browser here is one address), so a "Too many requests" is waited out, twice
   * at most.
   */
  async function signInThroughPage(page: Page, email: string, password: string) {
    for (let attempt = 1; ; attempt++) {
      await page.goto(app('/sign-in'));
      await page.getByLabel('E-mail').fill(email);
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      const limited = page.getByRole('alert').filter({ hasText: /too many requests/i });
      const outcome = await Promise.race([page.waitForURL(app('/projects')).then(() => 'in'), limited.waitFor().then(() => 'limited')]);
      if (outcome === 'in') return;
      if (attempt === 3) throw new Error('Better Auth kept answering "Too many requests"');
      await page.waitForTimeout(10_000);
    }
  }

  async function addProject(page: Page, name: string) {
    const form = page.getByRole('form', { name: 'New project' });
    await form.getByLabel('Name').fill(name);
    await form.getByRole('button', { name: 'Add' }).click();
    await expect.poll(() => page.getByRole('cell', { name, exact: true }).count()).toBe(1);
  }

  let adaOrganizations: string[] = [];
  /** The organizations the backend's own get-session lists for the page's cookie. */
  const organizationsSeenByBackend = (page: Page) =>
    page.evaluate(async (url) => {
      const body = await (await fetch(url, { credentials: 'include' })).json();
      return (body.data.organizations as { id: string }[]).map((organization) => organization.id);
    }, `http://localhost:${backendPort}/api/auth/get-session`);

  const projectNames = async (page: Page) => (await page.locator('tbody tr td:first-child').allTextContents()).sort();

  it('signs up, creates and lists records, switches organization, signs out and in again', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();

    await page.goto(app('/'));
    await expect.poll(() => page.getByRole('link', { name: 'create an account' }).count()).toBe(1);
    await shoot(page, '1-home');

    await page.goto(app('/sign-up'));
    await shoot(page, '2-sign-up');
    await signUp(page, 'Ada', 'ada@example.com');
    // The personal organization, chosen for her, with her as its owner.
    await expect.poll(() => page.getByLabel('Organization').locator('option:checked').textContent()).toContain('(owner)');
    await expect.poll(() => page.getByText('No projects in').count()).toBe(1);

    await addProject(page, 'Apollo');
    await addProject(page, 'Gemini');
    expect(await projectNames(page)).toEqual(['Apollo', 'Gemini']);
    await expect.poll(() => page.getByText('2 in all').count()).toBe(1);
    await shoot(page, '3-projects');
    // At a phone's width each row is a card: its Edit and Delete in sight, nothing scrolls sideways.
    const laptop = page.viewportSize()!;
    await page.setViewportSize({ width: 390, height: 844 });
    for (const button of ['Edit Apollo', 'Delete Apollo']) {
      const box = (await page.getByRole('button', { name: button }).boundingBox())!;
      expect(box.x, button).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width, button).toBeLessThanOrEqual(390);
    }
    expect(await page.locator('.table-wrap').evaluate((wrap) => wrap.scrollWidth <= wrap.clientWidth)).toBe(true);
    await shoot(page, '3-projects-phone');
    await page.setViewportSize(laptop);

    // A second organization: empty, then its own record; the first keeps its two.
    await page.getByLabel('Organization').selectOption('new');
    await page.getByLabel('New organization name').fill('Side Project Inc');
    await page.getByRole('button', { name: 'Create' }).click();
    await expect.poll(() => page.getByLabel('Organization').locator('option:checked').textContent()).toContain('Side Project Inc');
    await expect.poll(() => page.getByText('No projects in Side Project Inc yet').count()).toBe(1);
    await addProject(page, 'Mercury');
    expect(await projectNames(page)).toEqual(['Mercury']);
    await shoot(page, '4-second-organization');

    adaOrganizations = await organizationsSeenByBackend(page);
    const personal = await page.getByLabel('Organization').locator('option', { hasText: '(owner)' }).first().getAttribute('value');
    await page.getByLabel('Organization').selectOption(personal!);
    await expect.poll(() => projectNames(page)).toEqual(['Apollo', 'Gemini']);

    // A reload keeps the session and the organization.
    await page.reload();
    await expect.poll(() => projectNames(page)).toEqual(['Apollo', 'Gemini']);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(app('/sign-in'));
    await shoot(page, '5-signed-out');
    // Signed out, the data page sends you to sign in.
    await page.goto(app('/projects'));
    await page.waitForURL(app('/sign-in'));

    await page.getByLabel('E-mail').fill('ada@example.com');
    await page.getByLabel('Password').fill('wrong horse battery');
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Better Auth's message, shown in the form (Next's route announcer is an alert too: match the text).
    await expect.poll(() => page.getByRole('alert').filter({ hasText: /invalid email or password/i }).count()).toBe(1);
    await shoot(page, '6-wrong-password');

    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(app('/projects'));
    await expect.poll(() => projectNames(page)).toEqual(['Apollo', 'Gemini']);
    await context.close();
  }, 120_000);

  it("a second user sees none of the first one's records, in the page or through the API", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signUp(page, 'Bob', 'bob@example.com');
    await expect.poll(() => page.getByText('No projects in').count()).toBe(1);
    expect(await page.getByLabel('Organization').locator('option').allTextContents()).toEqual([expect.stringContaining('(owner)'), '+ New organization…']);
    await shoot(page, '7-second-user');

    // Bob's cookie against Ada's organizations, straight at the backend from his page: refused.
    expect(adaOrganizations).toHaveLength(2);
    for (const id of adaOrganizations) {
      const answer = await page.evaluate(
        async ({ url, id }) => {
          const response = await fetch(url, { credentials: 'include', headers: { 'x-organization-id': id } });
          return { status: response.status, body: await response.json() };
        },
        { url: `http://localhost:${backendPort}/Projects`, id },
      );
      expect(answer.status).toBe(403);
      expect(answer.body).toMatchObject({ success: false });
    }
    await context.close();
  }, 60_000);

  it('confirms the address and resets a forgotten password from the mail; the sessions from before are gone', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signUp(page, 'Cleo', 'cleo@example.com');

    // The sign-up mail (Better Auth's link, sent by the backend's outbox over SMTP) confirms the address.
    const confirmation = await mailbox.next('cleo@example.com', /Confirm your e-mail/, 30_000);
    expect(confirmation.link!.origin).toBe(app('').replace(/\/$/, ''));
    await page.goto(confirmation.link!.href);
    await page.waitForURL(/\/verify-email/);
    await expect.poll(() => page.getByRole('status').textContent()).toBe('Your e-mail address is confirmed.');
    await shoot(page, '8-address-confirmed');
    const seenByBackend = await page.evaluate(async (url) => (await (await fetch(url, { credentials: 'include' })).json()).data.user.email_verified, `http://localhost:${backendPort}/api/auth/get-session`);
    expect(seenByBackend).toBe(true);

    // The account page lists where she is signed in: another device, and this one.
    const phone = await browser.newContext();
    const phonePage = await phone.newPage();
    await signInThroughPage(phonePage, 'cleo@example.com', 'correct horse battery');
    await page.goto(app('/account'));
    await expect.poll(() => page.locator('tbody tr').count()).toBe(2);
    expect(await page.getByRole('cell', { name: 'this one' }).count()).toBe(1);
    await shoot(page, '9-account');

    // Forgot password: a link by mail, a new password, every session before it signed out.
    // This browser forgets its session (it stays valid at the backend until the reset).
    const before = (await context.cookies()).find((cookie) => cookie.name.endsWith('better-auth.session_token'))!;
    const sessionAtBackend = (cookie: { name: string; value: string }) =>
      fetch(`http://localhost:${backendPort}/api/auth/get-session`, { headers: { cookie: `${cookie.name}=${cookie.value}` } }).then((response) => response.status);
    expect(await sessionAtBackend(before)).toBe(200);
    await context.clearCookies();
    await page.goto(app('/sign-in'));
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await page.waitForURL(app('/forgot-password'));
    await page.getByLabel('E-mail').fill('cleo@example.com');
    await page.getByRole('button', { name: 'Send me a link' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('on its way');
    const reset = await mailbox.next('cleo@example.com', /Reset your password/, 30_000);
    await page.goto(reset.link!.href);
    await page.waitForURL(/\/reset-password\?token=/);
    await page.getByLabel('New password').fill('a brand new password');
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Your password is changed');
    await shoot(page, '10-password-reset');

    // The phone's session is gone, at the backend and in the app.
    const phoneAtBackend = await phonePage.evaluate(async (url) => (await fetch(url, { credentials: 'include' })).status, `http://localhost:${backendPort}/api/auth/get-session`);
    expect(phoneAtBackend).toBe(401);
    expect(await sessionAtBackend(before)).toBe(401);
    await phonePage.goto(app('/projects'));
    await phonePage.waitForURL(app('/sign-in'));

    // The new password signs in (the old one's refusal is the backend's tests').
    await signInThroughPage(page, 'cleo@example.com', 'a brand new password');

    // A password change through Better Auth's own endpoint ends the other sessions, the backend's
    // own included, even when the caller does not ask for it (a hook in lib/auth.ts).
    const backendSignIn = await fetch(`http://localhost:${backendPort}/api/auth/sign-in/email`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'cleo@example.com', password: 'a brand new password' }),
    });
    expect(backendSignIn.status).toBe(200);
    const backendToken: string = (await backendSignIn.json()).data.token;
    const bearerAtBackend = () => fetch(`http://localhost:${backendPort}/api/auth/get-session`, { headers: { authorization: `Bearer ${backendToken}` } }).then((response) => response.status);
    expect(await bearerAtBackend()).toBe(200);
    const changed = await page.evaluate(async () => {
      const response = await fetch('/api/auth/change-password', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ currentPassword: 'a brand new password', newPassword: 'the third password' }),
      });
      return response.status;
    });
    expect(changed).toBe(200);
    expect(await bearerAtBackend()).toBe(401);
    await page.goto(app('/projects'));
    await page.waitForURL(app('/projects'));
    await phone.close();
    await context.close();
  }, 180_000);

  it('verify --frontend signs up and in through the app, and the backend accepts its session', () => {
    const backendDir = path.join(workspace, 'shop');
    const verify = runCliProcess(['verify', '--frontend', app('')], { cwd: backendDir, timeoutMs: 120_000 });
    expect(verify.status, verify.output).toBe(0);
    expect(verify.output).toMatch(/✔ Frontend page loads/);
    expect(verify.output).toMatch(/✔ Sign-up through the frontend, session accepted by the backend/);
    expect(verify.output).toMatch(/✔ Sign-in through the frontend, session accepted by the backend/);

    // The same app on 127.0.0.1 while the backend is on localhost: works for a script, not for a browser.
    const mixed = runCliProcess(['verify', '--frontend', `http://127.0.0.1:${frontendPort}`], { cwd: backendDir, timeoutMs: 120_000 });
    expect(mixed.output).toMatch(/⚠ Frontend and backend on the same site .*different sites/);

    // Something that is not the frontend (the API itself): named, and verify fails.
    const wrong = runCliProcess(['verify', '--frontend', `http://localhost:${backendPort}`], { cwd: backendDir, timeoutMs: 120_000 });
    expect(wrong.status, wrong.output).toBe(1);
    expect(wrong.output).toMatch(/✘ Frontend page loads/);
  }, 300_000);
});
