import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCsv } from '../../../examples/saas-backend/test/support/csv.js';
import { startDnsServer, type DnsServer } from '../../../examples/saas-backend/test/support/dns-server.js';
import type { Mailbox } from '../../../examples/saas-backend/test/support/mailbox.js';
import { startReceiver, type Receiver } from '../../../examples/saas-backend/test/support/webhook-receiver.js';
import { repoRoot } from './support/cli.js';
import { expectAccessible, shootAndCheck as shootAndCheckInto, signUpThroughPage, startGeneratedApp, type GeneratedApp } from './support/frontend.js';

/**
 * The team console of the app `setup --frontend` writes (its organization settings), in Debian's
 * Chromium against a generated backend whose mail goes to a real SMTP server on loopback: an owner
 * invites someone by mail and manages them, an admin meets the backend's refusal, a member sees no
 * controls and is refused the managers' pages, and an API key made on the page works, is limited to
 * its permissions and ends when revoked; a webhook endpoint added on the page receives a record's
 * change signed, shows it in its delivery log, and a redelivery from the page arrives with the same
 * webhook-id, and its "Send test event" arrives signed and is logged too; the audit log shows those
 * actions with their actors, narrows with each filter, and exports exactly the filtered rows as CSV;
 * the user's security page lists their sessions and security events; an IT admin claims a domain and
 * verifies it by the TXT record the page shows (published on a DNS server on loopback), connects a
 * directory whose token, shown once, provisions people over SCIM, and maps a group to a role. Every page passes axe-core (no serious or critical
 * violation). The screenshots go to docs/images/console/, where docs/frontend.md shows them.
 */

const screenshots = path.join(repoRoot, 'docs/images/console');
const password = 'correct horse battery';

