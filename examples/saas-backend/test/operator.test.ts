import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthstrapError, createAuthstrapClient } from '../client/authstrap-client.js';
import { missingSearchIndexes, searchIndexNames, warnWithoutSearchIndexes } from '../src/operator/search-indexes.js';
import { parseCsv } from './support/csv.js';
import { addMember, apiClient, databaseKinds, projectDir, serviceApiKey, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';

/**
 * The platform's operators (src/operator/): /api/operator answers only a signed-in user who is an
 * operator now; members, owners, machine keys and the service key get 403, a caller without a
 * session 401. Granting is the command line's (packages/cli/test/operator-command.test.ts); here
 * the row is written as the tables' owner, as that command does.
 */
describe.each(databaseKinds)('operator routes on the %s database', (kind) => {
  let backend: TestBackend;
  let olivia: SignedUp;
  let ivy: SignedUp;
  const asOwner = (sql: string, params: unknown[]) => backend.running.db.asOwner((tx) => tx.query(sql, params));

  beforeAll(async () => {
    backend = await startBackend(kind);
    olivia = await signUp(backend.url, 'olivia@example.com');
    ivy = await signUp(backend.url, 'ivy@example.com');
  });
  afterAll(() => backend?.stop());

  it('refuses everyone who is not an operator: no session 401; an owner, a machine key and the service key 403', async () => {
    expect((await apiClient(backend.url)('GET', '/api/operator/me')).status).toBe(401);
    const owner = await ivy.api('GET', '/api/operator/me');
    expect(owner.status).toBe(403);
    expect(owner.body.error.message).toContain('Operators only');
    expect((await apiClient(backend.url, { token: serviceApiKey })('GET', '/api/operator/me')).status).toBe(403);
    const key = await ivy.api('POST', '/api/auth/api-keys', { body: { name: 'ops', permissions: { Project: ['list'] } } });
    expect(key.status).toBe(201);
    expect((await apiClient(backend.url)('GET', '/api/operator/me', { headers: { 'x-api-key': key.body.data.key } })).status).toBe(403);
  });

  it('answers an operator, for as long as they are one', async () => {
    await asOwner(`INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line')`, [olivia.user.id]);
    const me = await olivia.api('GET', '/api/operator/me');
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ userId: olivia.user.id, email: 'olivia@example.com' });
    expect(Date.parse(me.body.data.grantedAt)).not.toBeNaN();
    // Another user is still no operator; and a revoked one is none the next request.
    expect((await ivy.api('GET', '/api/operator/me')).status).toBe(403);
    await asOwner(`DELETE FROM "authstrap_operator" WHERE "userId" = $1`, [olivia.user.id]);
    expect((await olivia.api('GET', '/api/operator/me')).status).toBe(403);
  });

  it("lets a user read only their own operator row, whatever their statement says", async () => {
    await asOwner(`INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line')`, [olivia.user.id]);
    const seenBy = async (userId: string) => {
      const outcome = await backend.running.db.pipeline([
        { text: `SELECT set_config('authstrap.user_id', $1, true)`, params: [userId] },
        { text: `SELECT "userId" FROM "authstrap_operator"`, params: [] },
      ]);
      return outcome.results[1]!.rows.map((row) => row.userId);
    };
    expect(await seenBy(ivy.user.id)).toEqual([]);
    expect(await seenBy(olivia.user.id)).toEqual([olivia.user.id]);
  });

  describe('what an operator sees', () => {
    let support: SignedUp;
    let jane: SignedUp;
    beforeAll(async () => {
      support = await signUp(backend.url, 'support@platform.example', undefined, 'Support');
      await asOwner(`INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line')`, [support.user.id]);
      jane = await signUp(backend.url, 'jane@acme.example');
      await apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: 'jane@acme.example', password: 'not her password' } });
      await apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: 'jane@acme.example', password: 'correct horse battery' } });
      expect((await ivy.api('POST', '/Organizations', { body: { name: 'Acme Widgets', slug: 'acme-widgets' } })).status).toBe(201);
    });

    it('finds users by part of their address or name, any case, or by id, with paging', async () => {
      const found = await support.api('GET', '/api/operator/users?search=ACME');
      expect(found.status).toBe(200);
      expect(found.body.data.map((user: { email: string }) => user.email)).toEqual(['jane@acme.example']);
      expect(found.body.data[0]).toMatchObject({ id: jane.user.id, organizations: 1, email_verified: expect.any(Boolean) });
      expect(found.body.data[0].lastSeenAt).toMatch(/Z$/);
      expect((await support.api('GET', `/api/operator/users?search=${jane.user.id}`)).body.data.map((user: { id: string }) => user.id)).toEqual([jane.user.id]);
      const everyone = await support.api('GET', '/api/operator/users?limit=2&page=1');
      expect(everyone.body.meta).toEqual({ page: 1, limit: 2, total: 4, totalPages: 2 });
      // Newest first, across every organization: nobody's rows are hidden from an operator.
      expect(everyone.body.data.map((user: { email: string }) => user.email)).toEqual(['jane@acme.example', 'support@platform.example']);
      // The wildcards of a search are taken as they are.
      expect((await support.api('GET', '/api/operator/users?search=%25')).body.meta.total).toBe(0);
      expect((await support.api('GET', '/api/operator/users?search=_')).body.meta.total).toBe(0);
    });

    it("shows a user's organizations, sessions and failed sign-ins", async () => {
      const user = await support.api('GET', `/api/operator/users/${jane.user.id}`);
      expect(user.status).toBe(200);
      expect(user.body.data).toMatchObject({ email: 'jane@acme.example', operator: false });
      expect(user.body.data.organizations).toEqual([expect.objectContaining({ role: 'owner', slug: expect.any(String) })]);
      expect(user.body.data.sessions.length).toBe(2);
      expect(user.body.data.signIns.map((event: { type: string; method: string | null }) => [event.type, event.method])).toEqual([
        ['session.signed_in', 'password'],
        ['session.sign_in_failed', null],
      ]);
      expect((await support.api('GET', '/api/operator/users/00000000-0000-4000-8000-00000000abcd')).status).toBe(404);
      expect(user.body.data).toMatchObject({ suspensions: [], ssoRequiredBy: null });
    });

    it("says where a directory suspended a user and which organization makes them sign in with SSO", async () => {
      const organizationId = jane.organizationId;
      await asOwner(`INSERT INTO "authstrap_domain" ("organizationId", "domain", "state", "txtToken", "verifiedAt") VALUES ($1, 'acme.example', 'verified', 'token', now())`, [organizationId]);
      await asOwner(`INSERT INTO "authstrap_sso_policy" ("organizationId", "ssoRequired", "requiredSince", "breakGlass") VALUES ($1, true, now(), 'owners')`, [organizationId]);
      const ivysOrganization = (await asOwner(`SELECT "id", "name", "slug" FROM "Organization" WHERE "slug" = 'acme-widgets'`, [])).rows[0]!;
      await asOwner(`INSERT INTO "member" ("organizationId", "userId", "role") VALUES ($1, $2, 'member')`, [ivysOrganization.id, jane.user.id]);
      await asOwner(
        `WITH gone AS (DELETE FROM "member" WHERE "organizationId" = $1 AND "userId" = $2 RETURNING "id", "role", "createdAt")
         INSERT INTO "authstrap_member_suspension" ("id", "organizationId", "userId", "role", "memberCreatedAt", "reason") SELECT "id", $1, $2, "role", "createdAt", 'directory-inactive' FROM gone`,
        [ivysOrganization.id, jane.user.id],
      );
      try {
        const user = (await support.api('GET', `/api/operator/users/${jane.user.id}`)).body.data;
        expect(user.suspensions).toEqual([{ organizationId: ivysOrganization.id, name: ivysOrganization.name, slug: 'acme-widgets', reason: 'directory-inactive', since: expect.stringMatching(/Z$/) }]);
        expect(user.ssoRequiredBy).toEqual({ organizationId, name: expect.any(String), slug: expect.any(String) });
      } finally {
        await asOwner(`DELETE FROM "authstrap_member_suspension" WHERE "userId" = $1`, [jane.user.id]);
        await asOwner(`DELETE FROM "authstrap_sso_policy" WHERE "organizationId" = $1`, [organizationId]);
        await asOwner(`DELETE FROM "authstrap_domain" WHERE "organizationId" = $1`, [organizationId]);
      }
    });

    it('finds organizations by name, slug or a member\'s address', async () => {
      const names = async (search: string) => (await support.api('GET', `/api/operator/organizations?search=${encodeURIComponent(search)}`)).body.data.map((org: { name: string }) => org.name);
      expect(await names('widgets')).toEqual(['Acme Widgets']);
      expect(await names('acme-w')).toEqual(['Acme Widgets']);
      // Jane's personal organization, by her address; Acme Widgets is Ivy's.
      expect((await names('jane@acme')).length).toBe(1);
      const widgets = (await support.api('GET', '/api/operator/organizations?search=Acme%20Widgets')).body.data[0];
      expect(widgets).toMatchObject({ slug: 'acme-widgets', members: 1 });
    });

    it("serves the searches from pg_trgm's indexes; without the extension they give the same answers and the start says so once", async () => {
      const db = backend.running.db;
      expect(await missingSearchIndexes(db)).toEqual([]);
      const found = async () => [
        (await support.api('GET', '/api/operator/users?search=acme')).body.data.map((user: { id: string }) => user.id),
        (await support.api('GET', '/api/operator/organizations?search=jane@acme')).body.data.map((org: { id: string }) => org.id),
        (await support.api('GET', '/api/operator/organizations?search=widgets')).body.data.map((org: { id: string }) => org.id),
      ];
      const withIndexes = await found();
      expect(withIndexes.map((ids) => ids.length)).toEqual([1, 1, 1]);
      // The migration's statement as the shipped migration has it: the extension, then the indexes.
      const statement = /DO \$\$\nDECLARE\n {2}trgm_schema text;[\s\S]*?\nEND\n\$\$;/.exec(fs.readFileSync(path.join(projectDir, 'migrations/0001_init.sql'), 'utf8'))?.[0];
      expect(statement).toContain('gin_trgm_ops');
      try {
        // What a database without pg_trgm has.
        await asOwner('DROP EXTENSION pg_trgm CASCADE', []);
        expect(await missingSearchIndexes(db)).toEqual(searchIndexNames);
        expect(await found()).toEqual(withIndexes);
        const lines: string[] = [];
        await warnWithoutSearchIndexes(db, pino({ level: 'info' }, { write: (line: string) => lines.push(line) }));
        expect(lines).toHaveLength(1);
        expect(JSON.parse(lines[0]!)).toMatchObject({ level: 40, missing: searchIndexNames, msg: expect.stringContaining('pg_trgm') });
        // A role that may not create the extension: the statement is a notice, and the migration's other statements stand.
        await db.asOwner(async (tx) => {
          await tx.query('SET LOCAL ROLE "authstrap_app"');
          await tx.query(statement!);
          await tx.query('RESET ROLE');
          await tx.query('SELECT 1 FROM "User" LIMIT 1');
        });
        expect(await missingSearchIndexes(db)).toEqual(searchIndexNames);
      } finally {
        await asOwner(statement!, []);
      }
      expect(await missingSearchIndexes(db)).toEqual([]);
      const quiet: string[] = [];
      await warnWithoutSearchIndexes(db, pino({ level: 'info' }, { write: (line: string) => quiet.push(line) }));
      expect(quiet).toEqual([]);
      expect(await found()).toEqual(withIndexes);
    });

    it("signs a user out everywhere, with a reason, on the record: the platform's log and the user's own security events", async () => {
      const victim = await signUp(backend.url, 'spammer@bad.example');
      expect((await victim.api('GET', '/api/auth/get-session')).status).toBe(200);
      const noReason = await support.api('POST', `/api/operator/users/${victim.user.id}/revoke-sessions`, { body: {} });
      expect(noReason.status).toBe(422);
      expect((await jane.api('POST', `/api/operator/users/${victim.user.id}/revoke-sessions`, { body: { reason: 'not an operator' } })).status).toBe(403);
      const revoked = await support.api('POST', `/api/operator/users/${victim.user.id}/revoke-sessions`, { body: { reason: 'spam invitations' } });
      expect(revoked.status).toBe(200);
      expect(revoked.body.data).toEqual({ sessions: 1 });
      expect((await victim.api('GET', '/api/auth/get-session')).status).toBe(401);
      const log = await support.api('GET', '/api/operator/events?type=operator.revoked_sessions');
      expect(log.body.data[0]).toMatchObject({
        type: 'operator.revoked_sessions',
        userEmail: 'spammer@bad.example',
        actorType: 'user',
        actorId: support.user.id,
        actorEmail: 'support@platform.example',
        data: { sessions: 1, reason: 'spam invitations' },
        summary: 'Support (operator) revoked 1 session of spammer@bad.example (reason: spam invitations)',
      });
      // Once in the platform's log: the copy in the user's organization is that organization's.
      expect(log.body.data.filter((event: { entityId: string }) => event.entityId === victim.user.id)).toHaveLength(1);
      expect((await support.api('GET', '/api/operator/events?type=user.signed_up')).status).toBe(400);
      // The user sees it among their own security events, once signed in again.
      const signedIn = await apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: 'spammer@bad.example', password: 'correct horse battery' } });
      const ownEvents = await apiClient(backend.url, { token: signedIn.body.data.token })('GET', '/api/auth/security-events?type=operator.revoked_sessions');
      expect(ownEvents.body.data.map((event: { type: string; actorId: string }) => [event.type, event.actorId])).toEqual([['operator.revoked_sessions', support.user.id]]);
      // The organization the user owns sees that support acted, and when, in its own audit log, in the same words.
      const orgLog = await apiClient(backend.url, { token: signedIn.body.data.token, organizationId: victim.organizationId })('GET', '/audit-events?type=operator.revoked_sessions');
      expect(orgLog.status).toBe(200);
      expect(orgLog.body.data).toEqual([
        expect.objectContaining({
          organizationId: victim.organizationId,
          userId: null,
          actorId: support.user.id,
          entity: 'User',
          entityId: victim.user.id,
          summary: 'Support (operator) revoked 1 session of spammer@bad.example (reason: spam invitations)',
        }),
      ]);
      // Another organization's owner sees nothing of it.
      expect((await ivy.api('GET', '/audit-events?type=operator.revoked_sessions')).body.data).toEqual([]);
      expect((await support.api('POST', '/api/operator/users/00000000-0000-4000-8000-00000000abcd/revoke-sessions', { body: { reason: 'x' } })).status).toBe(404);
    });

    it("exports the platform's log as CSV: every event of the page's filter, across batches, hostile names defused", async () => {
      const exportCsv = async (query: string, who = support) => {
        const response = await fetch(new URL(`/api/operator/events/export.csv${query}`, backend.url), { headers: { authorization: `Bearer ${who.token}` } });
        expect(response.status).toBe(200);
        expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
        expect(response.headers.get('content-disposition')).toMatch(/^attachment; filename="platform-log-\d{4}-\d{2}-\d{2}\.csv"$/);
        const [header, ...rows] = parseCsv(await response.text());
        expect(header).toEqual(['id', 'createdAt', 'type', 'actorType', 'actorId', 'actorEmail', 'actorName', 'userId', 'userEmail', 'userName', 'entity', 'entityId', 'ipAddress', 'data', 'summary']);
        return rows.map((row) => Object.fromEntries(header!.map((column, index) => [column, row[index]!])));
      };
      // An operator and a user whose names a spreadsheet would run as formulas.
      const formula = '=HYPERLINK("http://evil.example","open me")';
      const prankster = await signUp(backend.url, 'prankster@platform.example', undefined, formula);
      await asOwner(`INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line')`, [prankster.user.id]);
      const target = await signUp(backend.url, 'target@acme.example', undefined, '@SUM(1+1)');
      expect((await prankster.api('POST', `/api/operator/users/${target.user.id}/revoke-sessions`, { body: { reason: '-1+2 spam, "quoted", and a comma' } })).status).toBe(200);

      const rows = await exportCsv('?type=operator.revoked_sessions');
      const row = rows.find((candidate) => candidate.actorId === prankster.user.id)!;
      expect(row).toMatchObject({ type: 'operator.revoked_sessions', actorEmail: 'prankster@platform.example', userId: target.user.id, userEmail: 'target@acme.example' });
      // A leading apostrophe: shown as text, never run; the value is otherwise whole (quotes and commas through RFC 4180's quoting).
      expect(row.actorName).toBe(`'${formula}`);
      expect(row.userName).toBe("'@SUM(1+1)");
      expect(row.summary).toBe(`'${formula} (operator) revoked 1 session of target@acme.example (reason: -1+2 spam, "quoted", and a comma)`);
      expect(JSON.parse(row.data!)).toEqual({ sessions: 1, reason: '-1+2 spam, "quoted", and a comma' });
      for (const cells of rows) for (const cell of Object.values(cells)) expect(cell).not.toMatch(/^[=+\-@\t\r]/);
      // The same events as the page's filter, every one of them.
      const listed = await support.api('GET', '/api/operator/events?type=operator.revoked_sessions&limit=100');
      expect(rows.map((event) => event.id).sort()).toEqual(listed.body.data.map((event: { id: string }) => event.id).sort());
      expect(rows.every((event) => event.type === 'operator.revoked_sessions')).toBe(true);

      // Past one batch (1,000): 1,100 events of an old day, two at each instant, so that the keyset's ties are met at the seam.
      await asOwner(
        `INSERT INTO "authstrap_event" ("type", "organizationId", "userId", "actorType", "actorId", "entity", "entityId", "data", "createdAt")
         SELECT 'operator.sent_password_reset', NULL, $1::uuid, 'user', $2::text, 'User', $1::text, '{}'::jsonb, timestamptz '2026-01-01T00:00:00Z' + (n / 2) * interval '1 millisecond'
           FROM generate_series(1, 1100) n`,
        [target.user.id, support.user.id],
      );
      const many = await exportCsv('?type=operator.sent_password_reset');
      const total = (await support.api('GET', '/api/operator/events?type=operator.sent_password_reset&limit=1')).body.meta.total;
      expect(total).toBeGreaterThanOrEqual(1100);
      expect(many).toHaveLength(total);
      expect(new Set(many.map((event) => event.id)).size).toBe(total);
      const times = many.map((event) => event.createdAt!);
      expect([...times].sort().reverse()).toEqual(times);
      // Every type: at least both of the above.
      expect((await exportCsv('')).length).toBeGreaterThanOrEqual(total + rows.length);

      // Refusals come as the API's JSON: a bad filter, paging the export does not take, anyone who is not an operator.
      const badType = await support.api('GET', '/api/operator/events/export.csv?type=user.signed_up');
      expect(badType.status).toBe(400);
      expect(badType.body.error.details).toHaveProperty('type');
      expect((await support.api('GET', '/api/operator/events/export.csv?page=2')).body.error.details).toEqual({ page: 'Unknown query parameter' });
      expect((await jane.api('GET', '/api/operator/events/export.csv')).status).toBe(403);
      expect((await apiClient(backend.url)('GET', '/api/operator/events/export.csv')).status).toBe(401);
      // And through the typed client, as the app downloads it.
      const client = createAuthstrapClient({ baseUrl: backend.url, token: support.token });
      const [, ...typed] = parseCsv(await (await client.operator.exportEvents({ type: 'operator.revoked_sessions' })).text());
      expect(typed.map((cells) => cells[0]).sort()).toEqual(rows.map((event) => event.id).sort());
      const refused = await createAuthstrapClient({ baseUrl: backend.url, token: jane.token }).operator.exportEvents().catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(AuthstrapError);
      expect((refused as AuthstrapError).status).toBe(403);
    });

    it('refuses the searches to a non-operator and a bad query with a 400 naming the parameter', async () => {
      for (const path of ['/api/operator/users', `/api/operator/users/${jane.user.id}`, '/api/operator/organizations']) expect((await jane.api('GET', path)).status).toBe(403);
      const unknown = await support.api('GET', '/api/operator/users?sort=email');
      expect(unknown.status).toBe(400);
      expect(unknown.body.error.details).toEqual({ sort: 'Unknown query parameter' });
      expect((await support.api('GET', '/api/operator/users?page=0')).status).toBe(400);
      expect((await support.api('GET', '/api/operator/users?limit=5000')).body.meta.limit).toBe(100);
    });

    it("lists a user's last 20 refused sign-ins, newest first, each with the organization whose policy refused or none (a ban), to operators only", async () => {
      // Sam is a member of Ivy's organization, which owns widgets.example and requires single sign-on.
      const sam = await addMember(backend.url, ivy, 'sam@widgets.example', 'member');
      const ivysOrganization = (await asOwner(`SELECT "id", "name", "slug" FROM "Organization" WHERE "id" = $1`, [ivy.organizationId])).rows[0]!;
      await asOwner(`INSERT INTO "authstrap_domain" ("organizationId", "domain", "state", "txtToken", "verifiedAt") VALUES ($1, 'widgets.example', 'verified', 'token', now())`, [ivy.organizationId]);
      await asOwner(`INSERT INTO "authstrap_sso_policy" ("organizationId", "ssoRequired", "requiredSince", "breakGlass") VALUES ($1, true, now(), 'owners')`, [ivy.organizationId]);
      const signIn = () => apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: 'sam@widgets.example', password: 'correct horse battery' } });
      try {
        expect((await signIn()).body.error.code).toBe('SSO_REQUIRED');
        await asOwner(`DELETE FROM "authstrap_sso_policy" WHERE "organizationId" = $1`, [ivy.organizationId]);
        expect((await support.api('POST', `/api/operator/users/${sam.user.id}/ban`, { body: { reason: 'spam' } })).status).toBe(200);
        expect((await signIn()).body.error.code).toBe('BANNED');

        const client = createAuthstrapClient({ baseUrl: backend.url, token: support.token });
        const seen = await client.operator.user(sam.user.id);
        expect(seen.refusedSignIns).toEqual([
          { code: 'BANNED', method: 'password', organization: null, createdAt: expect.stringMatching(/Z$/), ipAddress: expect.any(String) },
          { code: 'SSO_REQUIRED', method: 'password', organization: { id: ivysOrganization.id, name: ivysOrganization.name, slug: ivysOrganization.slug }, createdAt: expect.stringMatching(/Z$/), ipAddress: expect.any(String) },
        ]);
        // Another user's refusals are not theirs: Jane has none.
        expect((await client.operator.user(jane.user.id)).refusedSignIns).toEqual([]);
        // The latest 20, however many there are.
        await asOwner(
          `INSERT INTO "authstrap_event" ("type", "userId", "actorType", "data", "createdAt")
           SELECT 'session.sign_in_refused', $1, 'system', jsonb_build_object('email', 'sam@widgets.example', 'method', 'password', 'code', 'BANNED'), now() - make_interval(days => n)
             FROM generate_series(1, 25) AS n`,
          [sam.user.id],
        );
        const bounded = await client.operator.user(sam.user.id);
        expect(bounded.refusedSignIns).toHaveLength(20);
        expect(bounded.refusedSignIns.slice(0, 2).map((refused) => refused.code)).toEqual(['BANNED', 'SSO_REQUIRED']);
        const times = bounded.refusedSignIns.map((refused) => Date.parse(refused.createdAt));
        expect(times).toEqual([...times].sort((a, b) => b - a));
        // Nobody but an operator reads them: not Ivy, whose organization's policy refused Sam (her audit log has its own).
        expect((await ivy.api('GET', `/api/operator/users/${sam.user.id}`)).status).toBe(403);
      } finally {
        await asOwner(`DELETE FROM "authstrap_sso_policy" WHERE "organizationId" = $1`, [ivy.organizationId]);
        await asOwner(`DELETE FROM "authstrap_domain" WHERE "organizationId" = $1`, [ivy.organizationId]);
      }
    });
  });

});

