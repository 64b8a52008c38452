import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsServer, type DnsServer } from '../../../examples/saas-backend/test/support/dns-server.js';
import { startOidcProvider, type TestOidcProvider } from '../../../examples/saas-backend/test/support/oidc-provider.js';
import { startSamlIdp, type TestSamlIdp } from '../../../examples/saas-backend/test/support/saml-idp.js';
import { repoRoot, tempDir } from './support/cli.js';
import { expectAccessible, shootAndCheck as shootAndCheckInto, signUpThroughPage, startGeneratedApp, type GeneratedApp } from './support/frontend.js';

/**
 * Single sign-on in the console of the app `setup --frontend` writes, in Debian's Chromium, against
 * real identity providers on loopback (`oidc-provider`, and the pysaml2 IdP whose metadata XML is
 * uploaded) and a DNS server there for the domain's TXT record: an owner verifies the company's
 * domain, adds an OIDC and a SAML connection on Settings > Single sign-on (the SP values shown to
 * copy), tests the OIDC one through the provider and enables it, and requires SSO; a new employee
 * signs in with "Sign in with SSO" and lands in the organization as a member; the owner tests and
 * enables the SAML one too (the IdP's form posts to the ACS through the browser), and the next new
 * employee, offered both by name, picks it and lands with its default role, admin; a password
 * sign-in for an address of the domain is refused with the way to SSO (on Better Auth's path, the
 * page's, and on the backend's own); the owner's break-glass password sign-in works and their
 * security events and the organization's audit log say so; the audit log shows the domain, the
 * connections, the policy and each SSO sign-in with its connection;
 * a connection is refreshed, one deleted after the dialog asks, and the last one SSO needs cannot
 * be. axe on each page, a phone's width without sideways scrolling. The screenshots go to
 * docs/images/sso/, where docs/sso.md shows them.
 */

const screenshots = path.join(repoRoot, 'docs/images/sso');
const password = 'correct horse battery';
const domain = 'acme-sso.example';
const ownerEmail = `olivia@${domain}`;
const passwordUserEmail = `pat@${domain}`;
const employeeEmail = `erin@${domain}`;
const samlEmployeeEmail = `sam@${domain}`;

