import { domainToASCII } from 'node:url';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthstrapError, createAuthstrapClient } from '../client/authstrap-client.js';
import { ConfigError, loadConfig } from '../src/config.js';
import { createDomainChecks } from '../src/domains/domain-checks.js';
import { normaliseDomain } from '../src/domains/domain-name.js';
import { checkScheduleOf, findingOf, planCheck, type CheckedDomain, type Finding } from '../src/domains/domain-states.js';
import { txtLookup } from '../src/domains/txt-lookup.js';
import { addMember, apiClient, databaseKinds, serviceApiKey, signUp, startBackend, type Api, type SignedUp, type TestBackend } from './support/backend.js';
import { startDnsServer, startSilentDnsServer, type DnsServer } from './support/dns-server.js';

/**
 * Verified domains (docs/domains.md; docs/enterprise-identity.md, step 4): an owner or admin claims
 * a domain, publishes the TXT record the answer shows, and the backend finds it on a real DNS
 * server on loopback (DNS_SERVERS). The worker that checks domains again is driven with a clock the
 * test sets: a record removed makes a verified domain failing, then lapsed after the grace.
 */

interface Domain {
  id: string;
  domain: string;
  state: 'pending' | 'verified' | 'failing' | 'lapsed';
  txtRecord: { type: 'TXT'; name: string; value: string };
  verifiedAt: string | null;
  failingSince: string | null;
  lapsesAt: string | null;
  lastCheckError: string | null;
  nextCheckAt: string | null;
}

const hour = 3_600_000;
const day = 24 * hour;