describe.each(databaseKinds)('OPERATOR_RECENT_SIGN_IN_MINUTES on the %s database', (kind) => {
  it("refuses a destructive action to an operator whose sign-in is older, and takes it after a fresh one", async () => {
    const backend = await startBackend(kind, { OPERATOR_RECENT_SIGN_IN_MINUTES: '5' });
    try {
      const support = await signUp(backend.url, 'support@platform.example');
      const user = await signUp(backend.url, 'someone@acme.example');
      await backend.running.db.asOwner((tx) => tx.query(`INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line')`, [support.user.id]));
      await backend.running.db.asOwner((tx) => tx.query(`UPDATE "session" SET "createdAt" = now() - interval '6 minutes' WHERE "userId" = $1`, [support.user.id]));
      const stale = await support.api('POST', `/api/operator/users/${user.user.id}/revoke-sessions`, { body: { reason: 'test' } });
      expect(stale.status).toBe(403);
      expect(stale.body.error.message).toContain('OPERATOR_RECENT_SIGN_IN_MINUTES');
      // A ban and its lifting are such actions too: refused before anything is changed.
      for (const action of ['ban', 'unban']) {
        const refused = await support.api('POST', `/api/operator/users/${user.user.id}/${action}`, { body: { reason: 'test' } });
        expect(refused.status, action).toBe(403);
        expect(refused.body.error.message).toContain('OPERATOR_RECENT_SIGN_IN_MINUTES');
      }
      // So are the actions on a user or an organization, the deletions first.
      const stalePaths: ['POST' | 'DELETE', string, unknown][] = [
        ['DELETE', `/api/operator/users/${user.user.id}`, { confirm: 'someone@acme.example' }],
        ['DELETE', `/api/operator/organizations/${user.organizationId}`, { confirm: 'anything' }],
        ['POST', `/api/operator/users/${user.user.id}/send-password-reset`, {}],
        ['POST', `/api/operator/organizations/${user.organizationId}/transfer-ownership`, { userId: user.user.id }],
        ['POST', '/api/operator/operators', { email: 'someone@acme.example' }],
      ];
      for (const [method, path, body] of stalePaths) {
        const refused = await support.api(method, path, { body });
        expect(refused.status, `${method} ${path}`).toBe(403);
        expect(refused.body.error.message).toContain('OPERATOR_RECENT_SIGN_IN_MINUTES');
      }
      expect((await backend.running.db.asOwner((tx) => tx.query(`SELECT count(*)::int AS n FROM "Organization" WHERE "id" = $1`, [user.organizationId]))).rows[0]!.n).toBe(1);
      expect((await user.api('GET', '/api/auth/get-session')).status).toBe(200);
      // Looking needs no fresh sign-in.
      expect((await support.api('GET', '/api/operator/users')).status).toBe(200);
      const fresh = await apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: 'support@platform.example', password: 'correct horse battery' } });
      const freshly = apiClient(backend.url, { token: fresh.body.data.token });
      const done = await freshly('POST', `/api/operator/users/${user.user.id}/revoke-sessions`, { body: { reason: 'test' } });
      expect(done.status).toBe(200);
      expect((await freshly('POST', `/api/operator/users/${user.user.id}/ban`, { body: { reason: 'test' } })).status).toBe(200);
      expect((await freshly('POST', `/api/operator/users/${user.user.id}/unban`)).status).toBe(200);
    } finally {
      await backend.stop();
    }
  });
});