describe('single sign-on in the console, in Chromium', () => {
  let generated: GeneratedApp | undefined;
  let browser: Browser;
  let owner: Page;
  let ownerContext: BrowserContext;
  let dns: DnsServer;
  let idp: TestOidcProvider;
  let samlIdp: TestSamlIdp;
  let organizationName: string;
  const app = (route = '/') => generated!.app(route);
  const api = (route: string) => generated!.api(route);
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    fs.mkdirSync(screenshots, { recursive: true });
    dns = await startDnsServer();
    idp = await startOidcProvider();
    samlIdp = await startSamlIdp();
    // The identity providers are on loopback, which production refuses; the TXT records are on a DNS server there.
    generated = await startGeneratedApp('ssoco', { DNS_SERVERS: dns.address, SSO_ALLOW_PRIVATE_ADDRESSES: 'true' });
    ({ browser } = generated);
    ownerContext = await browser.newContext();
    owner = await ownerContext.newPage();
  }, 900_000);

  afterAll(async () => {
    for (const context of contexts) await context.close().catch(() => {});
    await generated?.close();
    await idp?.close();
    await samlIdp?.close();
    await dns?.close();
  }, 60_000);

  const shootAndCheck = (page: Page, name: string) => shootAndCheckInto(page, screenshots, name);
  // In <main>: Next's route announcer, outside it, is an alert too.
  const status = (page: Page) => page.locator('main').getByRole('status').filter({ hasText: /\S/ });
  const alert = (page: Page) => page.locator('main').getByRole('alert').filter({ hasText: /\S/ });
  const newPage = async () => {
    const context = await browser.newContext();
    contexts.push(context);
    return context.newPage();
  };
  /**
   * Whether anything on the page reaches past the screen's right edge (tables scroll in their own
   * box): the innermost elements that do, with their width and text, to find the one that pushes.
   */
  const sidewaysOverflow = (page: Page) =>
    page.evaluate(() => {
      const width = document.documentElement.clientWidth;
      const overflows = (element: Element) => element.getBoundingClientRect().right > width + 1 && !element.closest('.table-wrap');
      return {
        page: document.documentElement.scrollWidth > width,
        elements: [...document.querySelectorAll('body *')]
          .filter((element) => overflows(element) && ![...element.children].some(overflows))
          .map((element) => `${element.tagName.toLowerCase()}.${element.className} ${Math.round(element.getBoundingClientRect().width)}px "${(element.textContent ?? '').slice(0, 60)}"`),
      };
    });

  it('an owner verifies the domain, adds an OIDC and a SAML connection, tests and enables one, and requires single sign-on', async () => {
    await signUpThroughPage(owner, app, 'Olivia Owner', ownerEmail, password);
    // Someone of the company who made a password account before single sign-on came.
    const early = await newPage();
    await signUpThroughPage(early, app, 'Pat Password', passwordUserEmail, password);
    organizationName = (await owner.getByLabel('Organization').locator('option:checked').textContent())!.replace(/ \(owner\)$/, '');

    // A member's page: only owners and admins see the SSO settings (here: before any exist).
    await owner.goto(app('/settings/sso'));
    await expect.poll(() => owner.getByText('No connection yet.').count()).toBe(1);
    await expect.poll(() => owner.getByRole('navigation', { name: 'Organization settings' }).getByRole('link', { name: 'Single sign-on' }).getAttribute('aria-current')).toBe('page');
    // Requiring it before anything is set up: the backend's refusal, in its words.
    await owner.getByLabel('Require single sign-on for the verified domains').check();
    await owner.getByRole('button', { name: 'Save policy' }).click();
    await expect.poll(() => alert(owner).textContent()).toMatch(/needs an enabled connection/);
    await owner.getByLabel('Require single sign-on for the verified domains').uncheck();

    // The domain, verified by its TXT record on the DNS server on loopback.
    await owner.goto(app('/settings/domains'));
    await owner.getByRole('textbox', { name: 'Domain' }).fill(domain);
    await owner.getByRole('button', { name: 'Claim domain' }).click();
    const claim = owner.getByRole('article', { name: domain });
    await claim.waitFor();
    dns.setTxt((await claim.getByLabel(`Record name for ${domain}`).textContent())!.trim(), [(await claim.getByLabel(`Record value for ${domain}`).textContent())!.trim()]);
    await claim.getByRole('button', { name: `Verify now: ${domain}` }).click();
    await expect.poll(() => status(owner).filter({ hasText: `${domain} is verified.` }).count()).toBe(1);

    // An OIDC connection: the provider's settings typed in, its setup steps shown for the choice.
    await owner.goto(app('/settings/sso'));
    await owner.getByRole('combobox', { name: 'Identity provider' }).selectOption('generic-oidc');
    await expect.poll(() => owner.getByRole('region', { name: 'Setup steps' }).textContent()).toMatch(/authorization code grant/);
    await owner.getByRole('combobox', { name: 'Identity provider' }).selectOption('okta-oidc');
    await expect.poll(() => owner.getByRole('region', { name: 'Setup steps' }).textContent()).toMatch(/In Okta: Applications, Create App Integration/);
    await owner.getByText('No connection yet.').waitFor();
    await owner.getByRole('heading', { name: 'Require single sign-on' }).waitFor();
    await shootAndCheck(owner, 'sso-empty');
    // A bad issuer: the backend's answer names the field.
    await owner.getByRole('textbox', { name: 'Name', exact: true }).fill('Acme Okta');
    await owner.getByLabel('Issuer URL').fill('http://127.0.0.1:1/nothing-here');
    await owner.getByLabel('Client id').fill('nobody');
    await owner.getByLabel('Client secret').fill('nothing');
    await owner.getByRole('button', { name: 'Add connection' }).click();
    await expect.poll(() => alert(owner).textContent(), { timeout: 30_000 }).toMatch(/oidc\.issuer/);
    const client = idp.newClient();
    await owner.getByLabel('Issuer URL').fill(idp.issuer);
    await owner.getByLabel('Client id').fill(client.clientId);
    await owner.getByLabel('Client secret').fill(client.clientSecret);
    await owner.getByRole('button', { name: 'Add connection' }).click();
    await expect.poll(() => status(owner).filter({ hasText: 'Acme Okta is added as a draft.' }).count(), { timeout: 30_000 }).toBe(1);
    const oidc = owner.getByRole('article', { name: 'Acme Okta' });
    const redirectUri = (await oidc.getByLabel('Redirect URI', { exact: true }).textContent())!.trim();
    expect(redirectUri).toMatch(new RegExp(`^${api('/api/auth/sso/')}[0-9a-f-]{36}/oidc/callback$`));
    expect(await oidc.textContent()).toContain('draft');
    expect(await oidc.textContent()).toContain('set (never shown again)');
    expect(await oidc.textContent()).not.toContain(client.clientSecret);
    // Not tested yet: it cannot be enabled.
    expect(await oidc.getByRole('button', { name: 'Enable Acme Okta' }).isDisabled()).toBe(true);
    idp.registerClient(client, redirectUri);

    // A SAML connection from the IdP's metadata XML, uploaded as a file.
    const metadataFile = path.join(tempDir('authstrap-sso-metadata-'), 'idp-metadata.xml');
    fs.writeFileSync(metadataFile, await (await fetch(samlIdp.metadataUrl(['a']))).text());
    await owner.getByRole('combobox', { name: 'Identity provider' }).selectOption('generic-saml');
    await owner.getByRole('textbox', { name: 'Name', exact: true }).fill('Acme SAML');
    // Its people join as admins (the OIDC connection's as members): the role is the connection's.
    await owner.getByLabel('Role of new members').selectOption('admin');
    await owner.getByLabel('Metadata file').setInputFiles(metadataFile);
    await expect.poll(() => owner.getByLabel('Metadata XML').inputValue()).toContain('EntityDescriptor');
    await owner.getByRole('button', { name: 'Add connection' }).click();
    await expect.poll(() => status(owner).filter({ hasText: 'Acme SAML is added as a draft.' }).count(), { timeout: 30_000 }).toBe(1);
    const saml = owner.getByRole('article', { name: 'Acme SAML' });
    const samlBase = new RegExp(`^${api('/api/auth/sso/')}[0-9a-f-]{36}/saml/`);
    expect((await saml.getByLabel('SP entity ID', { exact: true }).textContent())!.trim()).toMatch(samlBase);
    expect((await saml.getByLabel('ACS URL', { exact: true }).textContent())!.trim()).toMatch(/\/saml\/acs$/);
    const spMetadataUrl = (await saml.getByLabel('SP metadata URL', { exact: true }).textContent())!.trim();
    const spMetadata = await fetch(spMetadataUrl);
    expect(spMetadata.status).toBe(200);
    const spMetadataXml = await spMetadata.text();
    expect(spMetadataXml).toContain('AssertionConsumerService');
    // The IdP's admin gives it the SP metadata (the test IdP's own way of an upload).
    await samlIdp.registerServiceProvider(spMetadataXml);
    expect(await saml.textContent()).toContain('new members join as admin');
    const certificates = saml.getByRole('list', { name: "Acme SAML's signing certificates" });
    await expect.poll(() => certificates.getByRole('listitem').count()).toBe(1);
    // The test IdP's certificate is good for 30 days, so it is already within the warning's 30.
    expect(await certificates.getByRole('note').textContent()).toMatch(/^expires in (29|30) days: give the connection the IdP's next certificate$/);
    // The copy button puts the value on the clipboard.
    await ownerContext.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(app()).origin });
    await oidc.getByRole('button', { name: 'Copy the Redirect URI' }).click();
    await expect.poll(() => owner.evaluate(() => navigator.clipboard.readText())).toBe(redirectUri);

    // The test: through the provider in this tab, back on the connection's page with what it sent.
    idp.setAccount('olivia-at-idp', { email: ownerEmail, name: 'Olivia Owner' });
    idp.signInAs('olivia-at-idp');
    await oidc.getByRole('button', { name: 'Test sign-in: Acme Okta' }).click();
    await owner.waitForURL(/\/settings\/sso\/[0-9a-f-]{36}\?test=done$/, { timeout: 30_000 });
    await expect.poll(() => owner.getByRole('status', { name: 'Test result' }).textContent()).toContain(`The test of Acme Okta passed`);
    expect(await owner.getByRole('status', { name: 'Test result' }).textContent()).toContain(ownerEmail);
    await shootAndCheck(owner, 'sso-tested');
    await owner.getByRole('button', { name: 'Enable Acme Okta' }).click();
    await expect.poll(() => status(owner).filter({ hasText: 'Acme Okta is enabled.' }).count()).toBe(1);
    await expect.poll(() => owner.getByRole('article', { name: 'Acme Okta' }).textContent()).toContain('enabled');

    // Required, with the owners' break-glass: Pat's password session ends.
    await owner.getByLabel('Require single sign-on for the verified domains').check();
    await owner.getByRole('button', { name: 'Save policy' }).click();
    await expect.poll(() => status(owner).filter({ hasText: /^Single sign-on is required\. \d+ sessions? made otherwise ended\.$/ }).count()).toBe(1);
    await expect.poll(() => owner.getByRole('article', { name: 'Acme Okta' }).textContent()).toContain('required');
    await shootAndCheck(owner, 'sso');
    await early.goto(app('/settings/general'));
    await early.waitForURL(app('/sign-in'));
  }, 300_000);

  it('a new employee signs in with "Sign in with SSO" and lands in the organization as a member; an address without SSO is told so', async () => {
    const employee = await newPage();
    await employee.goto(app('/sign-in'));
    await employee.getByRole('link', { name: 'Sign in with SSO' }).click();
    await employee.waitForURL(app('/sign-in/sso'));
    // No verified domain with a connection: refused in words, nothing started.
    await employee.getByLabel('Work e-mail or organization').fill('someone@elsewhere.example');
    await employee.getByRole('button', { name: 'Continue' }).click();
    await expect.poll(() => alert(employee).textContent()).toMatch(/Single sign-on is not set up for this address/);
    await shootAndCheck(employee, 'sign-in-sso-refused');

    idp.setAccount('erin-at-idp', { email: employeeEmail, name: 'Erin Employee' });
    idp.signInAs('erin-at-idp');
    await employee.getByLabel('Work e-mail or organization').fill(employeeEmail);
    await employee.getByRole('button', { name: 'Continue' }).click();
    await employee.waitForURL(app('/projects'), { timeout: 30_000 });
    await expect.poll(() => employee.getByLabel('Organization').locator('option:checked').textContent()).toBe(`${organizationName} (member)`);
    await expect.poll(() => employee.getByRole('link', { name: employeeEmail }).count()).toBe(1);
    // The backend agrees: the session is a single sign-on's, in the organization.
    const session = await employee.evaluate(async (url) => (await (await fetch(url, { credentials: 'include' })).json()).data, api('/api/auth/get-session'));
    expect(session.user.email).toBe(employeeEmail);
    expect(session.organizations).toContainEqual(expect.objectContaining({ name: organizationName, role: 'member' }));
    // Signing out ends the backend's session too: the settings send the browser to sign in.
    await employee.getByRole('button', { name: 'Sign out' }).click();
    await employee.waitForURL(app('/sign-in'));
    await employee.goto(app('/settings/members'));
    await employee.waitForURL(app('/sign-in'));
    expect(await employee.evaluate(async (url) => (await fetch(url, { credentials: 'include' })).status, api('/api/auth/get-session'))).toBe(401);
  }, 180_000);

  it('the owner tests and enables the SAML connection; the next new employee picks it among the two by name and lands with its default role', async () => {
    // The test: to the IdP and back, its response posted to the ACS by the IdP's page in this tab.
    await owner.goto(app('/settings/sso'));
    await samlIdp.next({ user: { nameId: 'olivia-at-saml', email: ownerEmail, name: 'Olivia Owner' } });
    await owner.getByRole('article', { name: 'Acme SAML' }).getByRole('button', { name: 'Test sign-in: Acme SAML' }).click();
    await owner.waitForURL(/\/settings\/sso\/[0-9a-f-]{36}\?test=done$/, { timeout: 30_000 });
    await expect.poll(() => owner.getByRole('status', { name: 'Test result' }).textContent()).toContain('The test of Acme SAML passed');
    expect(await owner.getByRole('status', { name: 'Test result' }).textContent()).toContain(ownerEmail);
    await owner.getByRole('button', { name: 'Enable Acme SAML' }).click();
    await expect.poll(() => status(owner).filter({ hasText: 'Acme SAML is enabled.' }).count()).toBe(1);

    // The domain now has two enabled connections: the page offers both by name.
    const employee = await newPage();
    await employee.goto(app('/sign-in/sso'));
    await employee.getByLabel('Work e-mail or organization').fill(samlEmployeeEmail);
    await employee.getByRole('button', { name: 'Continue', exact: true }).click();
    const choices = employee.getByRole('list', { name: 'Identity providers' });
    await expect.poll(() => choices.getByRole('button').allTextContents()).toEqual(['Continue with Acme Okta', 'Continue with Acme SAML']);
    expect(await alert(employee).count()).toBe(0);
    await shootAndCheck(employee, 'sign-in-sso-choose');
    await employee.setViewportSize({ width: 390, height: 844 });
    expect(await sidewaysOverflow(employee)).toEqual({ page: false, elements: [] });
    await samlIdp.next({ user: { nameId: 'sam-at-saml', email: samlEmployeeEmail, name: 'Sam Saml' } });
    await choices.getByRole('button', { name: 'Continue with Acme SAML' }).click();
    await employee.waitForURL(app('/projects'), { timeout: 30_000 });
    // Made by the SAML sign-in (just in time), in the organization, as the connection's role says.
    expect((await samlIdp.lastRequest()).acs).toMatch(/\/saml\/acs$/);
    await expect.poll(() => employee.getByLabel('Organization').locator('option:checked').textContent()).toBe(`${organizationName} (admin)`);
    const session = await employee.evaluate(async (url) => (await (await fetch(url, { credentials: 'include' })).json()).data, api('/api/auth/get-session'));
    expect(session.user.email).toBe(samlEmployeeEmail);
    expect(session.organizations).toContainEqual(expect.objectContaining({ name: organizationName, role: 'admin' }));
  }, 180_000);

  it('a password sign-in for an address of the domain is refused with the way to SSO; the owner keeps the break-glass password', async () => {
    const refused = await newPage();
    await refused.goto(app('/sign-in'));
    await refused.getByLabel('E-mail').fill(passwordUserEmail);
    await refused.getByLabel('Password').fill(password);
    await refused.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => alert(refused).textContent()).toMatch(/single sign-on/i);
    await shootAndCheck(refused, 'sign-in-sso-required');
    await refused.getByRole('link', { name: 'Sign in with SSO instead' }).click();
    await refused.waitForURL(/\/sign-in\/sso\?email=/);
    expect(await refused.getByLabel('Work e-mail or organization').inputValue()).toBe(passwordUserEmail);
    await shootAndCheck(refused, 'sign-in-sso');
    // The backend's own sign-in route refuses it the same way.
    const direct = await fetch(api('/api/auth/sign-in/email'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: app().replace(/\/$/, '') },
      body: JSON.stringify({ email: passwordUserEmail, password }),
    });
    expect(direct.status).toBe(403);
    expect((await direct.json()).error.code).toBe('SSO_REQUIRED');

    const breakGlass = await newPage();
    await breakGlass.goto(app('/sign-in'));
    await breakGlass.getByLabel('E-mail').fill(ownerEmail);
    await breakGlass.getByLabel('Password').fill(password);
    await breakGlass.getByRole('button', { name: 'Sign in' }).click();
    await breakGlass.waitForURL(app('/projects'));
    // Audited: the owner's own security events say it was the break-glass path.
    await breakGlass.goto(app('/account/security'));
    await expect.poll(() => breakGlass.getByText(/signed in with password \(Better Auth\), break-glass/).count(), { timeout: 15_000 }).toBeGreaterThan(0);
  }, 180_000);

  it("the audit log shows the domain, the connections, the policy, each SSO sign-in with its connection, and the owner's break-glass", async () => {
    await owner.goto(app('/settings/audit-log'));
    const table = owner.getByRole('table', { name: 'Events', exact: true });
    await table.waitFor();
    for (const type of ['sso_connection.created', 'sso_connection.tested', 'sso_connection.enabled', 'sso_policy.updated', 'domain.verified', 'sso.break_glass_used']) {
      await expect.poll(() => table.getByText(type, { exact: true }).count(), { message: type, timeout: 15_000 }).toBeGreaterThan(0);
    }
    // Each sign-in through the IdP with its connection and protocol; the owner's break-glass on the app's (Better Auth's) path.
    await expect.poll(() => table.getByText(/^(Erin Employee|erin@acme-sso\.example) signed in with single sign-on through "Acme Okta" \(OIDC\)$/).count(), { timeout: 15_000 }).toBeGreaterThan(0);
    await expect.poll(() => table.getByText(/^(Sam Saml|sam@acme-sso\.example) signed in with single sign-on through "Acme SAML" \(SAML\)$/).count(), { timeout: 15_000 }).toBeGreaterThan(0);
    await expect.poll(() => table.getByText(/^(Olivia Owner|olivia@acme-sso\.example) signed in with a password while the organization requires single sign-on \(break-glass\)$/).count(), { timeout: 15_000 }).toBeGreaterThan(0);
    // The actors by name, once the members are read.
    await expect.poll(() => table.getByRole('cell', { name: 'Olivia Owner', exact: true }).count(), { timeout: 15_000 }).toBeGreaterThan(0);
    await shootAndCheck(owner, 'sso-audit-log');
  }, 120_000);

  it('the owner refreshes a connection, deletes one after confirming, and cannot delete the last one SSO needs', async () => {
    await owner.goto(app('/settings/sso'));
    const oidc = owner.getByRole('article', { name: 'Acme Okta' });
    await oidc.getByRole('button', { name: 'Refresh metadata: Acme Okta' }).click();
    await expect.poll(() => status(owner).filter({ hasText: "Acme Okta's discovery document was read again." }).count(), { timeout: 15_000 }).toBe(1);
    await expect.poll(() => oidc.textContent()).toContain('enabled');

    // Deleting asks first; Cancel keeps it.
    await owner.getByRole('button', { name: 'Delete Acme SAML' }).click();
    const dialog = owner.getByRole('alertdialog');
    await expect.poll(() => dialog.getByRole('heading', { name: 'Delete Acme SAML?' }).count()).toBe(1);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(await owner.getByRole('article', { name: 'Acme SAML' }).count()).toBe(1);
    await owner.getByRole('button', { name: 'Delete Acme SAML' }).click();
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await expect.poll(() => status(owner).filter({ hasText: 'Acme SAML is deleted.' }).count(), { timeout: 15_000 }).toBe(1);
    await expect.poll(() => owner.getByRole('article', { name: 'Acme SAML' }).count()).toBe(0);

    // The only enabled connection of an organization that requires SSO stays: the backend's reason, in words.
    await owner.getByRole('button', { name: 'Delete Acme Okta' }).click();
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await expect.poll(() => alert(owner).textContent(), { timeout: 15_000 }).toMatch(/last enabled connection of an organization that requires single sign-on/);
    expect(await owner.getByRole('article', { name: 'Acme Okta' }).count()).toBe(1);
  }, 120_000);

  it("at a phone's width the SSO pages fit without sideways scrolling", async () => {
    await owner.setViewportSize({ width: 390, height: 844 });
    await owner.goto(app('/settings/sso'));
    await owner.getByRole('article', { name: 'Acme Okta' }).locator('summary').click();
    expect(await sidewaysOverflow(owner)).toEqual({ page: false, elements: [] });
    await shootAndCheck(owner, 'sso-phone');
    const phone = await newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto(app('/sign-in/sso'));
    await expectAccessible(phone, 'sign-in-sso-phone');
    expect(await sidewaysOverflow(phone)).toEqual({ page: false, elements: [] });
  }, 120_000);
});