describe.each(databaseKinds)('verified domains on the %s database', (kind) => {
  let backend: TestBackend;
  let dns: DnsServer;
  let owner: SignedUp;
  let admin: SignedUp;
  let member: SignedUp;
  let rival: SignedUp;
  let counter = 0;
  /** A domain no other test uses. */
  const fresh = (label = 'acme') => `${label}-${kind}-${++counter}.example`;

  const claim = async (api: Api, domain: string) => {
    const answer = await api('POST', '/domains', { body: { domain } });
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    return answer.body.data as Domain;
  };
  const publish = (domain: Domain) => dns.setTxt(domain.txtRecord.name, [domain.txtRecord.value]);
  const verify = (api: Api, domain: Domain) => api('POST', `/domains/${domain.id}/verify`);
  /** The domain as its organization's list shows it now. */
  const current = async (api: Api, id: string) => ((await api('GET', '/domains')).body.data as Domain[]).find((domain) => domain.id === id);
  const eventsOf = async (api: Api, type: string) => (await api('GET', `/audit-events?type=${type}&limit=100`)).body.data as { entityId: string; actorType: string; data: Record<string, unknown> }[];
  /** A worker of the backend's own kind on its database, at a time the test sets. */
  const checker = (at: () => Date, dnsServers = [dns.address]) =>
    createDomainChecks({
      db: backend.running.db,
      logger: pino({ level: 'silent' }),
      lookup: txtLookup({ dnsServers, dnsTimeoutMs: 200 }),
      schedule: checkScheduleOf(backend.running.config.domains),
      pollMs: 0,
      clock: at,
    });
  const asOwner = (sql: string, params: unknown[] = []) => backend.running.db.asOwner((tx) => tx.query(sql, params));
  const requireSso = (organizationId: string, on: boolean) =>
    asOwner(
      `INSERT INTO "authstrap_sso_policy" ("organizationId", "ssoRequired", "requiredSince", "breakGlass") VALUES ($1, $2, now(), 'owners')
       ON CONFLICT ("organizationId") DO UPDATE SET "ssoRequired" = $2`,
      [organizationId, on],
    );

  /** The sign-in rule's verdict on a password sign-in of `address`, asked while the owner's organization requires SSO. */
  const verdictWithSsoRequired = async (address: string) => {
    await requireSso(owner.organizationId, true);
    try {
      return (await asOwner(`SELECT authstrap.sign_in_verdict($1, NULL, 'password', NULL, NULL) AS "verdict"`, [address])).rows[0]!.verdict;
    } finally {
      await requireSso(owner.organizationId, false);
    }
  };

  beforeAll(async () => {
    dns = await startDnsServer();
    // The backend's own worker stays off (DOMAIN_CHECK_POLL_MS=0): the tests run theirs, with their clock.
    backend = await startBackend(kind, { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '200', DOMAIN_CHECK_POLL_MS: '0' });
    owner = await signUp(backend.url, `owner-${kind}@domains.example`);
    admin = await addMember(backend.url, owner, `admin-${kind}@domains.example`, 'admin');
    member = await addMember(backend.url, owner, `member-${kind}@domains.example`, 'member');
    rival = await signUp(backend.url, `rival-${kind}@domains.example`);
  }, 60_000);
  afterAll(async () => {
    await backend?.stop();
    await dns?.close();
  });

  it('claims a domain: pending, with the TXT record to publish; an admin may too; the list shows both', async () => {
    const name = fresh();
    const claimed = await claim(owner.api, name);
    expect(claimed).toMatchObject({ domain: name, state: 'pending', verifiedAt: null, lastCheckError: null });
    expect(claimed.txtRecord.type).toBe('TXT');
    expect(claimed.txtRecord.name).toBe(`_authstrap-verification.${name}`);
    // 24 random bytes, base64url.
    expect(claimed.txtRecord.value).toMatch(/^authstrap-domain-verification=[A-Za-z0-9_-]{32}$/);
    const byAdmin = await claim(admin.api, fresh());
    expect(byAdmin.txtRecord.value).not.toBe(claimed.txtRecord.value);

    const listed = (await owner.api('GET', '/domains')).body.data as Domain[];
    expect(listed.map((domain) => domain.id)).toEqual(expect.arrayContaining([claimed.id, byAdmin.id]));
    expect(listed.find((domain) => domain.id === claimed.id)).toEqual(claimed);
    expect(JSON.stringify(listed)).not.toMatch(/"txtToken"/);

    const again = await owner.api('POST', '/domains', { body: { domain: name.toUpperCase() } });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('CONFLICT');
    const claimedEvents = await eventsOf(owner.api, 'domain.claimed');
    expect(claimedEvents.find((event) => event.entityId === claimed.id)).toMatchObject({ actorType: 'user', data: { domain: name } });
  });

  it('a claim sent again with the same Idempotency-Key is made once, and answered the same', async () => {
    const name = fresh('keyed');
    const headers = { 'idempotency-key': `claim-${name}` };
    const first = await owner.api('POST', '/domains', { body: { domain: name }, headers });
    const again = await owner.api('POST', '/domains', { body: { domain: name }, headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(((await owner.api('GET', '/domains')).body.data as Domain[]).filter((domain) => domain.domain === name)).toHaveLength(1);
  });

  it('stores a domain normalised: lowercase, without the root dot, an internationalised one in its xn-- form', async () => {
    const plain = fresh('mixed');
    expect((await claim(owner.api, `  ${plain.toUpperCase()}.  `)).domain).toBe(plain);
    const unicode = `bücher.${fresh('idna')}`;
    const stored = (await claim(owner.api, unicode)).domain;
    expect(stored).toBe(domainToASCII(unicode));
    expect(stored).toMatch(/^xn--bcher-kva\./);
  });

  it('refuses what is no domain with a 422 naming the field, and stores none of it', async () => {
    const hostile: unknown[] = [
      '',
      '   ',
      '127.0.0.1',
      '127.1',
      '0x7f.1',
      '::1',
      '[::1]',
      'localhost',
      'intranet',
      'api.localhost',
      '1.0.0.127.in-addr.arpa',
      'https://acme.example',
      'acme.example/path',
      'acme.example?x=1',
      'user@acme.example',
      'acme.example:443',
      '*.acme.example',
      'acme .example',
      'acme.example\u0000',
      'acme.example\nx-injected: 1',
      'acme..example',
      '-acme.example',
      'acme-.example',
      'ac_me.example',
      '<script>.example',
      "acme.example'; DROP TABLE \"authstrap_domain\"; --",
      '%61cme.example',
      'acme.123',
      `${'a'.repeat(64)}.example`,
      `${'abcdefghi.'.repeat(26)}example`,
      'x'.repeat(301),
      123,
      null,
      ['acme.example'],
    ];
    for (const domain of hostile) {
      const answer = await owner.api('POST', '/domains', { body: { domain } });
      expect(answer.status, JSON.stringify(domain)).toBe(422);
      expect(answer.body.error.code).toBe('VALIDATION_ERROR');
      expect(typeof answer.body.error.details.domain, JSON.stringify(domain)).toBe('string');
    }
    const missing = await owner.api('POST', '/domains', { body: {} });
    expect(missing.status).toBe(422);
    expect(missing.body.error.details.domain).toBeTypeOf('string');
    const extra = await owner.api('POST', '/domains', { body: { domain: fresh(), state: 'verified' } });
    expect(extra.status).toBe(422);
    expect(extra.body.error.details.state).toBe('Unknown field');
    const stored = await asOwner(`SELECT "domain" FROM "authstrap_domain" WHERE "domain" !~ '^[a-z0-9.-]+$' OR "domain" IN ('127.0.0.1', 'localhost', 'acme.example')`);
    expect(stored.rows).toEqual([]);
  });

  it('verifies once the exact record is published: before, the state stays pending with lastCheckError', async () => {
    const claimed = await claim(owner.api, fresh());
    const notYet = await verify(owner.api, claimed);
    expect(notYet.status).toBe(200);
    expect(notYet.body.data).toMatchObject({ id: claimed.id, state: 'pending', lastCheckError: 'record not found' });

    dns.setTxt(claimed.txtRecord.name, ['v=spf1 -all', 'authstrap-domain-verification=someone-elses-token']);
    expect((await verify(owner.api, claimed)).body.data).toMatchObject({ state: 'pending', lastCheckError: 'record found with another token' });

    dns.setTxt(claimed.txtRecord.name, ['v=spf1 -all', claimed.txtRecord.value]);
    const verified = await verify(admin.api, claimed);
    expect(verified.status).toBe(200);
    expect(verified.body.data).toMatchObject({ state: 'verified', lastCheckError: null, failingSince: null });
    expect(Date.parse(verified.body.data.verifiedAt)).toBeGreaterThan(Date.now() - 60_000);
    // Next checked in DOMAIN_CHECK_INTERVAL_HOURS (24 by default).
    expect(Date.parse(verified.body.data.nextCheckAt) - Date.parse(verified.body.data.lastCheckedAt)).toBe(24 * hour);
    const events = await eventsOf(owner.api, 'domain.verified');
    expect(events.find((event) => event.entityId === claimed.id)).toMatchObject({ data: { domain: claimed.domain, previousState: 'pending', sessionsEnded: 0 } });
  });

  it('answers DOMAIN_TAKEN when another organization holds the domain verified, and keeps the claim pending', async () => {
    const name = fresh('contested');
    const first = await claim(owner.api, name);
    // Several organizations may claim a domain while it is pending: a squatted claim blocks nobody.
    const second = await claim(rival.api, name);
    publish(first);
    expect((await verify(owner.api, first)).body.data.state).toBe('verified');

    dns.setTxt(second.txtRecord.name, [first.txtRecord.value, second.txtRecord.value]);
    const taken = await verify(rival.api, second);
    expect(taken.status).toBe(409);
    expect(taken.body.error.code).toBe('DOMAIN_TAKEN');
    expect(await current(rival.api, second.id)).toMatchObject({ state: 'pending', lastCheckError: 'another organization verified this domain' });
    expect((await current(owner.api, first.id))?.state).toBe('verified');
    // The same with an Idempotency-Key, whose write holds one transaction throughout.
    const keyed = await rival.api('POST', `/domains/${second.id}/verify`, { headers: { 'idempotency-key': `verify-${second.id}` } });
    expect(keyed.status).toBe(409);
    expect(keyed.body.error.code).toBe('DOMAIN_TAKEN');
  });

  it('a record removed makes a verified domain failing (it still counts), then lapsed after the grace; the record back makes it verified', async () => {
    const claimed = await claim(owner.api, fresh('schedule'));
    publish(claimed);
    const verified = (await verify(owner.api, claimed)).body.data as Domain & { lastCheckedAt: string };
    const verifiedAt = Date.parse(verified.lastCheckedAt);
    let now = new Date(verifiedAt);
    const worker = checker(() => now);

    // Not due yet: nothing asks DNS.
    const asked = dns.questionsFor(claimed.txtRecord.name);
    now = new Date(verifiedAt + 23 * hour);
    await worker.runOnce();
    expect(dns.questionsFor(claimed.txtRecord.name)).toBe(asked);

    // Due after a day: the record is still there.
    now = new Date(verifiedAt + 24 * hour + 1000);
    await worker.runOnce();
    expect(dns.questionsFor(claimed.txtRecord.name)).toBe(asked + 1);
    expect(await current(owner.api, claimed.id)).toMatchObject({ state: 'verified', lastCheckError: null });

    // The record goes: failing at the next check, with its seven days of grace.
    dns.remove(claimed.txtRecord.name);
    const goneAt = verifiedAt + 48 * hour + 2000;
    now = new Date(goneAt);
    await worker.runOnce();
    const failing = await current(owner.api, claimed.id);
    expect(failing).toMatchObject({ state: 'failing', lastCheckError: 'record not found', failingSince: new Date(goneAt).toISOString(), lapsesAt: new Date(goneAt + 7 * day).toISOString() });
    // A failing domain still counts: while the organization requires SSO, its addresses sign in with SSO only.
    expect(await verdictWithSsoRequired(`someone@${claimed.domain}`)).toMatchObject({ allowed: false, code: 'SSO_REQUIRED', domain: claimed.domain });
    const failingEvents = await eventsOf(owner.api, 'domain.failing');
    expect(failingEvents.find((event) => event.entityId === claimed.id)).toMatchObject({ actorType: 'system', data: { domain: claimed.domain, reason: 'record not found' } });

    // Back within the grace: verified again.
    publish(claimed);
    now = new Date(goneAt + 2 * hour);
    await worker.runOnce();
    expect(await current(owner.api, claimed.id)).toMatchObject({ state: 'verified', failingSince: null, lastCheckError: null });

    // Gone again, and for good: failing, still failing within the grace, lapsed after it.
    dns.remove(claimed.txtRecord.name);
    const goneAgain = goneAt + 26 * hour + 3000;
    now = new Date(goneAgain);
    await worker.runOnce();
    expect((await current(owner.api, claimed.id))?.state).toBe('failing');
    now = new Date(goneAgain + 6 * day);
    await worker.runOnce();
    expect((await current(owner.api, claimed.id))?.state).toBe('failing');
    now = new Date(goneAgain + 7 * day);
    await worker.runOnce();
    expect(await current(owner.api, claimed.id)).toMatchObject({ state: 'lapsed', failingSince: null, lastCheckError: 'record not found' });
    // A lapsed one no longer does.
    expect(await verdictWithSsoRequired(`someone@${claimed.domain}`)).toEqual({ allowed: true, breakGlass: false });
    const lapsedEvents = await eventsOf(owner.api, 'domain.lapsed');
    expect(lapsedEvents.find((event) => event.entityId === claimed.id)).toMatchObject({ actorType: 'system', data: { domain: claimed.domain } });

    // The record reappears: the next check verifies it again.
    publish(claimed);
    now = new Date(goneAgain + 8 * day + 1000);
    await worker.runOnce();
    expect(await current(owner.api, claimed.id)).toMatchObject({ state: 'verified', lastCheckError: null });
    const verifiedEvents = await eventsOf(owner.api, 'domain.verified');
    expect(verifiedEvents.filter((event) => event.entityId === claimed.id).map((event) => event.data.previousState).sort()).toEqual(['failing', 'lapsed', 'pending']);
  });

  it('a DNS timeout or a server failure is no finding: a verified domain stays verified, lastCheckError says why', async () => {
    const claimed = await claim(owner.api, fresh('flaky'));
    publish(claimed);
    const verified = (await verify(owner.api, claimed)).body.data as Domain & { lastCheckedAt: string };
    const checkedAt = Date.parse(verified.lastCheckedAt);

    // The route's resolver: the test server stops answering this name (a timeout), then fails it (SERVFAIL).
    dns.misbehave(claimed.txtRecord.name, 'silent');
    const timedOut = await verify(owner.api, claimed);
    expect(timedOut.status).toBe(200);
    expect(timedOut.body.data).toMatchObject({ state: 'verified', lastCheckError: 'DNS timeout' });
    dns.misbehave(claimed.txtRecord.name, 'servfail');
    expect((await verify(owner.api, claimed)).body.data).toMatchObject({ state: 'verified', lastCheckError: 'DNS server failure (SERVFAIL)' });

    // The worker's resolver pointed at a DNS server that answers nothing at all: the same, retried within the hour.
    const silent = await startSilentDnsServer();
    try {
      const at = new Date(checkedAt + 25 * hour);
      await checker(() => at, [silent.address]).runOnce();
      expect(silent.questions()).toBeGreaterThan(0);
      const after = await current(owner.api, claimed.id);
      expect(after).toMatchObject({ state: 'verified', lastCheckError: 'DNS timeout', failingSince: null });
      expect(Date.parse(after!.nextCheckAt!)).toBe(at.getTime() + hour);
    } finally {
      await silent.close();
    }
    // A pending claim under a timeout stays pending too.
    const pending = await claim(owner.api, fresh('flaky'));
    dns.misbehave(pending.txtRecord.name, 'silent');
    expect((await verify(owner.api, pending)).body.data).toMatchObject({ state: 'pending', lastCheckError: 'DNS timeout' });
  });

  it('two instances checking at once never check the same domain twice', async () => {
    const organization = await signUp(backend.url, `bulk-${kind}@domains.example`);
    const claims: Domain[] = [];
    for (let index = 0; index < 45; index += 1) claims.push(await claim(organization.api, fresh('bulk')));
    for (const claimed of claims) publish(claimed);
    // Each answer takes a while, so that the two rounds overlap.
    dns.delayMs = 20;
    try {
      const at = new Date(Date.now() + 1000);
      const [first, second] = await Promise.all([checker(() => at).runOnce(), checker(() => at).runOnce()]);
      expect(first).toBeGreaterThan(0);
      expect(second).toBeGreaterThan(0);
      for (const claimed of claims) expect(dns.questionsFor(claimed.txtRecord.name), claimed.domain).toBe(1);
    } finally {
      dns.delayMs = 0;
    }
    const listed = (await organization.api('GET', '/domains')).body.data as Domain[];
    expect(listed.filter((domain) => domain.state === 'verified')).toHaveLength(45);
    expect((await eventsOf(organization.api, 'domain.verified')).length).toBe(45);
  });

  it("another organization's domain is a 404 on every route, answered as a domain that does not exist", async () => {
    const claimed = await claim(owner.api, fresh('private'));
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect(((await rival.api('GET', '/domains')).body.data as Domain[]).map((domain) => domain.id)).not.toContain(claimed.id);
    for (const [method, path] of [['POST', '/verify'], ['DELETE', '']] as const) {
      const theirs = await rival.api(method, `/domains/${claimed.id}${path}`);
      const none = await rival.api(method, `/domains/${unknown}${path}`);
      expect(theirs.status).toBe(404);
      expect(none.status).toBe(404);
      expect(theirs.body.error.message.replace(claimed.id, '<id>')).toBe(none.body.error.message.replace(unknown, '<id>'));
    }
    // Even naming the owner's organization in the header: the rival is no member there.
    expect((await rival.api('GET', '/domains', { organizationId: owner.organizationId })).status).toBe(403);
    expect(await current(owner.api, claimed.id)).toMatchObject({ state: 'pending' });
    expect(dns.questionsFor(claimed.txtRecord.name)).toBe(0);
  });

  it('takes owners and admins only: a member, a machine key, the service key and no session are refused', async () => {
    const claimed = await claim(owner.api, fresh('guarded'));
    const made = await owner.api('POST', '/api/auth/api-keys', { body: { name: 'ci', role: 'admin', permissions: { Project: ['list', 'read', 'create'] } } });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const withKey: Api = (method, path, options = {}) => apiClient(backend.url)(method, path, { ...options, organizationId: owner.organizationId, headers: { 'x-api-key': made.body.data.key } });
    const service = apiClient(backend.url, { token: serviceApiKey, organizationId: owner.organizationId });
    const anonymous = apiClient(backend.url, { organizationId: owner.organizationId });
    const routes: [string, string, unknown?][] = [
      ['GET', '/domains'],
      ['POST', '/domains', { domain: fresh('guarded') }],
      ['POST', `/domains/${claimed.id}/verify`],
      ['DELETE', `/domains/${claimed.id}`],
    ];
    for (const [method, path, body] of routes) {
      expect((await member.api(method, path, { body })).status, `member ${method} ${path}`).toBe(403);
      expect((await withKey(method, path, { body })).status, `key ${method} ${path}`).toBe(403);
      expect((await service(method, path, { body })).status, `service ${method} ${path}`).toBe(403);
      expect((await anonymous(method, path, { body })).status, `anonymous ${method} ${path}`).toBe(401);
    }
    // A member's bad body is still a 403, not a 422: who is asking comes first.
    expect((await member.api('POST', '/domains', { body: { domain: '127.0.0.1' } })).status).toBe(403);
    expect(await current(owner.api, claimed.id)).toMatchObject({ state: 'pending' });
  });

  it('removes a claim (domain.removed), but not the last verified domain while the organization requires SSO', async () => {
    const organization = await signUp(backend.url, `remover-${kind}@domains.example`);
    const pending = await claim(organization.api, fresh('remove'));
    expect((await organization.api('DELETE', `/domains/${pending.id}`)).status).toBe(204);
    expect(await current(organization.api, pending.id)).toBeUndefined();
    const removed = await eventsOf(organization.api, 'domain.removed');
    expect(removed.find((event) => event.entityId === pending.id)).toMatchObject({ data: { domain: pending.domain, state: 'pending' } });

    const [first, second] = [await claim(organization.api, fresh('remove')), await claim(organization.api, fresh('remove'))];
    for (const claimed of [first, second]) {
      publish(claimed);
      expect((await verify(organization.api, claimed)).body.data.state).toBe('verified');
    }
    await requireSso(organization.organizationId, true);
    expect((await organization.api('DELETE', `/domains/${first.id}`)).status).toBe(204);
    const last = await organization.api('DELETE', `/domains/${second.id}`);
    expect(last.status).toBe(409);
    expect(last.body.error.code).toBe('LAST_VERIFIED_DOMAIN');
    expect((await current(organization.api, second.id))?.state).toBe('verified');
    await requireSso(organization.organizationId, false);
    expect((await organization.api('DELETE', `/domains/${second.id}`)).status).toBe(204);
  });

  it("the typed client's domains section: claim, verify, list, remove, and DOMAIN_TAKEN as an AuthstrapError", async () => {
    const client = createAuthstrapClient({ baseUrl: backend.url, token: owner.token });
    client.setOrganization(owner.organizationId);
    const name = fresh('client');
    const claimed = await client.domains.claim(name);
    expect(claimed).toMatchObject({ domain: name, state: 'pending', txtRecord: { type: 'TXT', name: `_authstrap-verification.${name}` } });
    expect(await client.domains.verify(claimed.id)).toMatchObject({ state: 'pending', lastCheckError: 'record not found' });
    dns.setTxt(claimed.txtRecord.name, [claimed.txtRecord.value]);
    expect(await client.domains.verify(claimed.id)).toMatchObject({ state: 'verified' });
    expect((await client.domains.list()).find((domain) => domain.id === claimed.id)?.state).toBe('verified');

    const rivalClient = createAuthstrapClient({ baseUrl: backend.url, token: rival.token });
    rivalClient.setOrganization(rival.organizationId);
    const contested = await rivalClient.domains.claim(name);
    dns.setTxt(claimed.txtRecord.name, [claimed.txtRecord.value, contested.txtRecord.value]);
    const refused = await rivalClient.domains.verify(contested.id).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AuthstrapError);
    expect(refused).toMatchObject({ status: 409, code: 'DOMAIN_TAKEN' });
    await rivalClient.domains.remove(contested.id);
    expect(await rivalClient.domains.list()).not.toContainEqual(expect.objectContaining({ id: contested.id }));
  });

  it('a domain verified while the organization requires SSO ends the password sessions of its addresses, in the same transaction', async () => {
    const organization = await signUp(backend.url, `enforcer-${kind}@domains.example`);
    const name = fresh('enforced');
    const employee = await signUp(backend.url, `employee@${name}`);
    const outsider = await signUp(backend.url, `outsider-${kind}@elsewhere.example`);
    const alive = async (token: string) => (await apiClient(backend.url)('GET', '/api/auth/get-session', { token })).status;
    expect(await alive(employee.token)).toBe(200);

    await requireSso(organization.organizationId, true);
    const claimed = await claim(organization.api, name);
    publish(claimed);
    expect((await verify(organization.api, claimed)).body.data.state).toBe('verified');
    expect(await alive(employee.token)).toBe(401);
    expect(await alive(outsider.token)).toBe(200);
    const events = await eventsOf(organization.api, 'domain.verified');
    expect(events.find((event) => event.entityId === claimed.id)?.data.sessionsEnded).toBe(1);
    // And from now on the address signs in with SSO only.
    const signIn = await apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: employee.user.email, password: 'correct horse battery' } });
    expect(signIn.status).toBe(403);
    expect(signIn.body.error.code).toBe('SSO_REQUIRED');
    await requireSso(organization.organizationId, false);
  });
});

