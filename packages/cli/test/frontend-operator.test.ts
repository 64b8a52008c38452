import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from './support/cli.js';
import { shootAndCheck as shootAndCheckInto, signUpThroughPage, startGeneratedApp, type GeneratedApp } from './support/frontend.js';
import { runCliProcess } from './support/setup.js';

/**
 * The operator's pages of the app `setup --frontend` writes (/operator; issue 50), in Debian's
 * Chromium against a generated backend: a user who is no operator sees no Operator entry and is
 * told what /operator is for; an operator (granted from the command line) finds a user by address,
 * sees their organizations and failed sign-ins, bans them (their open page's live stream ends and a
 * reload signs them out; a sign-in through the backend and through Better Auth is refused, and both
 * refusals are on their page), lifts the ban (they sign in again); signs in as a member, sees the
 * banner on every page, changes a record as them, ends it and is the operator again, while the
 * organization's audit log shows the change as made by an operator signed in as that member. The
 * overview (where /operator opens) charts the day's sign-ups; an organization opened from the list
 * has its member's role changed (the only owner's refused, in the backend's words; the change still
 * there after a reload) and a machine key disabled (the backend refuses it) and enabled again. The
 * remaining buttons, last: a verification and a password-reset mail (read from the loopback SMTP
 * server), the operator role granted and revoked, Make owner, the platform's log downloaded as CSV,
 * and an organization and a user deleted with their slug and address typed (the other organization,
 * its members and its record still there). Every operator page passes axe-core (no serious or
 * critical violation), at a laptop's and a phone's width. The screenshots go to
 * docs/images/operator/, where docs/operator.md shows them.
 */

const screenshots = path.join(repoRoot, 'docs/images/operator');
const password = 'correct horse battery';

