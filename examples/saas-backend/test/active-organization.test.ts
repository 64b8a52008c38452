import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perRequest, startWireCounter, type WireCounter } from '../../../bench/lib/pg-wire-counter.mjs';
import { apiClient, databaseKinds, joinOrganization, serviceApiKey, signUp, startBackend, startCountedBackend, type SignedUp, type TestBackend } from './support/backend.js';

/**
 * Without `x-organization-id`, a request acts in its session's active organization: set at sign-up
 * (the user's own) and sign-in, switched with POST /api/auth/organization/set-active or by Better
 * Auth's setActive (which writes the same session column through the adapter). The header wins.
 */
describe.each(databaseKinds)('the active organization, %s database', (kind) => {
  let backend: TestBackend;
  let ada: SignedUp;
  let bob: SignedUp;
  /** Ada's session without a default header: what a client that sends none sees. */
  let adaBare: ReturnType<typeof apiClient>;
  let teamId: string;

  const setActive = (client: ReturnType<typeof apiClient>, organizationId: string | null) =>
    client('POST', '/api/auth/organization/set-active', { body: { organizationId } });
  const projectNames = async (client: ReturnType<typeof apiClient>, options = {}) => {
    const answer = await client('GET', '/Projects?sort=name&order=asc', options);
    expect(answer.status).toBe(200);
    return answer.body.data.map((project: { name: string }) => project.name);
  };

  beforeAll(async () => {
    backend = await startBackend(kind);
    ada = await signUp(backend.url, 'ada@example.com');
    bob = await signUp(backend.url, 'bob@example.com');
    adaBare = apiClient(backend.url, { token: ada.token });
    await ada.api('POST', '/Projects', { body: { name: 'Ada personal' } });
    // Bob's organization, which Ada joins as a member.
    teamId = bob.organizationId;
    await bob.api('POST', '/Projects', { body: { name: 'Team project' } });
    await joinOrganization(bob, ada, 'member');
  });
  afterAll(() => backend?.stop());

  it('is the personal organization from sign-up: a request without the header acts there', async () => {
    const session = await adaBare('GET', '/api/auth/get-session');
    expect(session.body.data.session.activeOrganizationId).toBe(ada.organizationId);
    expect(await projectNames(adaBare)).toEqual(['Ada personal']);
    const created = await adaBare('POST', '/Projects', { body: { name: 'Made without a header' } });
    expect(created.status).toBe(201);
    expect(created.body.data.organizationId).toBe(ada.organizationId);
    expect((await adaBare('DELETE', `/Projects/${created.body.data.id}`)).status).toBe(204);
  });

  it('is switched with set-active, for every route that acts in an organization; the header still wins', async () => {
    const switched = await setActive(adaBare, teamId);
    expect(switched.status).toBe(200);
    expect(switched.body.data.organization).toMatchObject({ id: teamId, role: 'member' });
    expect(switched.body.data.session.activeOrganizationId).toBe(teamId);
    try {
      expect(await projectNames(adaBare)).toEqual(['Team project']);
      // The built-in routes too: the members of the team, Ada's role there.
      const members = await adaBare('GET', '/members');
      expect(members.status).toBe(200);
      expect(members.body.data.map((row: { organizationId: string }) => row.organizationId)).toEqual([teamId, teamId]);
      const users = await adaBare('GET', '/Users');
      expect(users.body.data.map((user: { email: string }) => user.email).sort()).toEqual(['ada@example.com', 'bob@example.com']);
      // A member may not invite; an owner may: the role is the active organization's.
      expect((await adaBare('POST', '/members', { body: { email: 'cy@example.com', role: 'member' } })).status).toBe(403);
      // The header wins over the active organization.
      expect(await projectNames(adaBare, { organizationId: ada.organizationId })).toEqual(['Ada personal']);
    } finally {
      expect((await setActive(adaBare, ada.organizationId)).status).toBe(200);
    }
    expect(await projectNames(adaBare)).toEqual(['Ada personal']);
  });

  it('refuses an organization the user is not a member of, and changes nothing', async () => {
    const stranger = await signUp(backend.url, 'stranger@example.com');
    for (const organizationId of [stranger.organizationId, '00000000-0000-4000-8000-000000000001']) {
      const refused = await setActive(adaBare, organizationId);
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('FORBIDDEN');
    }
    expect((await adaBare('GET', '/api/auth/get-session')).body.data.session.activeOrganizationId).toBe(ada.organizationId);
    expect((await setActive(adaBare, 'not-a-uuid' as never)).status).toBe(422);
    expect((await apiClient(backend.url)('POST', '/api/auth/organization/set-active', { body: { organizationId: ada.organizationId } })).status).toBe(401);
  });

  it('answers 403 when the active organization is one the user left, and 400 when there is none', async () => {
    const cy = await signUp(backend.url, 'cy@example.com');
    const cyBare = apiClient(backend.url, { token: cy.token });
    await joinOrganization(bob, cy, 'member');
    expect((await setActive(cyBare, teamId)).status).toBe(200);
    expect(await projectNames(cyBare)).toEqual(['Team project']);
    // Bob removes Cy: her session still names the team, which she may no longer act in.
    const cyRow = (await bob.api('GET', '/members')).body.data.find((row: { userId: string }) => row.userId === cy.user.id);
    expect((await bob.api('DELETE', `/members/${cyRow.id}`)).status).toBe(204);
    for (const [method, path] of [['GET', '/Projects'], ['POST', '/Projects'], ['GET', '/members']] as const) {
      const refused = await cyBare(method, path, method === 'POST' ? { body: { name: 'Sneaky' } } : {});
      expect(refused.status, `${method} ${path}`).toBe(403);
      expect(refused.body.error).toEqual({ code: 'FORBIDDEN', message: 'You are not a member of this organization' });
    }
    expect((await bob.api('GET', '/Projects?name=Sneaky')).body.meta.total).toBe(0);
    // None at all: the request must say where it acts.
    expect((await setActive(cyBare, null)).status).toBe(200);
    const none = await cyBare('GET', '/Projects');
    expect(none.status).toBe(400);
    expect(none.body.error.details).toHaveProperty('x-organization-id');
    expect((await cyBare('GET', '/members')).status).toBe(400);
  });

  it("follows Better Auth's setActive: the adapter writes the session's activeOrganizationId with the service key", async () => {
    const trusted = apiClient(backend.url, { token: serviceApiKey });
    const sessionId = (await adaBare('GET', '/api/auth/get-session')).body.data.session.id;
    const written = await trusted('PATCH', `/sessions/${sessionId}`, { body: { activeOrganizationId: teamId } });
    expect(written.status).toBe(200);
    try {
      expect(await projectNames(adaBare)).toEqual(['Team project']);
    } finally {
      await setActive(adaBare, ada.organizationId);
    }
  });

  it('sets the first organization at sign-in, and switching does not count against the sign-in limit', async () => {
    const signedIn = await apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: 'ada@example.com', password: 'correct horse battery' } });
    expect(signedIn.status).toBe(200);
    const fresh = apiClient(backend.url, { token: signedIn.body.data.token });
    expect((await fresh('GET', '/api/auth/get-session')).body.data.session.activeOrganizationId).toBe(ada.organizationId);
    const limited = await startBackend(kind, { RATE_LIMIT_AUTH_MAX: '3' });
    try {
      const dee = await signUp(limited.url, 'dee@example.com');
      const deeBare = apiClient(limited.url, { token: dee.token });
      for (let switches = 0; switches < 6; switches++) expect((await setActive(deeBare, dee.organizationId)).status).toBe(200);
    } finally {
      await limited.stop();
    }
  });
});