describe.each(databaseKinds)("the backend's own check worker on the %s database", (kind) => {
  let backend: TestBackend;
  let dns: DnsServer;
  beforeAll(async () => {
    dns = await startDnsServer();
    backend = await startBackend(kind, { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '200', DOMAIN_CHECK_POLL_MS: '50' });
  }, 60_000);
  afterAll(async () => {
    await backend?.stop();
    await dns?.close();
  });

  it('checks a new claim at once, and verifies it when it is due again with its record published, without being asked', async () => {
    const owner = await signUp(backend.url, `worker-${kind}@domains.example`);
    const claimed = (await owner.api('POST', '/domains', { body: { domain: `worker-${kind}.example` } })).body.data as Domain;
    const stateOf = async () => ((await owner.api('GET', '/domains')).body.data as (Domain & { lastCheckedAt: string | null })[])[0]!;
    const waitFor = async (done: (domain: Domain & { lastCheckedAt: string | null }) => boolean) => {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const domain = await stateOf();
        if (done(domain)) return domain;
        if (Date.now() > deadline) throw new Error(`the worker did not get there: ${JSON.stringify(domain)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    // Due at once: the first check finds nothing, and the next is in 5 minutes.
    const first = await waitFor((domain) => domain.lastCheckedAt !== null);
    expect(first).toMatchObject({ state: 'pending', lastCheckError: 'record not found' });
    expect(Date.parse(first.nextCheckAt!) - Date.parse(first.lastCheckedAt!)).toBe(5 * 60_000);
    dns.setTxt(claimed.txtRecord.name, [claimed.txtRecord.value]);
    await backend.running.db.asOwner((tx) => tx.query(`UPDATE "authstrap_domain" SET "nextCheckAt" = now() WHERE "id" = $1`, [claimed.id]));
    expect(await waitFor((domain) => domain.state === 'verified')).toMatchObject({ lastCheckError: null });
  });
});

describe('planning a check (pure)', () => {
  const schedule = checkScheduleOf({ checkIntervalHours: 24, failingGraceDays: 7 });
  const now = new Date('2026-12-06T12:00:00.000Z');
  const at = (ms: number) => new Date(now.getTime() + ms);
  const found: Finding = { kind: 'found' };
  const absent: Finding = { kind: 'absent', reason: 'record not found' };
  const timeout: Finding = { kind: 'unanswered', reason: 'DNS timeout' };
  const domain = (state: CheckedDomain['state'], failingSince: Date | null = null): CheckedDomain => ({ state, failingSince });

  it('reads only the exact value as the record; several strings of one record are one value', () => {
    expect(findingOf({ kind: 'records', values: ['authstrap-domain-verification=abc'] }, 'abc')).toEqual(found);
    expect(findingOf({ kind: 'records', values: ['authstrap-domain-verification=abcd'] }, 'abc')).toEqual({ kind: 'absent', reason: 'record found with another token' });
    expect(findingOf({ kind: 'records', values: ['v=spf1 -all'] }, 'abc')).toEqual(absent);
    expect(findingOf({ kind: 'none', reason: 'record not found' }, 'abc')).toEqual(absent);
    expect(findingOf({ kind: 'unanswered', reason: 'DNS timeout' }, 'abc')).toEqual(timeout);
  });

  it('moves the states as docs/domains.md says, with the schedule of each', () => {
    expect(planCheck(domain('pending'), found, now, schedule)).toMatchObject({ state: 'verified', verifiedNow: true, nextCheckAt: at(24 * hour), event: { type: 'domain.verified' } });
    expect(planCheck(domain('pending'), absent, now, schedule)).toMatchObject({ state: 'pending', lastCheckError: 'record not found', nextCheckAt: at(5 * 60_000) });
    expect(planCheck(domain('pending'), absent, now, schedule).event).toBeUndefined();
    expect(planCheck(domain('verified'), found, now, schedule)).toMatchObject({ state: 'verified', verifiedNow: false, lastCheckError: null });
    expect(planCheck(domain('verified'), absent, now, schedule)).toMatchObject({ state: 'failing', failingSince: now, nextCheckAt: at(hour), event: { type: 'domain.failing', data: { lapsesAt: at(7 * day) } } });
    const failing = domain('failing', new Date(now.getTime() - 7 * day + 30 * 60_000));
    // The last check before the grace ends comes at its end, not an hour later.
    expect(planCheck(failing, absent, now, schedule)).toMatchObject({ state: 'failing', nextCheckAt: at(30 * 60_000) });
    expect(planCheck(failing, found, now, schedule)).toMatchObject({ state: 'verified', failingSince: null, event: { type: 'domain.verified', data: { previousState: 'failing' } } });
    expect(planCheck(domain('failing', at(-7 * day)), absent, now, schedule)).toMatchObject({ state: 'lapsed', failingSince: null, event: { type: 'domain.lapsed' } });
    expect(planCheck(domain('lapsed'), found, now, schedule)).toMatchObject({ state: 'verified', event: { type: 'domain.verified', data: { previousState: 'lapsed' } } });
    expect(planCheck(domain('lapsed'), { kind: 'taken' }, now, schedule)).toMatchObject({ state: 'lapsed', lastCheckError: 'another organization verified this domain' });
  });

  it('changes no state on a DNS timeout, except a failing domain whose grace is over', () => {
    for (const state of ['pending', 'verified', 'lapsed'] as const) {
      expect(planCheck(domain(state), timeout, now, schedule)).toMatchObject({ state, lastCheckError: 'DNS timeout' });
    }
    expect(planCheck(domain('verified'), timeout, now, schedule).nextCheckAt).toEqual(at(hour));
    expect(planCheck(domain('failing', at(-day)), timeout, now, schedule)).toMatchObject({ state: 'failing', lastCheckError: 'DNS timeout' });
    expect(planCheck(domain('failing', at(-8 * day)), timeout, now, schedule)).toMatchObject({ state: 'lapsed' });
  });

  it('normalises a domain, and says why one is refused', () => {
    expect(normaliseDomain(' Example.COM. ')).toEqual({ domain: 'example.com' });
    expect(normaliseDomain('münchen.de')).toEqual({ domain: 'xn--mnchen-3ya.de' });
    expect(normaliseDomain('127.0.0.1')).toEqual({ problem: 'must be a domain, not an IP address' });
    expect(normaliseDomain('127.1')).toEqual({ problem: 'must be a domain, not an IP address' });
    expect(normaliseDomain('intranet')).toEqual({ problem: 'must have at least two labels (like example.com), not a single name' });
  });
});

describe('the domain settings', () => {
  const domainsOf = (env: Record<string, string>) => loadConfig({ NODE_ENV: 'test', ...env }, '.').domains;
  const problemsOf = (env: Record<string, string>) => {
    try {
      domainsOf(env);
    } catch (error) {
      if (error instanceof ConfigError) return error.problems;
      throw error;
    }
    return [];
  };

  it('takes resolvers as ip, ip:port or [ipv6]:port, and the schedule, with defaults', () => {
    expect(domainsOf({})).toEqual({ dnsServers: [], dnsTimeoutMs: 2000, checkIntervalHours: 24, failingGraceDays: 7, checkPollMs: 60_000 });
    expect(domainsOf({ DNS_SERVERS: '127.0.0.1:53053, 10.0.0.2,[::1]:53,::1', DOMAIN_CHECK_INTERVAL_HOURS: '6', DOMAIN_FAILING_GRACE_DAYS: '3' })).toMatchObject({
      dnsServers: ['127.0.0.1:53053', '10.0.0.2', '[::1]:53', '::1'],
      checkIntervalHours: 6,
      failingGraceDays: 3,
    });
  });

  it('refuses a resolver that is no address, naming DNS_SERVERS', () => {
    for (const entry of ['dns.example', '127.0.0.1:0', '127.0.0.1:70000', '1.2.3:53', '[127.0.0.1]:53', 'udp://127.0.0.1']) {
      expect(problemsOf({ DNS_SERVERS: entry }), entry).toEqual([`DNS_SERVERS: "${entry}" is not a resolver address like 127.0.0.1, 127.0.0.1:53 or [::1]:53`]);
    }
    expect(problemsOf({ DOMAIN_FAILING_GRACE_DAYS: '0' })[0]).toMatch(/^DOMAIN_FAILING_GRACE_DAYS: must be 1 or more/);
  });
});