describe("the operator's pages in Chromium", () => {
  let generated: GeneratedApp | undefined;
  let browser: Browser;
  let operator: Page;
  let member: Page;
  let spammer: Page;
  const app = (route = '/') => generated!.app(route);
  const api = (route: string) => generated!.api(route);

  beforeAll(async () => {
    fs.mkdirSync(screenshots, { recursive: true });
    // With the default limits: the operators' routes count per session, as the data routes do, not from the /api budget of the address.
    generated = await startGeneratedApp('ops');
    ({ browser } = generated);
    operator = await (await browser.newContext()).newPage();
    member = await (await browser.newContext()).newPage();
    spammer = await (await browser.newContext()).newPage();
  }, 900_000);

  afterAll(async () => {
    await generated?.close();
  }, 60_000);

  /** A full-page screenshot for the docs, at a laptop's width, and axe-core's verdict on the page. */
  const shootAndCheck = (page: Page, name: string) => shootAndCheckInto(page, screenshots, name);

  const signUp = (page: Page, name: string, email: string) => signUpThroughPage(page, app, name, email, password);
  const status = (page: Page) => page.locator('main').getByRole('status').filter({ hasText: /\S/ });
  const header = (page: Page) => page.locator('header.top');
  const banner = (page: Page) => page.getByRole('region', { name: 'Signed in as a user' });

  /** A sign-in on the backend's own path (POST /api/auth/sign-in/email): its status. */
  const backendSignIn = (email: string, secret: string) =>
    fetch(api('/api/auth/sign-in/email'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: secret }) }).then((response) => response.status);

  /** Signs in through the app's form (Better Auth's path); a "Too many requests" (three a ten seconds from one address) is waited out. */
  async function signInThroughPage(page: Page, email: string): Promise<'in' | string> {
    for (let attempt = 1; ; attempt++) {
      await page.goto(app('/sign-in'));
      await page.getByLabel('E-mail').fill(email);
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      const alert = page.getByRole('alert').filter({ hasText: /\S/ });
      const outcome = await Promise.race([page.waitForURL(app('/projects')).then(() => 'in'), alert.waitFor().then(async () => (await alert.textContent())!)]);
      if (!/too many requests/i.test(outcome) || attempt === 3) return outcome;
      await page.waitForTimeout(10_000);
    }
  }

  /** The operator's search for one user by address, and their page opened: its id. */
  async function openUser(email: string): Promise<string> {
    await operator.goto(app('/operator/users'));
    await operator.getByRole('searchbox', { name: 'Search users' }).fill(email);
    await operator.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => operator.getByText(`1 user matches “${email}”.`).count()).toBe(1);
    await operator.getByRole('table', { name: 'Users' }).getByRole('link').click();
    await operator.waitForURL(/\/operator\/users\/[0-9a-f-]{36}$/);
    await expect.poll(() => operator.getByRole('heading', { level: 1 }).count()).toBe(1);
    return operator.url().split('/').pop()!;
  }

  /** From the Organizations page: the one organization the search finds (by a member's address, say), opened. */
  async function openOrganizationFound(search: string): Promise<void> {
    await operator.getByRole('searchbox', { name: 'Search organizations' }).fill(search);
    await operator.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => operator.getByRole('table', { name: 'Organizations' }).getByRole('row').count()).toBe(2);
    await operator.getByRole('table', { name: 'Organizations' }).getByRole('link').click();
    await operator.waitForURL(/\/operator\/organizations\/[0-9a-f-]{36}$/);
  }

  it('a user who is no operator sees no Operator entry, and /operator says it is for operators', async () => {
    await signUp(operator, 'Olga Operator', 'olga@example.com');
    await signUp(member, 'Mia Member', 'mia@example.com');
    await member.waitForTimeout(1000);
    expect(await header(member).getByRole('link', { name: 'Operator' }).count()).toBe(0);
    await member.goto(app('/operator/users'));
    await expect.poll(() => member.getByRole('heading', { name: 'These pages are for operators' }).count()).toBe(1);
    expect(await member.getByRole('navigation', { name: 'Operator' }).count()).toBe(0);
    await shootAndCheck(member, 'not-an-operator');

    // Granted from the command line, against the embedded database (which the backend holds while it runs).
    await generated!.whileBackendStopped(() => {
      const granted = runCliProcess(['operator', 'grant', 'olga@example.com'], { cwd: path.join(generated!.workspace, 'ops') });
      expect(granted.status, granted.output).toBe(0);
    });
    await operator.reload();
    await expect.poll(() => header(operator).getByRole('link', { name: 'Operator' }).count(), { timeout: 15_000 }).toBe(1);
    await member.reload();
    await member.waitForTimeout(1000);
    expect(await header(member).getByRole('link', { name: 'Operator' }).count()).toBe(0);
  }, 240_000);

  it('an operator finds a user by address, sees their organizations and failed sign-ins, bans them everywhere, sees the refused sign-ins, and lifts the ban', async () => {
    await signUp(spammer, 'Sam Spammer', 'sam@example.com');
    expect(await backendSignIn('sam@example.com', 'not the password')).toBe(401);
    await expect.poll(() => spammer.getByRole('status', { name: 'Live updates: on' }).count(), { timeout: 15_000 }).toBe(1);

    // The Operator entry opens the overview, the section's first page.
    await header(operator).getByRole('link', { name: 'Operator' }).click();
    await operator.waitForURL(app('/operator/overview'));
    await operator.getByRole('navigation', { name: 'Operator' }).getByRole('link', { name: 'Users' }).click();
    await operator.waitForURL(app('/operator/users'));
    await expect.poll(() => operator.getByRole('table', { name: 'Users' }).getByRole('row').count()).toBe(4);
    await shootAndCheck(operator, 'users');

    const samId = await openUser('sam@example.com');
    const organizations = operator.getByRole('table', { name: 'Organizations' });
    await expect.poll(() => organizations.getByRole('row').count()).toBe(2);
    expect(await organizations.getByRole('row').nth(1).textContent()).toContain('owner');
    const signIns = operator.getByRole('table', { name: 'Sign-ins' });
    expect(await signIns.getByRole('row').filter({ hasText: 'Failed' }).count()).toBe(1);
    expect(await operator.getByRole('table', { name: 'Sessions' }).getByRole('row').count()).toBeGreaterThan(1);
    await shootAndCheck(operator, 'user');

    // Banned: the address typed before the ban goes through.
    const ban = operator.getByRole('region', { name: 'Ban', exact: true });
    await ban.getByLabel(/^Reason/).fill('spam invitations');
    await ban.getByRole('button', { name: 'Ban Sam Spammer' }).click();
    const dialog = operator.getByRole('alertdialog');
    expect(await dialog.getByRole('button', { name: 'Ban' }).isDisabled()).toBe(true);
    await dialog.getByLabel('Type sam@example.com to confirm').fill('sam@example.com');
    await shootAndCheck(operator, 'ban-confirm');
    await dialog.getByRole('button', { name: 'Ban' }).click();
    await expect.poll(() => status(operator).filter({ hasText: 'Sam Spammer is banned' }).count()).toBe(1);
    await expect.poll(() => operator.getByRole('region', { name: 'The ban in force' }).textContent()).toContain('Reason: spam invitations');
    await shootAndCheck(operator, 'user-banned');

    // The banned user's open page: its live stream ends within the streams' recheck; a reload is signed out.
    await expect.poll(() => spammer.getByRole('status', { name: /^Live updates: off/ }).count(), { timeout: 10_000 }).toBe(1);
    await spammer.reload();
    await spammer.waitForURL(app('/sign-in'));
    // No path signs them in: the backend's, and Better Auth's on the app.
    expect(await backendSignIn('sam@example.com', password)).toBe(403);
    expect(await signInThroughPage(spammer, 'sam@example.com')).toMatch(/banned/i);

    // Unbanned: they sign in again.
    const unban = operator.getByRole('region', { name: 'Lift the ban' });
    await unban.getByLabel(/^Reason/).fill('appeal accepted');
    await unban.getByRole('button', { name: 'Unban' }).click();
    await operator.getByRole('alertdialog').getByRole('button', { name: 'Unban' }).click();
    await expect.poll(() => status(operator).filter({ hasText: 'Sam Spammer is no longer banned.' }).count()).toBe(1);
    expect(await operator.getByRole('region', { name: 'The ban in force' }).count()).toBe(0);
    expect(await signInThroughPage(spammer, 'sam@example.com')).toBe('in');
    expect(samId).toMatch(/^[0-9a-f-]{36}$/);

    // The two sign-ins the ban refused, on the backend's path and Better Auth's: the platform's, in no organization.
    await operator.reload();
    const refused = operator.getByRole('table', { name: 'Refused sign-ins' });
    await expect.poll(() => refused.getByRole('row').filter({ hasText: 'BANNED' }).count()).toBe(2);
    expect(await refused.getByRole('row').filter({ hasText: 'better-auth:password' }).count()).toBe(1);
    expect(await refused.getByRole('row').filter({ hasText: 'None (the platform’s)' }).count()).toBe(2);
    await shootAndCheck(operator, 'user-refused-sign-ins');
  }, 240_000);

  it('an operator signs in as a member: the banner on every page, a record changed as them, in their audit log as an operator; End returns to the operator', async () => {
    const form = member.getByRole('form', { name: 'New project' });
    await member.goto(app('/projects'));
    await form.getByLabel('Name').fill('Apollo');
    await form.getByRole('button', { name: 'Add' }).click();
    await expect.poll(() => member.getByRole('cell', { name: 'Apollo', exact: true }).count()).toBe(1);

    const miaId = await openUser('mia@example.com');
    const signInAs = operator.getByRole('region', { name: 'Sign in as Mia Member' });
    await signInAs.getByLabel(/^Reason/).fill('ticket 4711: cannot rename her project');
    await signInAs.getByLabel('For').selectOption('15');
    await signInAs.getByRole('button', { name: 'Sign in as Mia Member' }).click();
    await operator.getByRole('alertdialog').getByRole('button', { name: 'Sign in as them' }).click();
    await operator.waitForURL(app('/projects'));
    await expect.poll(() => banner(operator).textContent()).toMatch(/^You are signed in as Mia Member \(mia@example\.com\) as an operator until \d\d:\d\d\.End$/);

    // As Mia: her organization's record, changed through the page.
    await expect.poll(() => operator.getByRole('cell', { name: 'Apollo', exact: true }).count()).toBe(1);
    await shootAndCheck(operator, 'impersonating');
    await operator.getByRole('button', { name: 'Edit Apollo' }).click();
    const editForm = operator.getByRole('form', { name: 'Edit Apollo' });
    await editForm.getByLabel('Name').fill('Apollo 11');
    await editForm.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => operator.getByRole('status').filter({ hasText: 'Apollo 11 saved.' }).count()).toBe(1);

    // The banner stays on every page of the app, the organization's settings included.
    await operator.goto(app('/settings/members'));
    await expect.poll(() => banner(operator).count()).toBe(1);
    await expect.poll(() => operator.getByRole('cell', { name: /Mia Member/ }).count()).toBe(1);

    // Mia's audit log: the change, made by her with a session an operator opened as her.
    await member.goto(app('/settings/audit-log'));
    const change = member.getByRole('table', { name: 'Events' }).getByRole('row').filter({ hasText: 'project.updated' });
    await expect.poll(() => change.count()).toBe(1);
    expect(await change.textContent()).toContain('Mia Member');
    expect(await change.textContent()).toContain('An operator signed in as them');
    const started = member.getByRole('table', { name: 'Events' }).getByRole('row').filter({ hasText: 'operator.impersonation_started' });
    expect(await started.count()).toBe(1);
    expect(await started.textContent()).toContain('An operator of the platform');
    await member.screenshot({ path: path.join(screenshots, 'member-audit-log.png'), fullPage: true });

    // End: the tab is the operator again, on Mia's page, and her impersonated session is gone.
    await banner(operator).getByRole('button', { name: 'End' }).click();
    await operator.waitForURL(app(`/operator/users/${miaId}`));
    await expect.poll(() => operator.getByRole('heading', { name: 'Mia Member', level: 1 }).count()).toBe(1);
    expect(await banner(operator).count()).toBe(0);
    expect(await operator.getByText('An operator signed in as them').count()).toBe(0);
  }, 240_000);

  it('organizations and the platform audit log, searched and filtered; the pages at a phone\'s width', async () => {
    await operator.goto(app('/operator/organizations'));
    await operator.getByRole('searchbox', { name: 'Search organizations' }).fill('mia@example.com');
    await operator.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => operator.getByRole('table', { name: 'Organizations' }).getByRole('row').count()).toBe(2);
    await shootAndCheck(operator, 'organizations');

    await operator.goto(app('/operator/audit-log'));
    const events = operator.getByRole('table', { name: 'Operator events' });
    await expect.poll(() => events.getByRole('row').filter({ hasText: 'operator.banned_user' }).count()).toBe(1);
    const banned = await events.getByRole('row').filter({ hasText: 'operator.banned_user' }).textContent();
    expect(banned).toContain('Olga Operator (operator) banned');
    expect(banned).toContain('sam@example.com');
    expect(banned).toContain('spam invitations');
    for (const type of ['operator.granted', 'operator.unbanned_user', 'operator.impersonation_started', 'operator.impersonation_ended']) {
      expect(await events.getByRole('row').filter({ hasText: type }).count(), type).toBe(1);
    }
    await shootAndCheck(operator, 'audit-log');
    await operator.getByLabel('Event type').selectOption('operator.impersonation_started');
    await expect.poll(() => events.getByRole('row').count()).toBe(2);
    expect(await events.textContent()).toContain('ticket 4711');

    await operator.setViewportSize({ width: 390, height: 844 });
    for (const [route, name] of [
      ['/operator/users', 'users-phone'],
      ['/operator/audit-log', 'audit-log-phone'],
    ] as const) {
      await operator.goto(app(route));
      await expect.poll(() => operator.getByRole('table').count()).toBe(1);
      await shootAndCheck(operator, name);
      expect(await operator.evaluate(() => document.documentElement.scrollWidth), name).toBeLessThanOrEqual(390);
    }
    await openUser('sam@example.com');
    await shootAndCheck(operator, 'user-phone');
    expect(await operator.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  }, 240_000);

  it("the overview charts the platform's days; an organization opened from the list: a member's role changed (the only owner's refused), a machine key disabled and enabled", async () => {
    await operator.setViewportSize({ width: 1280, height: 720 });
    // Mia's organization gets a second member (Ivy, invited by mail) and a machine key.
    await member.goto(app('/settings/invitations'));
    await member.getByLabel('E-mail address').fill('ivy@example.com');
    await member.getByLabel('Role').selectOption('member');
    await member.getByRole('button', { name: 'Send invitation' }).click();
    await expect.poll(() => member.getByRole('cell', { name: 'ivy@example.com', exact: true }).count()).toBe(1);
    const invitation = await generated!.mailbox.next('ivy@example.com', undefined, 30_000);
    const invitee = await (await browser.newContext()).newPage();
    await invitee.goto(invitation.link!.href);
    await invitee.waitForURL(/\/accept-invitation/);
    await invitee.getByLabel('Name').fill('Ivy Invitee');
    await invitee.getByLabel('Password').fill(password);
    await invitee.getByRole('button', { name: 'Create my account and join' }).click();
    await invitee.waitForURL(app('/projects'));

    await member.goto(app('/settings/api-keys'));
    await member.getByLabel('Name').fill('Nightly export');
    await member.getByLabel('Projects: list').check();
    await member.getByRole('button', { name: 'Create key' }).click();
    const key = (await member.getByLabel('The new key').textContent())!.trim();
    const withKey = () => fetch(api('/Projects'), { headers: { 'x-api-key': key } }).then((response) => response.status);
    expect(await withKey()).toBe(200);

    // The overview: a chart and the numbers of each series; four users signed up today (Olga, Mia, Sam, Ivy).
    await operator.goto(app('/operator'));
    await operator.waitForURL(app('/operator/overview'));
    const signUps = operator.getByRole('region', { name: 'Sign-ups' });
    await expect.poll(() => signUps.getByRole('img', { name: /^4 sign-ups from \d{4}-\d\d-\d\d to / }).count()).toBe(1);
    expect(await signUps.textContent()).toContain('4 in 30 days');
    const active = operator.getByRole('region', { name: 'Active users' });
    expect(await active.getByRole('img', { name: /active users? from/ }).count()).toBe(1);
    expect(await operator.getByRole('region', { name: 'New organizations' }).getByRole('img').count()).toBe(1);
    expect(await operator.getByRole('table', { name: 'Operators' }).textContent()).toContain('olga@example.com');
    await shootAndCheck(operator, 'overview');
    await operator.getByLabel('Days shown').selectOption('7');
    await expect.poll(() => signUps.textContent()).toContain('4 in 7 days');

    // Mia's organization, found by her address.
    await operator.getByRole('navigation', { name: 'Operator' }).getByRole('link', { name: 'Organizations' }).click();
    await openOrganizationFound('mia@example.com');
    const members = operator.getByRole('table', { name: 'Members' });
    await expect.poll(() => members.getByRole('row').count()).toBe(3);

    // The only owner's role: the backend's refusal, in its words.
    await operator.getByLabel('Role of Mia Member').selectOption('admin');
    await expect.poll(() => operator.locator('main').getByRole('alert').textContent()).toMatch(/owner/i);
    // Ivy becomes an admin, for real: so after a reload.
    await operator.getByLabel('Role of Ivy Invitee').selectOption('admin');
    await expect.poll(() => status(operator).filter({ hasText: 'Ivy Invitee is an admin now.' }).count()).toBe(1);
    await operator.reload();
    await expect.poll(() => operator.getByLabel('Role of Ivy Invitee').inputValue()).toBe('admin');
    expect(await operator.getByLabel('Role of Mia Member').inputValue()).toBe('owner');

    // The key disabled: refused by the backend; enabled: it works again.
    await operator.getByRole('button', { name: 'Disable Nightly export' }).click();
    await expect.poll(() => status(operator).filter({ hasText: 'The key Nightly export is disabled.' }).count()).toBe(1);
    await expect.poll(withKey, { timeout: 15_000 }).not.toBe(200);
    // As the backend says after a reload: disabled.
    await operator.reload();
    await expect.poll(() => operator.locator('main').textContent(), { timeout: 20_000 }).toMatch(/Nightly export.*Disabled/);
    await operator.getByRole('button', { name: 'Enable Nightly export' }).click();
    await expect.poll(() => status(operator).filter({ hasText: 'The key Nightly export is enabled.' }).count()).toBe(1);
    await expect.poll(withKey, { timeout: 15_000 }).toBe(200);
    // Its audit log has the operator's actions.
    await expect.poll(() => operator.getByRole('table', { name: 'Events' }).getByRole('row').count()).toBeGreaterThan(3);
    await shootAndCheck(operator, 'organization');

    await operator.setViewportSize({ width: 390, height: 844 });
    await operator.reload();
    await expect.poll(() => operator.getByRole('table', { name: 'Members' }).count()).toBe(1);
    await shootAndCheck(operator, 'organization-phone');
    expect(await operator.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await operator.goto(app('/operator/overview'));
    await expect.poll(() => signUps.getByRole('img').count()).toBe(1);
    await shootAndCheck(operator, 'overview-phone');
    expect(await operator.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  }, 300_000);

  it("the remaining buttons: mails sent, the operator role granted and revoked, ownership handed over, the platform's log downloaded, an organization and a user deleted (the others' rows kept)", async () => {
    await operator.setViewportSize({ width: 1280, height: 720 });
    const confirmWith = async (button: string, typed?: string) => {
      const dialog = operator.getByRole('alertdialog');
      if (typed !== undefined) {
        expect(await dialog.getByRole('button', { name: button }).isDisabled()).toBe(true);
        await dialog.getByLabel(`Type ${typed} to confirm`).fill(typed);
      }
      await dialog.getByRole('button', { name: button }).click();
    };
    /** The mail that arrives at `address` after `before` others, with the subject and a link. */
    const newMail = async (address: string, before: number, subject: RegExp) => {
      await expect.poll(() => generated!.mailbox.to(address).length, { timeout: 30_000 }).toBeGreaterThan(before);
      const mail = generated!.mailbox.to(address).at(-1)!;
      expect(mail.subject).toMatch(subject);
      expect(mail.link?.href).toMatch(/^http/);
      return mail;
    };

    // Sam's mails, through the backend's own account flows: the operator never sees the links.
    await openUser('sam@example.com');
    let before = generated!.mailbox.to('sam@example.com').length;
    await operator.getByRole('region', { name: 'Send a verification mail' }).getByRole('button', { name: 'Send verification mail' }).click();
    await confirmWith('Send');
    await expect.poll(() => status(operator).filter({ hasText: 'A verification mail is on its way to sam@example.com.' }).count()).toBe(1);
    await newMail('sam@example.com', before, /Confirm your e-mail address/);
    before = generated!.mailbox.to('sam@example.com').length;
    const reset = operator.getByRole('region', { name: 'Send a password reset' });
    await reset.getByLabel(/^Reason/).fill('ticket 4712: locked out');
    await reset.getByRole('button', { name: 'Send password reset' }).click();
    await confirmWith('Send');
    await expect.poll(() => status(operator).filter({ hasText: 'A password reset mail is on its way to sam@example.com.' }).count()).toBe(1);
    const resetMail = await newMail('sam@example.com', before, /Reset your password/);
    expect(resetMail.text).not.toContain('ticket 4712');

    // The operator role: Ivy granted, then revoked; the table is the backend's list, read again each time.
    await operator.goto(app('/operator/overview'));
    const operators = operator.getByRole('table', { name: 'Operators' });
    await operator.getByRole('form', { name: 'Grant the operator role' }).getByLabel('Address of a user to make an operator').fill('ivy@example.com');
    await operator.getByRole('form', { name: 'Grant the operator role' }).getByRole('button', { name: 'Grant' }).click();
    await expect.poll(() => status(operator).filter({ hasText: 'ivy@example.com is an operator.' }).count()).toBe(1);
    await expect.poll(() => operators.getByRole('row').filter({ hasText: 'ivy@example.com' }).count()).toBe(1);
    expect(await operators.getByRole('row').filter({ hasText: 'ivy@example.com' }).textContent()).toContain('olga@example.com');
    await operator.getByRole('button', { name: "Revoke ivy@example.com's operator role" }).click();
    await confirmWith('Revoke');
    await expect.poll(() => status(operator).filter({ hasText: 'ivy@example.com is no longer an operator.' }).count()).toBe(1);
    await operator.reload();
    await expect.poll(() => operators.getByRole('row').filter({ hasText: 'olga@example.com' }).count()).toBe(1);
    expect(await operators.getByRole('row').filter({ hasText: 'ivy@example.com' }).count()).toBe(0);

    // Make owner: Ivy owns Mia's organization, Mia becomes an admin (so after a reload).
    await operator.getByRole('navigation', { name: 'Operator' }).getByRole('link', { name: 'Organizations' }).click();
    await openOrganizationFound('mia@example.com');
    const miasOrganization = operator.url();
    await operator.getByRole('button', { name: 'Make owner: Ivy Invitee' }).click();
    await confirmWith('Make owner');
    await expect.poll(() => status(operator).filter({ hasText: 'Ivy Invitee owns the organization now.' }).count()).toBe(1);
    await operator.reload();
    await expect.poll(() => operator.getByLabel('Role of Ivy Invitee').inputValue()).toBe('owner');
    expect(await operator.getByLabel('Role of Mia Member').inputValue()).toBe('admin');

    // The platform's log as a CSV file, downloaded by the page's button: the events the page lists.
    await operator.goto(app('/operator/audit-log'));
    await expect.poll(() => operator.getByRole('table', { name: 'Operator events' }).getByRole('row').count()).toBeGreaterThan(1);
    const [download] = await Promise.all([operator.waitForEvent('download'), operator.getByRole('button', { name: 'Export CSV' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^platform-log-\d{4}-\d{2}-\d{2}\.csv$/);
    const csv = fs.readFileSync((await download.path())!, 'utf8');
    expect(csv.split('\r\n')[0]).toBe('id,createdAt,type,actorType,actorId,actorEmail,actorName,userId,userEmail,userName,entity,entityId,ipAddress,data,summary');
    for (const type of ['operator.granted', 'operator.revoked', 'operator.transferred_ownership', 'operator.sent_password_reset', 'operator.banned_user']) expect(csv, type).toContain(`,${type},`);
    await expect.poll(() => status(operator).filter({ hasText: 'The CSV file of the events is downloaded.' }).count()).toBe(1);

    // Sam's organization deleted (its slug typed), then Sam; Mia's organization, its members and its record stay.
    await operator.goto(app('/operator/organizations'));
    await openOrganizationFound('sam@example.com');
    await operator.getByRole('region', { name: 'Delete the organization' }).getByRole('button', { name: /^Delete / }).click();
    const typeSlug = (await operator.getByRole('alertdialog').locator('label', { hasText: /^Type / }).textContent())!;
    const slug = /^Type (\S+) to confirm/.exec(typeSlug)![1]!;
    await confirmWith('Delete', slug);
    await operator.waitForURL(app('/operator/organizations'));
    await operator.getByRole('searchbox', { name: 'Search organizations' }).fill(slug);
    await operator.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => operator.getByText(`0 organizations match “${slug}”.`).count()).toBe(1);

    await openUser('sam@example.com');
    await operator.getByRole('region', { name: 'Delete the account' }).getByRole('button', { name: 'Delete Sam Spammer' }).click();
    await confirmWith('Delete', 'sam@example.com');
    await operator.waitForURL(app('/operator/users'));
    await expect.poll(() => operator.getByRole('table', { name: 'Users' }).getByRole('row').count()).toBe(4);
    expect(await operator.getByRole('table', { name: 'Users' }).textContent()).not.toContain('sam@example.com');
    expect(await backendSignIn('sam@example.com', password)).toBe(401);
    await operator.goto(miasOrganization);
    await expect.poll(() => operator.getByRole('table', { name: 'Members' }).getByRole('row').count()).toBe(3);
    await member.goto(app('/projects'));
    await expect.poll(() => member.getByRole('cell', { name: 'Apollo 11', exact: true }).count()).toBe(1);
    await shootAndCheck(operator, 'organization-after-deletions');
  }, 300_000);
});