/** Counted on the wire, as one-statement.test.ts counts the header's requests. */
describe.runIf(databaseKinds.includes('postgres' as never))('the active organization costs no round trip, PostgreSQL', () => {
  let counted: Awaited<ReturnType<typeof startCountedBackend>>;
  let counter: WireCounter;
  let backend: TestBackend;
  let ada: SignedUp;

  beforeAll(async () => {
    counted = await startCountedBackend();
    ({ backend, counter } = counted);
    ada = await counted.signUpQuietly('ada@example.com');
  });
  afterAll(() => counted?.stop());

  it('is 1 for a list, a read and a write without the header, as with it', async () => {
    const bare = apiClient(backend.url, { token: ada.token });
    const count = async (method: string, path: string, body?: unknown) => {
      const before = counter.snapshot();
      const answer = await bare(method, path, body === undefined ? {} : { body });
      expect(answer.status, `${method} ${path}`).toBeLessThan(300);
      const sent = perRequest(before, counter.snapshot(), 1);
      return { answer, roundTrips: sent.roundTrips, texts: sent.sql.map((text: { sql: string }) => text.sql) };
    };
    const created = await count('POST', '/Projects', { name: 'Apollo' });
    expect(created.roundTrips, created.texts.join('\n')).toBe(1);
    expect(created.answer.body.data.organizationId).toBe(ada.organizationId);
    expect((await count('GET', '/Projects')).roundTrips).toBe(1);
    expect((await count('GET', `/Projects/${created.answer.body.data.id}`)).roundTrips).toBe(1);
    expect((await count('PATCH', `/Projects/${created.answer.body.data.id}`, { name: 'Gemini' })).roundTrips).toBe(1);
  });
});
