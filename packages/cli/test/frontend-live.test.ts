import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signUpThroughPage, startGeneratedApp, type GeneratedApp } from './support/frontend.js';
import { startNetworkProxy, type NetworkProxy } from './support/network-proxy.js';

/**
 * The entity page of the app `setup --frontend` writes follows the backend's live stream: two
 * members of one organization, each in their own Chromium context (Debian's, never a downloaded
 * one), on the projects page; what the owner creates, edits and deletes shows in the member's page
 * within a second, without a reload, and a record of another organization never does. After the
 * member's network drops for a while (offline, its connections reset), the changes made meanwhile
 * arrive once it is back: the stream resumes from its Last-Event-ID, the page reads nothing again.
 * A delete the backend refuses (the member removed meanwhile) shows its message.
 */

const password = 'correct horse battery';
/** The budget: from the writer's answer to the reader's screen. */
const liveBudgetMs = 1000;

describe('live entity pages in Chromium', () => {
  let generated: GeneratedApp | undefined;
  let ownerContext: BrowserContext;
  let memberContext: BrowserContext;
  let owner: Page;
  let member: Page;
  let organizationId: string;
  let memberNetwork: NetworkProxy | undefined;
  const app = (route = '/') => generated!.app(route);
  const api = (route: string) => generated!.api(route);
  /** How long each change took to show in the member's page, for the report. */
  const delays: Record<string, number> = {};

  beforeAll(async () => {
    generated = await startGeneratedApp('live', { OUTBOX_POLL_MS: '100' });
    const { browser } = generated;
    ownerContext = await browser.newContext();
    // The member's browser reaches the app and the backend through a proxy that can drop its connections.
    memberNetwork = await startNetworkProxy();
    memberContext = await browser.newContext({ proxy: memberNetwork.settings });
    owner = await ownerContext.newPage();
    member = await memberContext.newPage();
  }, 900_000);

  afterAll(async () => {
    console.log(`live delays in the member's page (ms): ${JSON.stringify(delays)}`);
    await generated?.close();
    await memberNetwork?.close();
  }, 180_000);

  it('the owner invites a member; both are on the projects page, following its stream', async () => {
    const { mailbox } = generated!;
    await signUpThroughPage(owner, app, 'Olivia Owner', 'olivia@example.com', password);
    // The page has chosen her personal organization once it shows its (empty) list.
    await expect.poll(() => owner.getByText('No projects in').count()).toBe(1);
    organizationId = await owner.evaluate(() => localStorage.getItem('authstrap.organizationId')!);
    expect(organizationId).toMatch(/^[0-9a-f-]{36}$/);
    // The owner invites through the API (the console's own test covers its page); the invitee
    // follows the mailed link and joins as a new user.
    const invited = await fromPage(owner, 'POST', '/members', { email: 'ivan@example.com', role: 'member' });
    expect(invited.status, JSON.stringify(invited.body)).toBe(202);
    const invitation = await mailbox.next('ivan@example.com', undefined, 30_000);
    await member.goto(invitation.link!.href);
    await member.waitForURL(/\/accept-invitation/);
    await member.getByLabel('Name').fill('Ivan Member');
    await member.getByLabel('Password').fill(password);
    await member.getByRole('button', { name: 'Create my account and join' }).click();
    await member.waitForURL(app('/projects'));
    await expect.poll(() => member.getByLabel('Organization').locator('option:checked').textContent()).toContain('(member)');
    for (const page of [owner, member]) await expect.poll(() => liveSign(page).getAttribute('aria-label'), { timeout: 15_000 }).toBe('Live updates: on');
  }, 120_000);

  /** A request to the backend from the page, with its session cookie, in an organization (the page's, by default). */
  function fromPage(page: Page, method: string, route: string, body?: unknown, organization = organizationId) {
    return page.evaluate(
      async ({ url, method, body, organization }) => {
        const response = await fetch(url, {
          method,
          credentials: 'include',
          headers: { 'x-organization-id': organization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: response.status, body: response.status === 204 ? undefined : await response.json() };
      },
      { url: api(route), method, body, organization },
    );
  }

  const liveSign = (page: Page) => page.getByRole('status', { name: /^Live updates/ });
  const cells = (page: Page, name: string) => page.getByRole('cell', { name, exact: true });
  const names = async (page: Page) => (await page.locator('tbody tr td:first-child').allTextContents()).sort();

  /** Waits, within the budget counted from now (the writer's action answered), for the member's page to show it. */
  async function showsWithinBudget(label: string, check: () => Promise<unknown>, expected: unknown) {
    const start = Date.now();
    await expect.poll(check, { timeout: liveBudgetMs, interval: 25 }).toEqual(expected);
    delays[label] = Date.now() - start;
  }

  it("what the owner creates, edits and deletes shows in the member's page within a second, without a reload", async () => {
    // Neither page may load again: a reload or a navigation would read the list afresh.
    let memberNavigations = 0;
    member.on('framenavigated', (frame) => frame === member.mainFrame() && memberNavigations++);

    // Created on the owner's page, through its form.
    const form = owner.getByRole('form', { name: 'New project' });
    await form.getByLabel('Name').fill('Apollo');
    const answered = owner.waitForResponse((response) => response.url() === api('/Projects') && response.request().method() === 'POST');
    await form.getByRole('button', { name: 'Add' }).click();
    expect((await answered).status()).toBe(201);
    await showsWithinBudget('created', () => cells(member, 'Apollo').count(), 1);
    await expect.poll(() => member.getByText('1 in all').count()).toBe(1);
    // The owner's own page shows it once: the POST's answer and the stream's event are one row.
    await expect.poll(() => cells(owner, 'Apollo').count()).toBe(1);
    await member.waitForTimeout(300);
    expect(await owner.locator('tbody tr').count()).toBe(1);
    expect(await member.locator('tbody tr').count()).toBe(1);

    // Another record, so that an edit and a delete are seen to touch only theirs.
    const gemini = await fromPage(owner, 'POST', '/Projects', { name: 'Gemini' });
    expect(gemini.status).toBe(201);
    await showsWithinBudget('created through the API', () => names(member), ['Apollo', 'Gemini']);

    // Edited on the owner's page: the row's Edit opens its form, filled in.
    await owner.getByRole('button', { name: 'Edit Apollo' }).click();
    const editForm = owner.getByRole('form', { name: 'Edit Apollo' });
    expect(await editForm.getByLabel('Name').inputValue()).toBe('Apollo');
    await editForm.getByLabel('Name').fill('Apollo 11');
    const patched = owner.waitForResponse((response) => response.url().startsWith(api('/Projects/')) && response.request().method() === 'PATCH');
    await editForm.getByRole('button', { name: 'Save' }).click();
    expect((await patched).status()).toBe(200);
    await showsWithinBudget('updated', () => names(member), ['Apollo 11', 'Gemini']);
    await expect.poll(() => owner.getByRole('status').filter({ hasText: 'Apollo 11 saved.' }).count()).toBe(1);
    expect(await editForm.count()).toBe(0);

    // Deleted on the owner's page, once confirmed.
    await owner.getByRole('button', { name: 'Delete Gemini' }).click();
    const confirm = owner.getByRole('alertdialog', { name: 'Delete Gemini?' });
    const deleted = owner.waitForResponse((response) => response.url() === api(`/Projects/${gemini.body.data.id}`) && response.request().method() === 'DELETE');
    await confirm.getByRole('button', { name: 'Delete' }).click();
    expect((await deleted).status()).toBe(204);
    await showsWithinBudget('deleted', () => names(member), ['Apollo 11']);
    await expect.poll(() => member.getByText('1 in all').count()).toBe(1);
    // The owner's page counts its own delete once, though its answer and its event both arrive.
    await expect.poll(() => names(owner)).toEqual(['Apollo 11']);
    await owner.waitForTimeout(300);
    expect(await owner.getByText('1 in all').count()).toBe(1);
    expect(memberNavigations).toBe(0);
  }, 120_000);

  it('a record of another organization never shows, in either page', async () => {
    // The owner's second organization, and a record in it, made while both pages follow the first.
    const other = await fromPage(owner, 'POST', '/Organizations', { name: 'Elsewhere Inc', slug: `elsewhere-${Date.now()}` });
    expect(other.status, JSON.stringify(other.body)).toBe(201);
    const hidden = await fromPage(owner, 'POST', '/Projects', { name: 'Elsewhere only' }, other.body.data.id);
    expect(hidden.status).toBe(201);
    // Then one in the first organization: once it shows, the other one would have too.
    expect((await fromPage(owner, 'POST', '/Projects', { name: 'Mercury' })).status).toBe(201);
    await showsWithinBudget('created after another organization', () => names(member), ['Apollo 11', 'Mercury']);
    await expect.poll(() => names(owner)).toEqual(['Apollo 11', 'Mercury']);
    await member.waitForTimeout(500);
    for (const page of [owner, member]) expect(await cells(page, 'Elsewhere only').count()).toBe(0);
  }, 60_000);

  it('after the network drops, the changes made meanwhile show once it is back (the stream resumes, nothing is read again)', async () => {
    const listReads: string[] = [];
    member.on('request', (request) => {
      if (request.method() === 'GET' && request.url().startsWith(api('/Projects'))) listReads.push(request.url());
    });
    // Offline: no new connection, and the open ones (the stream) reset, as when a network goes away.
    await memberContext.setOffline(true);
    memberNetwork!.drop();
    await expect.poll(() => liveSign(member).getAttribute('aria-label'), { timeout: 10_000 }).toBe('Live updates: reconnecting');

    const venus = await fromPage(owner, 'POST', '/Projects', { name: 'Venus' });
    expect(venus.status).toBe(201);
    const mercuryId = (await fromPage(owner, 'GET', '/Projects')).body.data.find((row: { name: string }) => row.name === 'Mercury').id;
    expect((await fromPage(owner, 'PATCH', `/Projects/${venus.body.data.id}`, { name: 'Venus Express' })).status).toBe(200);
    expect((await fromPage(owner, 'DELETE', `/Projects/${mercuryId}`)).status).toBe(204);
    await member.waitForTimeout(1500);
    // Offline, the page still shows what it had.
    expect(await names(member)).toEqual(['Apollo 11', 'Mercury']);

    await memberContext.setOffline(false);
    await expect.poll(() => names(member), { timeout: 20_000 }).toEqual(['Apollo 11', 'Venus Express']);
    await expect.poll(() => liveSign(member).getAttribute('aria-label')).toBe('Live updates: on');
    await expect.poll(() => member.getByText('2 in all').count()).toBe(1);
    expect(listReads).toEqual([]);

    // And it goes on live from there.
    expect((await fromPage(owner, 'POST', '/Projects', { name: 'Pioneer' })).status).toBe(201);
    await showsWithinBudget('created after the outage', () => names(member), ['Apollo 11', 'Pioneer', 'Venus Express']);
  }, 60_000);

  it("a refused delete shows the backend's message, and the row stays", async () => {
    // The owner removes the member; his page still shows the list it had.
    const members = (await fromPage(owner, 'GET', '/members')).body.data as { id: string; role: string }[];
    const membership = members.find((each) => each.role === 'member')!;
    expect((await fromPage(owner, 'DELETE', `/members/${membership.id}`)).status).toBe(204);

    await member.getByRole('button', { name: 'Delete Pioneer' }).click();
    const refused = member.waitForResponse((response) => response.url().startsWith(api('/Projects/')) && response.request().method() === 'DELETE');
    await member.getByRole('alertdialog', { name: 'Delete Pioneer?' }).getByRole('button', { name: 'Delete' }).click();
    const answer = await refused;
    expect(answer.status()).toBe(403);
    const { message } = (await answer.json()).error;
    expect(message).not.toBe('');
    await expect.poll(() => member.getByRole('alert').filter({ hasText: message }).count()).toBe(1);
    expect(await cells(member, 'Pioneer').count()).toBe(1);
  }, 60_000);
});