describe('the team console in Chromium', () => {
  let generated: GeneratedApp | undefined;
  let browser: Browser;
  let mailbox: Mailbox;
  let owner: Page;
  let ownerContext: BrowserContext;
  let organizationId: string;
  let receiver: Receiver;
  let dns: DnsServer;
  const app = (route = '/') => generated!.app(route);
  const api = (route: string) => generated!.api(route);

  beforeAll(async () => {
    fs.mkdirSync(screenshots, { recursive: true });
    receiver = await startReceiver();
    dns = await startDnsServer();
    // The receiver is on loopback, which production refuses to send webhooks to; the domains' TXT records are on a DNS server there.
    generated = await startGeneratedApp('team', { WEBHOOKS_ALLOW_PRIVATE: 'true', OUTBOX_POLL_MS: '100', DNS_SERVERS: dns.address });
    ({ browser, mailbox } = generated);
    ownerContext = await browser.newContext();
    owner = await ownerContext.newPage();
  }, 900_000);

  afterAll(async () => {
    await generated?.close();
    await receiver?.close();
    await dns?.close();
  }, 60_000);

  /** A full-page screenshot for the docs, at a laptop's width, and axe-core's verdict on the page. */
  const shootAndCheck = (page: Page, name: string) => shootAndCheckInto(page, screenshots, name);

  const signUp = (page: Page, name: string, email: string) => signUpThroughPage(page, app, name, email, password);

  /** A request to the backend from the page, with its cookie, in the organization. */
  const statusFromPage = (page: Page, route: string, init: { method?: string } = {}) =>
    page.evaluate(
      async ({ url, organizationId, method }) => (await fetch(url, { method: method ?? 'GET', credentials: 'include', headers: { 'x-organization-id': organizationId } })).status,
      { url: api(route), organizationId, method: init.method },
    );

  // In <main>: Next's route announcer, outside it, is an alert too.
  // An action's outcome, not a live list's indicator (also a status).
  const status = (page: Page) => page.locator('main [role="status"]:not([aria-label^="Live updates"])').filter({ hasText: /\S/ });
  const alert = (page: Page) => page.locator('main').getByRole('alert').filter({ hasText: /\S/ });

  it('the owner invites by mail; the invitee joins, changes with their role, meets the refusals, and is removed', async () => {
    await signUp(owner, 'Olivia Owner', 'olivia@example.com');
    await expectAccessible(owner, 'projects');
    organizationId = await owner.evaluate(() => localStorage.getItem('authstrap.organizationId')!);

    await owner.getByRole('link', { name: 'Settings' }).click();
    await owner.waitForURL(app('/settings/general'));
    await expect.poll(() => owner.getByLabel('Slug').inputValue()).not.toBe('');
    await shootAndCheck(owner, 'general');

    // The delete dialog asks for the slug before it lets the owner go on.
    await owner.getByRole('button', { name: 'Delete organization' }).click();
    const dialog = owner.getByRole('alertdialog');
    await expect.poll(() => dialog.getByRole('button', { name: 'Delete for good' }).isDisabled()).toBe(true);
    await dialog.getByLabel(/^Type .* to confirm$/).fill('not the slug');
    expect(await dialog.getByRole('button', { name: 'Delete for good' }).isDisabled()).toBe(true);
    await shootAndCheck(owner, 'general-delete');
    await dialog.getByRole('button', { name: 'Cancel' }).click();

    // Renaming: the backend's refusal of a bad slug in words, then a good name saved.
    await owner.getByLabel('Slug').fill('x');
    await owner.getByLabel('Slug').evaluate((input: HTMLInputElement) => input.removeAttribute('minlength'));
    await owner.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => alert(owner).textContent()).toMatch(/slug/i);
    await owner.getByLabel('Slug').fill('olivias-team');
    await owner.getByLabel('Name').fill("Olivia's Team");
    await owner.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => status(owner).textContent()).toBe('Saved.');

    await owner.getByRole('link', { name: 'Invitations' }).click();
    await owner.waitForURL(app('/settings/invitations'));
    await expect.poll(() => owner.getByText('No invitation is waiting').count()).toBe(1);
    await owner.getByLabel('E-mail address').fill('ivan@example.com');
    await owner.getByLabel('Role').selectOption('member');
    await owner.getByRole('button', { name: 'Send invitation' }).click();
    await expect.poll(() => status(owner).textContent()).toBe('Invitation sent to ivan@example.com.');
    await expect.poll(() => owner.getByRole('cell', { name: 'ivan@example.com', exact: true }).count()).toBe(1);
    expect(await owner.getByRole('row', { name: /ivan@example\.com/ }).textContent()).toContain('Olivia Owner');
    await shootAndCheck(owner, 'invitations');

    // Sent again: a new link by mail, still one pending row.
    await mailbox.next('ivan@example.com', undefined, 30_000);
    await owner.getByRole('button', { name: 'Resend to ivan@example.com' }).click();
    await expect.poll(() => status(owner).filter({ hasText: 'A new link went to ivan@example.com; the old one no longer works.' }).count()).toBe(1);
    await expect.poll(() => owner.getByRole('cell', { name: 'ivan@example.com', exact: true }).count()).toBe(1);
    // The mailbox keeps every mail: the second one holds the link that works.
    await expect.poll(() => mailbox.to('ivan@example.com').length, { timeout: 30_000 }).toBe(2);
    const invitation = mailbox.to('ivan@example.com')[1]!;

    // The invitee opens the link in another browser, makes an account, and is in the organization.
    const inviteeContext = await browser.newContext();
    const invitee = await inviteeContext.newPage();
    await invitee.goto(invitation.link!.href);
    await invitee.waitForURL(/\/accept-invitation/);
    await expectAccessible(invitee, 'accept-invitation');
    await invitee.getByLabel('Name').fill('Ivan Invitee');
    await invitee.getByLabel('Password').fill(password);
    await invitee.getByRole('button', { name: 'Create my account and join' }).click();
    const joined = await Promise.race([
      invitee.waitForURL(app('/projects')).then(() => 'joined'),
      alert(invitee)
        .waitFor({ timeout: 30_000 })
        .then(async () => `refused: ${await alert(invitee).textContent()}`),
    ]);
    expect(joined).toBe('joined');
    await expect.poll(() => invitee.getByLabel('Organization').locator('option:checked').textContent()).toBe("Olivia's Team (member)");

    // A member: no managers' pages in the navigation, no controls, and the managers' URLs refused.
    await invitee.goto(app('/settings/members'));
    await expect.poll(() => invitee.getByRole('cell', { name: /Olivia Owner/ }).count()).toBe(1);
    const navigation = invitee.getByRole('navigation', { name: 'Organization settings' });
    expect(await navigation.getByRole('link').allTextContents()).toEqual(['General', 'Members']);
    expect(await invitee.getByRole('combobox', { name: /^Role of/ }).count()).toBe(0);
    expect(await invitee.getByRole('button', { name: /^Remove/ }).count()).toBe(0);
    expect(await invitee.getByRole('button', { name: 'Leave' }).count()).toBe(1);
    await shootAndCheck(invitee, 'members-as-member');
    await invitee.goto(app('/settings/general'));
    await expect.poll(() => invitee.getByText('Only owners and admins change these.').count()).toBe(1);
    expect(await invitee.getByRole('button').filter({ hasText: /Save|Delete/ }).count()).toBe(0);
    for (const [route, what] of [
      ['/settings/invitations', 'invitations'],
      ['/settings/api-keys', 'API keys'],
      ['/settings/webhooks', 'webhooks'],
      ['/settings/domains', 'domains'],
      ['/settings/sso', 'single sign-on'],
      ['/settings/directory', 'the directory'],
      ['/settings/audit-log', 'the audit log'],
    ]) {
      await invitee.goto(app(route));
      await expect.poll(() => invitee.getByRole('heading', { name: `You cannot manage ${what} here` }).count()).toBe(1);
      expect(await invitee.getByRole('textbox').count()).toBe(0);
    }
    await shootAndCheck(invitee, 'refused');

    // The owner makes the invitee an admin; the invitee's pages follow.
    await owner.goto(app('/settings/members'));
    await owner.getByRole('combobox', { name: 'Role of Ivan Invitee' }).selectOption('admin');
    await expect.poll(() => status(owner).textContent()).toBe('Ivan Invitee is now an admin.');
    await shootAndCheck(owner, 'members');
    await invitee.goto(app('/settings/members'));
    await expect.poll(() => navigation.getByRole('link').allTextContents()).toEqual(['General', 'Members', 'Invitations', 'API keys', 'Webhooks', 'Domains', 'Single sign-on', 'Directory', 'Audit log']);
    await invitee.goto(app('/settings/invitations'));
    await expect.poll(() => invitee.getByRole('heading', { name: 'Invitations' }).count()).toBe(1);

    // An admin may not remove an owner: the backend's reason, in words.
    await invitee.goto(app('/settings/members'));
    await invitee.getByRole('button', { name: 'Remove Olivia Owner' }).click();
    await invitee.getByRole('alertdialog').getByRole('button', { name: 'Remove' }).click();
    await expect.poll(() => alert(invitee).textContent()).toBe('Only an owner can remove an owner');
    await shootAndCheck(invitee, 'members-refused');

    // The owner removes the invitee: their next request is refused.
    expect(await statusFromPage(invitee, '/Projects')).toBe(200);
    await owner.getByRole('button', { name: 'Remove Ivan Invitee' }).click();
    await owner.getByRole('alertdialog').getByRole('button', { name: 'Remove' }).click();
    await expect.poll(() => status(owner).textContent()).toBe('Ivan Invitee was removed.');
    expect(await statusFromPage(invitee, '/Projects')).toBe(403);
    await inviteeContext.close();
  }, 240_000);

  it('an API key made on the page works on its entity only, and not after it is revoked', async () => {
    await ownerContext.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: app('').replace(/\/$/, '') });
    await owner.goto(app('/settings/api-keys'));
    await expect.poll(() => owner.getByText('No keys yet.').count()).toBe(1);
    // Nothing to allow: the page says so, in words.
    await owner.getByLabel('Name').fill('Nightly export');
    await owner.getByRole('button', { name: 'Create key' }).click();
    await expect.poll(() => alert(owner).textContent()).toBe('Choose at least one operation the key may do.');
    await owner.getByLabel('Projects: list').check();
    await owner.getByLabel('Projects: read').check();
    await owner.getByLabel('Expires').selectOption({ label: 'In 30 days' });
    await shootAndCheck(owner, 'api-keys-new');
    await owner.getByRole('button', { name: 'Create key' }).click();
    const key = (await owner.getByLabel('The new key').textContent())!.trim();
    expect(key.length).toBeGreaterThan(20);
    await owner.getByRole('button', { name: 'Copy the key' }).click();
    await expect.poll(() => owner.getByText('Copied', { exact: true }).count()).toBe(1);
    expect(await owner.evaluate(() => navigator.clipboard.readText())).toBe(key);
    await shootAndCheck(owner, 'api-key-created');

    const withKey = (route: string) => fetch(api(route), { headers: { 'x-api-key': key } }).then((response) => response.status);
    expect(await withKey('/Projects')).toBe(200);
    expect(await withKey('/members')).toBe(403);

    await owner.getByRole('button', { name: 'Done' }).click();
    // Each instance writes a key's use to its row every second (MACHINE_KEY_USAGE_FLUSH_MS): the list shows it after that.
    const row = owner.getByRole('row', { name: /Nightly export/ });
    await expect
      .poll(async () => {
        await owner.reload();
        return row.getByRole('cell').nth(2).textContent();
      })
      .not.toBe('Never');
    expect(await row.getByRole('cell').nth(3).textContent()).toMatch(/^\d+$/);
    expect(await row.textContent()).toContain('Project: list, read');
    await shootAndCheck(owner, 'api-keys');

    await owner.getByRole('button', { name: 'Revoke Nightly export' }).click();
    await owner.getByRole('alertdialog').getByRole('button', { name: 'Revoke' }).click();
    await expect.poll(() => status(owner).textContent()).toContain('Nightly export is revoked');
    expect(await withKey('/Projects')).toBe(401);
  }, 120_000);

  it('a webhook added on the page receives a change signed; the delivery log shows it, and a redelivery arrives with the same webhook-id', async () => {
    await owner.goto(app('/settings/webhooks'));
    await expect.poll(() => owner.getByText('No endpoints yet.').count()).toBe(1);
    // A URL the backend refuses: its reason, field by field.
    await owner.getByLabel('Endpoint URL').fill('ftp://example.com/hooks');
    await owner.getByRole('button', { name: 'Add endpoint' }).click();
    await expect.poll(() => alert(owner).textContent()).toMatch(/^This URL cannot receive webhooks.*url: /);
    await owner.getByLabel('Endpoint URL').fill(receiver.url);
    await owner.getByLabel('Description (optional)').fill('The test receiver');
    // The catalogue comes in groups, closed until opened (short at a phone's width too).
    expect(await owner.getByRole('checkbox', { name: /^project\.created / }).isVisible()).toBe(false);
    await owner.locator('summary', { hasText: /^project \(/ }).click();
    await owner.getByRole('checkbox', { name: /^project\.created / }).check();
    await owner.getByRole('checkbox', { name: /^project\.updated / }).check();
    await expect.poll(() => owner.locator('summary', { hasText: /^project \(/ }).textContent()).toBe('project (2 of 3 chosen)');
    await shootAndCheck(owner, 'webhooks-new');
    await owner.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = (await owner.getByLabel('The secret', { exact: true }).textContent())!.trim();
    expect(secret).toMatch(/^whsec_/);
    receiver.state.secret = secret;
    await owner.getByRole('button', { name: 'Copy the secret' }).click();
    await expect.poll(() => owner.getByText('Copied', { exact: true }).count()).toBe(1);
    expect(await owner.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await shootAndCheck(owner, 'webhook-secret');
    await owner.getByRole('button', { name: 'Done' }).click();

    // A record's change in the organization arrives, signed with that secret.
    const created = await owner.evaluate(
      async ({ url, organizationId }) =>
        (await fetch(url, { method: 'POST', credentials: 'include', headers: { 'x-organization-id': organizationId, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Hooked' }) })).status,
      { url: api('/Projects'), organizationId },
    );
    expect(created).toBe(201);
    await expect.poll(() => receiver.received.filter((entry) => entry.verified?.type === 'project.created').length, { timeout: 30_000 }).toBe(1);
    const first = receiver.received.find((entry) => entry.verified?.type === 'project.created')!;
    expect(first.verified!.data).toMatchObject({ record: { name: 'Hooked' } });
    const webhookId = first.headers['webhook-id']!;

    // The delivery log: the event, sent, one attempt, the receiver's 2xx.
    const endpoint = owner.getByRole('article', { name: receiver.url });
    await endpoint.getByRole('button', { name: 'Show the delivery log' }).click();
    const row = endpoint.getByRole('row', { name: new RegExp(webhookId) });
    await expect
      .poll(async () => {
        await endpoint.getByRole('button', { name: 'Refresh' }).click();
        return (await row.count()) ? row.getByRole('cell').nth(1).textContent() : '';
      })
      .toBe('sent');
    expect(await row.getByRole('cell').allTextContents()).toEqual([`project.created${webhookId}`, 'sent', '1', '2xx', expect.any(String), 'Redeliver']);
    await shootAndCheck(owner, 'webhook-deliveries');

    // Redelivered from the page: the same message again, the same webhook-id, still verified.
    await row.getByRole('button', { name: /^Redeliver/ }).click();
    await expect.poll(() => status(owner).filter({ hasText: 'project.created is sent again, with the same webhook-id.' }).count()).toBe(1);
    await expect.poll(() => receiver.received.filter((entry) => entry.headers['webhook-id'] === webhookId && entry.verified).length, { timeout: 30_000 }).toBe(2);

    // "Send test event": a signed webhook.test to this endpoint, whatever its event types, in its delivery log.
    await owner.getByRole('button', { name: `Send test event to ${receiver.url}` }).click();
    await expect.poll(() => status(owner).filter({ hasText: `A test event is on its way to ${receiver.url}; the delivery log shows it.` }).count()).toBe(1);
    await expect.poll(() => receiver.received.filter((entry) => entry.verified?.type === 'webhook.test').length, { timeout: 30_000 }).toBe(1);
    const testEvent = receiver.received.find((entry) => entry.verified?.type === 'webhook.test')!;
    expect(testEvent.verified).toMatchObject({ organizationId, data: { entity: 'webhook_endpoint', actor: { type: 'user' } } });
    const testRow = endpoint.getByRole('row', { name: new RegExp(testEvent.headers['webhook-id']!) });
    await expect
      .poll(async () => {
        await endpoint.getByRole('button', { name: 'Refresh' }).click();
        return (await testRow.count()) ? testRow.getByRole('cell').nth(1).textContent() : '';
      })
      .toBe('sent');
    // The Redeliver button stays within the table's box at a laptop's width (it used to be cut off).
    const fits = await endpoint.locator('.table-wrap').evaluate((box) => box.scrollWidth <= box.clientWidth);
    expect(fits).toBe(true);

    // Disabled, nothing goes out, and a test event is refused in words; enabled again. A rotated secret is shown once and signs from then on.
    await owner.getByRole('button', { name: `Disable ${receiver.url}` }).click();
    await expect.poll(() => status(owner).filter({ hasText: `${receiver.url} is disabled: nothing is sent to it.` }).count()).toBe(1);
    expect(await endpoint.textContent()).toContain('Disabled: disabled by an owner or admin');
    await owner.getByRole('button', { name: `Send test event to ${receiver.url}` }).click();
    await expect.poll(() => alert(owner).textContent()).toBe('This endpoint is disabled: enable it first to send it a test event');
    await owner.getByRole('button', { name: `Enable ${receiver.url}` }).click();
    await expect.poll(() => status(owner).filter({ hasText: `${receiver.url} is enabled again.` }).count()).toBe(1);
    await owner.getByRole('button', { name: `Rotate secret of ${receiver.url}` }).click();
    await owner.getByRole('alertdialog').getByRole('button', { name: 'Rotate' }).click();
    const rotated = (await owner.getByLabel('The secret', { exact: true }).textContent())!.trim();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    await owner.getByRole('button', { name: 'Done' }).click();

    // Deleted after a confirmation: the page says what to do next.
    await owner.getByRole('button', { name: `Delete ${receiver.url}` }).click();
    await owner.getByRole('alertdialog').getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => owner.getByText('No endpoints yet.').count()).toBe(1);
  }, 120_000);

  it('the audit log shows those actions with their actors; each filter narrows it; the CSV export holds exactly the filtered rows', async () => {
    // A change by a machine key, revoked since: the log names it from its key.created event.
    const fromOwner = (route: string, method: string, body?: unknown) =>
      owner.evaluate(
        async ({ url, organizationId, method, body }) => {
          const response = await fetch(url, { method, credentials: 'include', headers: { 'x-organization-id': organizationId, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
          return { status: response.status, body: response.status === 204 ? undefined : await response.json() };
        },
        { url: api(route), organizationId, method, body },
      );
    const importer = await fromOwner('/api/auth/api-keys', 'POST', { name: 'Importer', permissions: { Project: ['list', 'update'] } });
    expect(importer.status, JSON.stringify(importer.body)).toBe(201);
    const withImporter = (route: string, init: RequestInit = {}) => fetch(api(route), { ...init, headers: { 'x-api-key': importer.body.data.key, 'content-type': 'application/json' } });
    const [project] = (await (await withImporter('/Projects')).json()).data;
    expect((await withImporter(`/Projects/${project.id}`, { method: 'PATCH', body: JSON.stringify({ name: 'Imported' }) })).status).toBe(200);
    expect((await fromOwner(`/api/auth/api-keys/${importer.body.data.id}`, 'DELETE')).status).toBe(204);

    const events = owner.getByRole('table', { name: 'Events', exact: true });
    const matching = owner.getByText(/^\d+ events? match/);
    // From the navigation to the table with its count (the figure bench/README.md quotes for a small organization).
    const started = performance.now();
    await owner.goto(app('/settings/audit-log'));
    await matching.waitFor();
    console.log(`the audit log page showed its events ${Math.round(performance.now() - started)} ms after the navigation began`);
    const countShown = async () => Number((await matching.textContent())!.match(/^(\d+)/)![1]);
    /** The filters set on the form and applied; then the count the page shows once it has the answer. */
    const filterBy = async (fields: { actor?: string; type?: string; entity?: string; from?: string; to?: string }) => {
      await owner.getByRole('button', { name: 'Clear' }).click();
      if (fields.actor) await owner.getByLabel('Actor').selectOption({ label: fields.actor });
      if (fields.type) await owner.getByLabel('Event type').selectOption(fields.type);
      if (fields.entity) await owner.getByLabel('Entity').fill(fields.entity);
      // Exactly: the chart's name says "from ... to ..." too.
      if (fields.from) await owner.getByLabel('From', { exact: true }).fill(fields.from);
      if (fields.to) await owner.getByLabel('To', { exact: true }).fill(fields.to);
      await Promise.all([owner.waitForResponse((response) => response.url().includes('/audit-events?')), owner.getByRole('button', { name: 'Apply filters' }).click()]);
    };
    /** What the backend has for the same filter, all pages (the test's own reading, beside the page's). */
    const fromBackend = (query: string) =>
      owner.evaluate(
        async ({ url, organizationId }) => {
          const rows: { id: string; type: string; actorType: string; actorId: string | null; entity: string | null }[] = [];
          for (let page = 1; ; page++) {
            const answer = await (await fetch(`${url}&limit=100&page=${page}`, { credentials: 'include', headers: { 'x-organization-id': organizationId } })).json();
            rows.push(...answer.data);
            if (page >= answer.meta.totalPages) return rows;
          }
        },
        { url: api(`/audit-events?${query}`), organizationId },
      );
    /** The table's rows: time, the event's sentence, actor and entity columns. */
    const shownRows = () => events.locator('tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.firstChild?.textContent ?? '')));
    /** The event type under each row's sentence. */
    const shownTypes = () => events.locator('tbody tr td[data-label="Event"] .font-mono').allTextContents();

    await expect.poll(() => matching.count()).toBe(1);
    const everything = (await fromBackend('')).length;
    await expect.poll(countShown).toBe(everything);
    await expect.poll(() => owner.getByRole('img', { name: new RegExp(`^${everything} events from `) }).count()).toBe(1);
    await shootAndCheck(owner, 'audit-log');

    // What the earlier tests did, each by its actor: one filter by type at a time.
    for (const type of ['invitation.sent', 'member.updated', 'key.created', 'key.revoked', 'webhook_endpoint.created', 'webhook_endpoint.deleted', 'project.created']) {
      await filterBy({ type });
      const expected = (await fromBackend(`type=${type}`)).length;
      expect(expected, type).toBeGreaterThan(0);
      expect(expected, type).toBeLessThan(everything);
      await expect.poll(countShown, { message: type }).toBe(expected);
      await expect.poll(async () => {
        const types = await shownTypes();
        return (await shownRows()).map(([, , actor], index) => `${types[index]} by ${actor}`);
      }, { message: type }).toEqual(Array(expected).fill(`${type} by Olivia Owner`));
    }
    // Each in a sentence: the role change says whose, from what, to what.
    await filterBy({ type: 'member.updated' });
    await expect.poll(async () => (await shownRows()).map(([, sentence]) => sentence)).toEqual(["Olivia Owner changed Ivan Invitee's role from member to admin"]);
    await filterBy({ type: 'project.updated' });
    await expect.poll(async () => (await shownRows()).map(([, , actor]) => actor)).toEqual(['A machine key: Importer']);
    // The app's server (Better Auth through the adapter) and authstrap itself acted too: said in words.
    const logged = await fromBackend('');
    for (const [actorType, words] of [['service', 'The service key'], ['system', 'authstrap (system)']] as const) {
      const made = logged.find((event) => event.actorType === actorType);
      expect(made, actorType).toBeDefined();
      await filterBy({ type: made!.type });
      const expected = logged.filter((event) => event.type === made!.type).map((event) => (event.actorType === actorType ? words : 'someone else'));
      await expect.poll(async () => (await shownRows()).map(([, , actor]) => (actor === words ? words : 'someone else')), { message: actorType }).toEqual(expected);
    }
    // The invitee's own joining, after he was removed: his id, no longer a member's name.
    await filterBy({ type: 'invitation.accepted' });
    await expect.poll(async () => (await shownRows()).map(([, , actor]) => actor)).toEqual(['A former member']);

    // Each row's JSON opens from the keyboard.
    const details = events.locator('details').first();
    await details.locator('summary').focus();
    await owner.keyboard.press('Enter');
    await expect.poll(() => details.evaluate((element: HTMLDetailsElement) => element.open)).toBe(true);
    expect(JSON.parse((await details.locator('pre').textContent())!)).toMatchObject({ type: 'invitation.accepted', organizationId });

    // The actor, the entity and the days narrow it too.
    await filterBy({ actor: 'Olivia Owner' });
    const byOlivia = await fromBackend(`actorId=${(await fromBackend('type=invitation.sent'))[0]!.actorId}`);
    expect(byOlivia.length).toBeLessThan(everything);
    await expect.poll(countShown).toBe(byOlivia.length);
    await filterBy({ entity: 'webhook_endpoint' });
    const webhookRows = await fromBackend('entity=webhook_endpoint');
    expect(webhookRows.length).toBeLessThan(everything);
    await expect.poll(countShown).toBe(webhookRows.length);
    expect(new Set((await shownRows()).map(([, , , entity]) => entity))).toEqual(new Set(['webhook_endpoint']));
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 24 * 60 * 60 * 1000).toISOString().slice(0, 10);
    await filterBy({ from: today, to: today });
    await expect.poll(countShown).toBe(everything);
    await filterBy({ from: tomorrow });
    await expect.poll(() => owner.getByText('No events match these filters.', { exact: false }).count()).toBe(1);
    await filterBy({ to: '2000-01-01' });
    await expect.poll(countShown).toBe(0);

    // The CSV of a filtered range: exactly its rows, every page of them, as the backend lists them.
    await filterBy({ entity: 'webhook_endpoint', from: today, to: today });
    await expect.poll(countShown).toBe(webhookRows.length);
    const [download] = await Promise.all([owner.waitForEvent('download'), owner.getByRole('button', { name: 'Export CSV' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^audit-log-\d{4}-\d{2}-\d{2}\.csv$/);
    const [header, ...rows] = parseCsv(fs.readFileSync((await download.path())!, 'utf8'));
    expect(header!.slice(0, 3)).toEqual(['id', 'createdAt', 'type']);
    expect(rows.map((row) => row[0])).toEqual(webhookRows.map((row) => row.id));
    expect(rows.map((row) => row[2])).toEqual(webhookRows.map((row) => row.type));
    await expect.poll(() => status(owner).textContent()).toBe('The CSV file of the filtered events is downloaded.');
    await shootAndCheck(owner, 'audit-log-filtered');
  }, 120_000);

  it('the security page lists where the user is signed in and what happened to the account', async () => {
    await owner.goto(app('/account'));
    await owner.getByRole('link', { name: /^Security/ }).click();
    await owner.waitForURL(app('/account/security'));
    const sessions = owner.getByRole('region', { name: 'Where you are signed in' });
    await expect.poll(() => sessions.getByRole('cell', { name: 'this one' }).count()).toBe(1);
    // A wrong password for her address at the backend: the page shows it, in words.
    const failed = await fetch(api('/api/auth/sign-in/email'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'olivia@example.com', password: 'not her password' }) });
    expect(failed.status).toBe(401);
    await owner.reload();
    const events = owner.getByRole('region', { name: 'Security events' });
    await expect.poll(() => events.getByRole('cell', { name: /^A sign-in as olivia@example\.com failed\s*session\.sign_in_failed$/ }).count()).toBe(1);
    await shootAndCheck(owner, 'security');
  }, 60_000);

  it('an IT admin verifies a domain by its TXT record, connects a directory whose token (shown once) provisions people over SCIM, and maps a group to a role', async () => {
    // An organization of its own (her personal one), so that this test runs alone too (-t).
    const context = await browser.newContext();
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: app('').replace(/\/$/, '') });
    const admin = await context.newPage();
    try {
      const domain = 'acme-console.example';
      await signUp(admin, 'Ines IT', `ines@${domain}`);

      // Domains: a claim the backend refuses, in its words; then the claim, with the record to publish.
      await admin.goto(app('/settings/domains'));
      await expect.poll(() => admin.getByText('No domains yet.').count()).toBe(1);
      await admin.getByRole('textbox', { name: 'Domain' }).fill('intranet');
      await admin.getByRole('button', { name: 'Claim domain' }).click();
      await expect.poll(() => alert(admin).textContent()).toMatch(/domain: /);
      await admin.getByRole('textbox', { name: 'Domain' }).fill(domain.toUpperCase());
      await admin.getByRole('button', { name: 'Claim domain' }).click();
      await expect.poll(() => status(admin).filter({ hasText: `${domain} is claimed.` }).count()).toBe(1);
      const claim = admin.getByRole('article', { name: domain });
      const recordName = (await claim.getByLabel(`Record name for ${domain}`).textContent())!.trim();
      const recordValue = (await claim.getByLabel(`Record value for ${domain}`).textContent())!.trim();
      expect(recordName).toBe(`_authstrap-verification.${domain}`);
      expect(recordValue).toMatch(/^authstrap-domain-verification=\S{20,}$/);
      await claim.getByRole('button', { name: 'Copy the value' }).click();
      await expect.poll(() => claim.getByText('Copied', { exact: true }).count()).toBe(1);
      expect(await admin.evaluate(() => navigator.clipboard.readText())).toBe(recordValue);
      expect(await claim.locator('.badge').textContent()).toBe('pending');
      // Checked before the record is published: still pending, and why.
      await claim.getByRole('button', { name: `Verify now: ${domain}` }).click();
      await expect.poll(() => alert(admin).filter({ hasText: `${domain} is not verified: record not found.` }).count()).toBe(1);
      await expect.poll(() => claim.textContent()).toContain(': record not found.');
      await shootAndCheck(admin, 'domains-claimed');
      // Published as the page shows it: verified.
      dns.setTxt(recordName, [recordValue]);
      await claim.getByRole('button', { name: `Verify now: ${domain}` }).click();
      await expect.poll(() => status(admin).filter({ hasText: `${domain} is verified.` }).count()).toBe(1);
      await expect.poll(() => claim.locator('.badge').textContent()).toBe('verified');
      await shootAndCheck(admin, 'domains');
      // A claim removed after a confirmation.
      await admin.getByRole('textbox', { name: 'Domain' }).fill(`eu.${domain}`);
      await admin.getByRole('button', { name: 'Claim domain' }).click();
      await admin.getByRole('button', { name: `Remove eu.${domain}` }).click();
      await admin.getByRole('alertdialog').getByRole('button', { name: 'Remove' }).click();
      await expect.poll(() => status(admin).filter({ hasText: `eu.${domain} is removed.` }).count()).toBe(1);
      expect(await admin.getByRole('article').count()).toBe(1);

      // Directory: connected, its base URL and token shown once.
      await admin.getByRole('navigation', { name: 'Organization settings' }).getByRole('link', { name: 'Directory' }).click();
      await admin.waitForURL(app('/settings/directory'));
      await expect.poll(() => admin.getByText('No directory yet.').count()).toBe(1);
      await admin.getByRole('textbox', { name: 'Name', exact: true }).fill('Okta');
      await admin.getByLabel('Identity provider').selectOption({ label: 'Okta' });
      await admin.getByRole('button', { name: 'Connect directory' }).click();
      const shown = admin.getByRole('region', { name: "The directory's token" });
      const token = (await shown.getByLabel('The token', { exact: true }).textContent())!.trim();
      const baseUrl = (await shown.getByLabel('The SCIM base URL', { exact: true }).textContent())!.trim();
      expect(token).toMatch(/^scim_/);
      expect(baseUrl).toMatch(new RegExp(`^${api('/scim/v2/')}[0-9a-f-]{36}$`));
      expect(await shown.textContent()).toContain('it is not shown again');
      await shown.getByRole('button', { name: 'Copy the token' }).click();
      await expect.poll(() => admin.evaluate(() => navigator.clipboard.readText())).toBe(token);
      await shootAndCheck(admin, 'directory-token');
      await admin.getByRole('button', { name: 'Done' }).click();
      // Read again: the token is never shown again, only its first characters.
      await admin.reload();
      const directory = admin.getByRole('article', { name: 'Okta' });
      await directory.waitFor();
      expect(await admin.locator('body').textContent()).not.toContain(token);
      expect(await directory.getByRole('region', { name: 'Tokens of Okta' }).textContent()).toContain(`${token.slice(0, 10)}…`);
      // The setup steps of Okta, field by field, with this directory's base URL.
      await directory.locator('summary', { hasText: 'Set up Okta' }).click();
      expect(await directory.getByRole('row', { name: /^SCIM connector base URL/ }).textContent()).toContain(baseUrl);

      // The identity provider's requests, as Okta sends them, with the token: a person, and one assigned inactive.
      const scim = async (method: string, resource: string, body: unknown, bearer = token) => {
        const response = await fetch(`${baseUrl}${resource}`, { method, headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/scim+json' }, body: JSON.stringify(body) });
        return { status: response.status, body: (await response.json()) as { id: string } };
      };
      const user = (name: string, active: boolean) => ({
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        userName: `${name.split(' ')[0]!.toLowerCase()}@${domain}`,
        name: { givenName: name.split(' ')[0], familyName: name.split(' ')[1] },
        displayName: name,
        emails: [{ value: `${name.split(' ')[0]!.toLowerCase()}@${domain}`, type: 'work', primary: true }],
        active,
      });
      const sam = await scim('POST', '/Users', user('Sam Scim', true));
      expect(sam.status, JSON.stringify(sam.body)).toBe(201);
      expect((await scim('POST', '/Users', user('Pat Paused', false))).status).toBe(201);
      const group = await scim('POST', '/Groups', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'Engineering admins', members: [{ value: sam.body.id }] });
      expect(group.status, JSON.stringify(group.body)).toBe(201);
      // The same create again: refused (409 uniqueness), and the admin reads it in the request log.
      expect((await scim('POST', '/Users', user('Sam Scim', true))).status).toBe(409);
      // The log is written about once a second.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await directory.getByRole('button', { name: 'Refresh users, groups and requests' }).click();
      const requests = directory.getByRole('region', { name: 'Recent requests of Okta' });
      await expect.poll(() => requests.getByRole('row', { name: /POST \/Users 409 uniqueness/ }).count()).toBe(1);
      expect(await requests.getByRole('row', { name: /POST \/Groups 201/ }).count()).toBe(1);
      expect(await requests.getByRole('row', { name: /POST \/Users 201/ }).count()).toBe(2);
      const users = directory.getByRole('region', { name: 'Users of Okta' });
      await expect.poll(() => users.getByRole('row', { name: /Sam Scim/ }).locator('.badge').textContent()).toBe('member');
      expect(await users.getByRole('row', { name: /Pat Paused/ }).locator('.badge').textContent()).toBe('suspended');
      await expect.poll(() => directory.textContent()).toMatch(/· last request /);

      // The group mapped to admin, saved whole: Sam is an admin at once.
      const groups = directory.getByRole('region', { name: 'Groups of Okta' });
      expect(await groups.getByRole('row', { name: /Engineering admins/ }).getByRole('cell').nth(1).textContent()).toBe('1');
      const mapping = groups.getByRole('combobox', { name: 'Role of Engineering admins' });
      expect(await mapping.locator('option').allTextContents()).toEqual(['none', 'member', 'admin', 'owner']);
      await mapping.selectOption('admin');
      await groups.getByRole('button', { name: 'Save role mappings' }).click();
      await expect.poll(() => status(admin).filter({ hasText: 'The role mappings are saved' }).count()).toBe(1);
      await shootAndCheck(admin, 'directory');
      await admin.reload();
      await expect.poll(() => mapping.inputValue()).toBe('admin');
      await admin.goto(app('/settings/members'));
      await expect.poll(() => admin.getByRole('combobox', { name: 'Role of Sam Scim' }).inputValue()).toBe('admin');

      // Ines provisioned too, in no mapped group: saving would make her a member, and leave the organization without an owner.
      expect((await scim('POST', '/Users', user('Ines IT', true))).status).toBe(201);
      await admin.goto(app('/settings/directory'));
      await groups.getByRole('button', { name: 'Save role mappings' }).click();
      await expect.poll(() => alert(admin).textContent()).toMatch(/^Not saved\. This would leave the organization without an owner/);
      await shootAndCheck(admin, 'directory-last-owner');
      await admin.goto(app('/settings/members'));
      await expect.poll(() => admin.getByRole('row', { name: /Ines IT/ }).getByRole('cell').nth(1).textContent()).toBe('owner');

      // The members page marks whom the directory provisioned, and leaves what it owns to it: Sam's
      // role and removal (a group maps roles), his name and address (a verified domain).
      const samRow = admin.getByRole('row', { name: /Sam Scim/ });
      expect(await samRow.locator('.badge').textContent()).toBe('Managed by Okta');
      expect(await samRow.getByRole('combobox', { name: 'Role of Sam Scim' }).isDisabled()).toBe(true);
      expect(await samRow.getByRole('button', { name: 'Remove Sam Scim' }).isDisabled()).toBe(true);
      expect(await samRow.getByRole('cell').first().textContent()).toContain('Name and address come from Okta. Role and removal follow their groups in Okta.');
      await shootAndCheck(admin, 'members-directory');
      // Live: a person the directory provisions appears without a reload, and goes when it deprovisions them.
      await expect.poll(() => admin.getByRole('status', { name: 'Live updates: on' }).count()).toBe(1);
      const lee = await scim('POST', '/Users', user('Lee Live', true));
      expect(lee.status).toBe(201);
      await expect.poll(() => admin.getByRole('row', { name: /Lee Live/ }).locator('.badge').textContent()).toBe('Managed by Okta');
      expect(await scim('PATCH', `/Users/${lee.body.id}`, { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', path: 'active', value: false }] })).toMatchObject({ status: 200 });
      await expect.poll(() => admin.getByRole('row', { name: /Lee Live/ }).count()).toBe(0);

      // Rotated with no overlap: the new token is shown once and works; the first one is refused at once.
      await admin.goto(app('/settings/directory'));
      await directory.getByLabel('When rotating, the current token').selectOption({ label: 'stops at once' });
      await directory.getByRole('button', { name: 'Rotate token of Okta' }).click();
      await admin.getByRole('alertdialog').getByRole('button', { name: 'Rotate' }).click();
      const rotated = (await shown.getByLabel('The token', { exact: true }).textContent())!.trim();
      expect(rotated).toMatch(/^scim_/);
      expect(rotated).not.toBe(token);
      const list = (bearer: string) => fetch(`${baseUrl}/Users`, { headers: { authorization: `Bearer ${bearer}` } }).then((response) => response.status);
      expect(await list(token)).toBe(401);
      expect(await list(rotated)).toBe(200);
      await admin.getByRole('button', { name: 'Done' }).click();

      // At a phone's width, with a domain, a directory, its users and groups: nothing wider than the screen but the tables, which scroll in their own box.
      await admin.setViewportSize({ width: 390, height: 844 });
      const tooWide = () =>
        admin.evaluate(() =>
          [...document.querySelectorAll('body *')]
            .filter((element) => element.getBoundingClientRect().right > document.documentElement.clientWidth + 1 && !element.closest('.table-wrap'))
            .map((element) => `${element.tagName.toLowerCase()}.${element.className} "${element.textContent!.slice(0, 40)}" ${Math.round(element.getBoundingClientRect().right)}`),
        );
      await directory.locator('summary', { hasText: 'Set up Okta' }).click();
      await expect.poll(() => users.getByRole('row', { name: /Sam Scim/ }).count()).toBe(1);
      expect(await tooWide()).toEqual([]);
      await shootAndCheck(admin, 'directory-phone');
      await admin.goto(app('/settings/members'));
      await expect.poll(() => admin.getByRole('row', { name: /Sam Scim/ }).locator('.badge').textContent()).toBe('Managed by Okta');
      expect(await tooWide()).toEqual([]);
      await shootAndCheck(admin, 'members-directory-phone');
      await admin.goto(app('/settings/domains'));
      await expect.poll(() => claim.locator('.badge').textContent()).toBe('verified');
      expect(await tooWide()).toEqual([]);
      await shootAndCheck(admin, 'domains-phone');
    } finally {
      await context.close();
    }
  }, 180_000);

  it('at a phone\'s width the settings stay usable', async () => {
    await owner.setViewportSize({ width: 390, height: 844 });
    await owner.goto(app('/settings/members'));
    await expect.poll(() => owner.getByRole('cell', { name: /Olivia Owner/ }).count()).toBe(1);
    // Nothing wider than the screen but the tables, which scroll in their own box.
    const tooWide = await owner.evaluate(() =>
      [...document.querySelectorAll('body *')]
        .filter((element) => element.getBoundingClientRect().right > document.documentElement.clientWidth + 1 && !element.closest('.table-wrap'))
        .map((element) => `${element.tagName.toLowerCase()}.${element.className}`),
    );
    expect(tooWide).toEqual([]);
    await shootAndCheck(owner, 'members-phone');
    await owner.goto(app('/settings/webhooks'));
    await expect.poll(() => owner.getByText('No endpoints yet.').count()).toBe(1);
    expect(await owner.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth)).toBe(true);
    await shootAndCheck(owner, 'webhooks-phone');
    await owner.goto(app('/settings/audit-log'));
    await expect.poll(() => owner.getByRole('table', { name: 'Events', exact: true }).count()).toBe(1);
    const tooWideAuditLog = await owner.evaluate(() =>
      [...document.querySelectorAll('body *')]
        .filter((element) => element.getBoundingClientRect().right > document.documentElement.clientWidth + 1 && !element.closest('.table-wrap'))
        .map((element) => `${element.tagName.toLowerCase()}.${element.className}`),
    );
    expect(tooWideAuditLog).toEqual([]);
    expect(await owner.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth)).toBe(true);
    // Each event a card, stacked: the table does not scroll sideways, and the actor is in sight.
    const eventsTable = owner.getByRole('table', { name: 'Events', exact: true });
    expect(await eventsTable.evaluate((table) => table.closest('.table-wrap')!.scrollWidth <= table.closest('.table-wrap')!.clientWidth)).toBe(true);
    const actor = eventsTable.locator('tbody tr').first().locator('td[data-label="Actor"]');
    await actor.scrollIntoViewIfNeeded();
    const box = (await actor.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(390);
    expect(box.y).toBeGreaterThanOrEqual(0);
    expect(box.y + box.height).toBeLessThanOrEqual(844);
    expect((await actor.textContent())!.trim()).not.toBe('');
    await shootAndCheck(owner, 'audit-log-phone');
  }, 60_000);
});
