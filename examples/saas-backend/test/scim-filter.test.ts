import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../src/db/database.js';
import { ScimError, scimErrorBody } from '../src/scim/errors.js';
import { compileFilter } from '../src/scim/filter-sql.js';
import { maxFilterDepth, maxFilterLength, parseFilter, parsePath } from '../src/scim/filter.js';
import { createThrowawayDatabase, databaseKinds, projectDir } from './support/backend.js';
import { scimErrorOf } from './support/scim.js';

/**
 * src/scim/filter.ts and filter-sql.ts (docs/enterprise-identity.md 6.1): RFC 7644's filters,
 * the ones Okta and Entra ID send, hostile ones, and the SQL they become, run against a table
 * shaped like `authstrap_scim_user` on each database the suite has.
 */

const compare = (attribute: string, operator: string, value: unknown, extra: object = {}) => ({
  kind: 'compare',
  path: { attribute, ...extra },
  operator,
  value,
});

// Every example filter of RFC 7644 section 3.4.2.2, as written there.
const rfcExamples = [
  'userName eq "bjensen"',
  'name.familyName co "O\'Malley"',
  'userName sw "J"',
  'urn:ietf:params:scim:schemas:core:2.0:User:userName sw "J"',
  'title pr',
  'meta.lastModified gt "2011-05-13T04:42:34Z"',
  'meta.lastModified ge "2011-05-13T04:42:34Z"',
  'meta.lastModified lt "2011-05-13T04:42:34Z"',
  'meta.lastModified le "2011-05-13T04:42:34Z"',
  'title pr and userType eq "Employee"',
  'title pr or userType eq "Intern"',
  'schemas eq "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"',
  'userType eq "Employee" and (emails co "example.com" or emails.value co "example.org")',
  'userType ne "Employee" and not (emails co "example.com" or emails.value co "example.org")',
  'userType eq "Employee" and (emails.type eq "work")',
  'userType eq "Employee" and emails[type eq "work" and value co "@example.com"]',
  'emails[type eq "work" and value co "@example.com"] or ims[type eq "xmpp" and value co "@foo.com"]',
  'userName Eq "john"',
  'Username eq "john"',
];

describe('parseFilter: RFC 7644 section 3.4.2.2', () => {
  it.each(rfcExamples)('reads %s', (text) => {
    expect(() => parseFilter(text)).not.toThrow();
  });

  it('reads attribute paths with a schema URN and a sub-attribute', () => {
    expect(parseFilter('urn:ietf:params:scim:schemas:core:2.0:User:userName sw "J"')).toEqual(
      compare('userName', 'sw', 'J', { schema: 'urn:ietf:params:scim:schemas:core:2.0:User' }),
    );
    expect(parseFilter('name.familyName co "O\'Malley"')).toEqual(compare('name', 'co', "O'Malley", { subAttribute: 'familyName' }));
    expect(parseFilter('urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager.value eq "42"')).toEqual(
      compare('manager', 'eq', '42', { schema: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User', subAttribute: 'value' }),
    );
  });

  it('binds and tighter than or, and reads not and parentheses', () => {
    expect(parseFilter('title pr or userType eq "Intern" and active eq true')).toEqual({
      kind: 'or',
      filters: [
        { kind: 'present', path: { attribute: 'title' } },
        { kind: 'and', filters: [compare('userType', 'eq', 'Intern'), compare('active', 'eq', true)] },
      ],
    });
    expect(parseFilter('(title pr or userType eq "Intern") and not (active eq false)')).toEqual({
      kind: 'and',
      filters: [
        { kind: 'or', filters: [{ kind: 'present', path: { attribute: 'title' } }, compare('userType', 'eq', 'Intern')] },
        { kind: 'not', filter: compare('active', 'eq', false) },
      ],
    });
  });

  it('reads operators and keywords in any case, and JSON values of every kind', () => {
    expect(parseFilter('userName EQ "a" AND title PR OR Not (x Ne NULL)')).toEqual({
      kind: 'or',
      filters: [
        { kind: 'and', filters: [compare('userName', 'eq', 'a'), { kind: 'present', path: { attribute: 'title' } }] },
        { kind: 'not', filter: compare('x', 'ne', null) },
      ],
    });
    expect(parseFilter('a gt -1.5e2')).toEqual(compare('a', 'gt', -150));
    expect(parseFilter('a eq True')).toEqual(compare('a', 'eq', true));
    expect(parseFilter('a eq "tab\\there \\"quoted\\" \\u00e9\\\\"')).toEqual(compare('a', 'eq', 'tab\there "quoted" é\\'));
  });

  it('reads a value path as one element matching the whole bracket', () => {
    expect(parseFilter('emails[type eq "work" and value co "@acme"]')).toEqual({
      kind: 'valuePath',
      path: { attribute: 'emails' },
      filter: { kind: 'and', filters: [compare('type', 'eq', 'work'), compare('value', 'co', '@acme')] },
    });
  });
});

describe('parseFilter: what Okta and Entra ID send', () => {
  it("reads Okta's lookup before a create (GET /Users?filter=userName%20eq%20%22test.user%40okta.local%22)", () => {
    const text = decodeURIComponent('userName%20eq%20%22test.user%40okta.local%22');
    expect(parseFilter(text)).toEqual(compare('userName', 'eq', 'test.user@okta.local'));
  });

  it("reads Entra ID's lookups of users and groups", () => {
    expect(parseFilter('userName eq "Test_User_00aa00aa-bb11-cc22-dd33-44ee44ee44ee"')).toEqual(
      compare('userName', 'eq', 'Test_User_00aa00aa-bb11-cc22-dd33-44ee44ee44ee'),
    );
    expect(parseFilter('userName eq "non-existent user"')).toEqual(compare('userName', 'eq', 'non-existent user'));
    expect(parseFilter('displayName eq "displayName"')).toEqual(compare('displayName', 'eq', 'displayName'));
    expect(parseFilter('externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"')).toEqual(compare('externalId', 'eq', '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef'));
  });

  it("reads Entra ID's emails[type eq \"work\"].value eq as one element of that type with that value", () => {
    expect(parseFilter('emails[type eq "work"].value eq "user@contoso.com"')).toEqual({
      kind: 'valuePath',
      path: { attribute: 'emails' },
      filter: { kind: 'and', filters: [compare('type', 'eq', 'work'), compare('value', 'eq', 'user@contoso.com')] },
    });
  });
});

describe('parsePath: PATCH paths (RFC 7644 section 3.5.2)', () => {
  it('reads attributes, sub-attributes, URN-prefixed attributes and value filters', () => {
    expect(parsePath('members')).toEqual({ attribute: 'members' });
    expect(parsePath('name.familyName')).toEqual({ attribute: 'name', subAttribute: 'familyName' });
    expect(parsePath('urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department')).toEqual({
      schema: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User',
      attribute: 'department',
    });
    expect(parsePath('addresses[type eq "work"]')).toEqual({ attribute: 'addresses', filter: compare('type', 'eq', 'work') });
    expect(parsePath('members[value eq "2819c223-7f76-453a-919d-413861904646"]')).toEqual({
      attribute: 'members',
      filter: compare('value', 'eq', '2819c223-7f76-453a-919d-413861904646'),
    });
    expect(parsePath('members[value eq "2819c223-7f76-453a-919d-413861904646"].displayName')).toEqual({
      attribute: 'members',
      filter: compare('value', 'eq', '2819c223-7f76-453a-919d-413861904646'),
      subAttribute: 'displayName',
    });
    expect(parsePath('emails[type eq "work"].value')).toEqual({ attribute: 'emails', filter: compare('type', 'eq', 'work'), subAttribute: 'value' });
  });

  it('refuses a malformed path as invalidPath, saying where', () => {
    for (const text of ['', 'emails[type eq "work"', 'emails[type eq "work"].', 'name.givenName[type eq "x"]', 'a.b.c', 'emails[type eq "work"] extra', '9lives']) {
      const error = scimErrorOf(() => parsePath(text));
      expect(error.scimType, text).toBe('invalidPath');
      expect(error.detail, text).toMatch(/^Invalid path: .*at character \d+/);
    }
  });
});

describe('parseFilter: hostile input', () => {
  it(`refuses more than ${maxFilterLength} characters, and reads exactly ${maxFilterLength}`, () => {
    const filterOfLength = (length: number) => `userName eq "${'x'.repeat(length - 'userName eq ""'.length)}"`;
    expect(filterOfLength(maxFilterLength)).toHaveLength(2000);
    expect(() => parseFilter(filterOfLength(2000))).not.toThrow();
    const error = scimErrorOf(() => parseFilter(filterOfLength(2001)));
    expect(error).toMatchObject({ status: 400, scimType: 'invalidFilter' });
    expect(error.detail).toContain('2001 characters');
  });

  it(`reads ${maxFilterDepth} levels of brackets and refuses ${maxFilterDepth + 1}`, () => {
    const nested = (levels: number) => `${'('.repeat(levels)}userName eq "a"${')'.repeat(levels)}`;
    expect(parseFilter(nested(20))).toEqual(compare('userName', 'eq', 'a'));
    expect(scimErrorOf(() => parseFilter(nested(21))).detail).toMatch(/deeper than 20 levels at character 21/);
    expect(scimErrorOf(() => parseFilter(`${'not ('.repeat(21)}a pr${')'.repeat(21)}`)).scimType).toBe('invalidFilter');
    expect(parseFilter(`${'('.repeat(19)}emails[type eq "w"]${')'.repeat(19)}`)).toMatchObject({ kind: 'valuePath' });
    expect(scimErrorOf(() => parseFilter(`${'('.repeat(20)}emails[type eq "w"]${')'.repeat(20)}`)).detail).toMatch(/deeper than 20/);
  });

  it('answers deep nesting within the length limit with a ScimError, not a stack overflow', () => {
    expect(scimErrorOf(() => parseFilter('('.repeat(1999) + 'a')).scimType).toBe('invalidFilter');
    expect(scimErrorOf(() => parsePath(`a[${'('.repeat(1990)}`)).scimType).toBe('invalidPath');
  });

  it('says where and what was expected', () => {
    const cases: [string, RegExp][] = [
      ['userName eq "abc', /string starting at character 13 has no closing quote/],
      ['userName xx "a"', /expected an operator \(eq, ne, co, sw, ew, gt, ge, lt, le or pr\) at character 10, found 'xx'/],
      ['userName eq', /expected a value .* at character 12, found the end/],
      ['userName eq "a" and', /expected an attribute path, 'not' or '\(' at character 20, found the end/],
      ['userName eq "a" "b"', /expected 'and', 'or' or the end of the filter at character 17/],
      ["userName eq 'a'", /string in double quotes at character 13/],
      ['(userName eq "a"', /expected '\)' at character 17/],
      ['emails[type eq "work"', /expected '\]' at character 22/],
      ['emails[type eq "a"] and emails[value[x pr] pr]', /cannot stand inside another value filter/],
      ['userName eq "a\\q"', /invalid escape in the string at character 15/],
      ['userName eq "line\nbreak"', /control character/],
      ['userName eq 01', /JSON number at character 13/],
      ['foo:bar eq "a"', /expected an attribute path \(a schema prefix starts with urn:\) at character 1, found 'foo:bar'/],
      ['', /expected an attribute path, 'not' or '\(' at character 1, found the end/],
    ];
    for (const [text, detail] of cases) {
      const error = scimErrorOf(() => parseFilter(text));
      expect(error.scimType, text).toBe('invalidFilter');
      expect(error.status, text).toBe(400);
      expect(error.detail, text).toMatch(detail);
    }
  });

  it('refuses SQL in place of a filter, and keeps SQL inside a string a string', () => {
    expect(scimErrorOf(() => parseFilter('userName eq "x" OR 1=1 --')).detail).toMatch(/unexpected character '=' at character 21/);
    expect(scimErrorOf(() => parseFilter('userName eq "x" OR 1 eq 1')).detail).toMatch(/expected an attribute path, 'not' or '\(' at character 20, found '1'/);
    expect(scimErrorOf(() => parseFilter('userName eq "x"; DROP TABLE "User"')).detail).toMatch(/unexpected character ';' at character 16/);
    // The quote is escaped, so all of it is the value.
    expect(parseFilter('userName eq "x\\") OR 1=1 --"')).toEqual(compare('userName', 'eq', 'x") OR 1=1 --'));
  });

  it('refuses what is not one string (a repeated query parameter) without a TypeError', () => {
    expect(scimErrorOf(() => parseFilter(['a pr', 'b pr'] as unknown as string)).detail).toMatch(/one string/);
  });

  it('answers every mutation of valid filters with a filter or a ScimError, never another error', () => {
    const valid = [...rfcExamples, 'emails[type eq "work"].value eq "user@contoso.com"', 'not (a pr) or (b eq -1.5 and c ne null)'];
    const insertions = [' ', '(', ')', '[', ']', '"', '\\', '.', ':', 'not ', ' and ', ' or ', ' eq ', ' pr', '-', '1e999', 'é', '\u0000', 'urn:'];
    let seed = 7;
    const random = (below: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return Math.floor((seed / 2147483648) * below);
    };
    let parsed = 0;
    for (let round = 0; round < 5000; round++) {
      let text = valid[random(valid.length)]!;
      for (let mutation = 1 + random(3); mutation > 0; mutation--) {
        const at = random(text.length + 1);
        text = random(2) === 0 ? text.slice(0, at) + insertions[random(insertions.length)] + text.slice(at) : text.slice(0, at) + text.slice(at + 1 + random(3));
      }
      for (const parse of [parseFilter, parsePath]) {
        try {
          parse(text);
          if (parse === parseFilter) parsed++;
        } catch (error) {
          expect(error, text).toBeInstanceOf(ScimError);
        }
      }
    }
    // Not all refusals: the mutations reach the parser's successful paths too.
    expect(parsed).toBeGreaterThan(200);
  });
});

describe('scimErrorBody', () => {
  it("is RFC 7644's error, its status a string", () => {
    expect(scimErrorBody(scimErrorOf(() => parseFilter('a xx')))).toEqual({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      status: '400',
      scimType: 'invalidFilter',
      detail: "Invalid filter: expected an operator (eq, ne, co, sw, ew, gt, ge, lt, le or pr) at character 3, found 'xx'",
    });
    expect(scimErrorBody(new ScimError(404, undefined, 'Resource 1 not found'))).toEqual({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      status: '404',
      detail: 'Resource 1 not found',
    });
  });
});

describe('compileFilter', () => {
  const sql = (text: string, resource: 'User' | 'Group' = 'User') => {
    const params: unknown[] = [];
    return { sql: compileFilter(parseFilter(text), resource, params), params };
  };

  it('compares userName lowercased, externalId as written, values only as parameters', () => {
    expect(sql('userName eq "BJensen"')).toEqual({ sql: '(u."userName" = lower($1::text))', params: ['BJensen'] });
    expect(sql('externalId eq "AbC"')).toEqual({ sql: '(u."externalId" = $1::text)', params: ['AbC'] });
    expect(sql('userName eq "x\\") OR 1=1 --"')).toEqual({ sql: '(u."userName" = lower($1::text))', params: ['x") OR 1=1 --'] });
  });

  it('numbers parameters after those already in the list', () => {
    const params: unknown[] = ['directory-id'];
    expect(compileFilter(parseFilter('userName eq "a" or externalId eq "b"'), 'User', params)).toBe(
      '((u."userName" = lower($2::text) OR u."externalId" = $3::text))',
    );
    expect(params).toEqual(['directory-id', 'a', 'b']);
  });

  it('escapes %, _ and \\ in co, sw and ew', () => {
    expect(sql('userName co "50%_off\\\\"')).toEqual({ sql: `(u."userName" LIKE lower($1::text) ESCAPE '\\')`, params: ['%50\\%\\_off\\\\%'] });
    expect(sql('userName sw "a_"').params).toEqual(['a\\_%']);
    expect(sql('userName ew "%a"').params).toEqual(['%\\%a']);
  });

  it('reads Entra ID\'s emails[type eq "work"].value eq through the stored emails, and emails.value through the array', () => {
    expect(sql('emails.value eq "A@Example.com"')).toEqual({ sql: '(u."emails" @> ARRAY[lower($1::text)])', params: ['A@Example.com'] });
    expect(sql('emails[value eq "a@example.com"]').sql).toBe('(u."emails" @> ARRAY[lower($1::text)])');
    expect(sql('emails[type eq "work"].value eq "a@example.com"').sql).toContain(`jsonb_array_elements(CASE jsonb_typeof(u."attributes"->'emails')`);
  });

  it('compares a uuid attribute with a value that is no uuid as matching nothing', () => {
    expect(sql('id eq "not-a-uuid"')).toEqual({ sql: '(FALSE)', params: [] });
    expect(sql('id ne "not-a-uuid"')).toEqual({ sql: '(TRUE)', params: [] });
    expect(sql('members.value eq "nope"', 'Group').sql).toBe('(EXISTS (SELECT 1 FROM "authstrap_scim_group_member" m WHERE m."groupId" = g."id" AND FALSE))');
  });

  it('compiles members.value to EXISTS in the member table', () => {
    expect(sql('members.value eq "2819C223-7F76-453A-919D-413861904646"', 'Group')).toEqual({
      sql: '(EXISTS (SELECT 1 FROM "authstrap_scim_group_member" m WHERE m."groupId" = g."id" AND m."scimUserId" = $1::uuid))',
      params: ['2819c223-7f76-453a-919d-413861904646'],
    });
  });

  it('refuses an attribute outside the map, naming it and those supported', () => {
    const error = scimErrorOf(() => sql('title pr'));
    expect(error).toMatchObject({ status: 400, scimType: 'invalidFilter' });
    expect(error.detail).toBe(
      'Filtering by title is not supported; use one of: id, userName, externalId, displayName, active, emails, emails.value, emails[...], name.givenName, name.familyName, meta.lastModified',
    );
    expect(scimErrorOf(() => sql('urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department eq "x"')).detail).toMatch(
      /^Filtering by urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department is not supported/,
    );
    expect(scimErrorOf(() => sql('userName eq "a"', 'Group')).detail).toMatch(/^Filtering by userName is not supported; use one of: id, displayName, externalId, members/);
    expect(scimErrorOf(() => sql('members[display eq "x"]', 'Group')).detail).toBe('Filtering members by display is not supported; use one of: value');
    expect(scimErrorOf(() => sql('name[givenName eq "x"]')).detail).toMatch(/^Filtering by name\[\.\.\.\] is not supported/);
  });

  it('refuses operators and values that do not fit the attribute', () => {
    expect(scimErrorOf(() => sql('active gt true')).detail).toMatch(/a boolean compares with eq or ne only/);
    expect(scimErrorOf(() => sql('active eq "yes"')).detail).toMatch(/must be true or false/);
    expect(scimErrorOf(() => sql('meta.lastModified co "2011"')).detail).toMatch(/date-time compares with/);
    expect(scimErrorOf(() => sql('meta.lastModified gt "yesterday"')).detail).toMatch(/must be a date-time/);
    expect(scimErrorOf(() => sql('userName eq 1')).detail).toMatch(/string in double quotes/);
    expect(scimErrorOf(() => sql('userName gt null')).detail).toMatch(/only eq and ne compare with null/);
    expect(scimErrorOf(() => sql('id co "a"')).detail).toMatch(/an id compares with eq or ne only/);
  });
});

/** Rows of a minimal `authstrap_scim_user`, `authstrap_scim_group` and member table. */
const schemaSql = `
  CREATE TABLE "authstrap_scim_user" (
    "id" uuid PRIMARY KEY, "userName" text NOT NULL, "externalId" text, "email" text NOT NULL,
    "emails" text[] NOT NULL, "displayName" text, "active" boolean NOT NULL, "attributes" jsonb NOT NULL,
    "updatedAt" timestamptz NOT NULL
  );
  CREATE TABLE "authstrap_scim_group" ("id" uuid PRIMARY KEY, "displayName" text NOT NULL, "externalId" text, "updatedAt" timestamptz NOT NULL);
  CREATE TABLE "authstrap_scim_group_member" ("groupId" uuid NOT NULL, "scimUserId" uuid NOT NULL, PRIMARY KEY ("groupId", "scimUserId"));
`;

const ids = {
  barbara: '2819c223-7f76-453a-919d-413861904646',
  omalley: '3819c223-7f76-453a-919d-413861904646',
  underscore: '4819c223-7f76-453a-919d-413861904646',
  bare: '5819c223-7f76-453a-919d-413861904646',
  admins: 'a819c223-7f76-453a-919d-413861904646',
  empty: 'b819c223-7f76-453a-919d-413861904646',
};

interface UserRow {
  id: string;
  userName: string;
  externalId: string | null;
  displayName: string | null;
  active: boolean;
  emails: { value: string; type?: string; primary?: boolean }[];
  name?: Record<string, string>;
  updatedAt: string;
}

const users: UserRow[] = [
  {
    id: ids.barbara,
    userName: 'BJensen@Example.com',
    externalId: 'bjensen',
    displayName: 'Babs Jensen',
    active: true,
    emails: [
      { value: 'BJensen@Example.com', type: 'work', primary: true },
      { value: 'babs@jensen.org', type: 'home' },
    ],
    name: { givenName: 'Barbara', familyName: 'Jensen' },
    updatedAt: '2011-05-13T04:42:34Z',
  },
  {
    id: ids.omalley,
    userName: "o'malley",
    externalId: 'BJENSEN',
    displayName: null,
    active: false,
    emails: [{ value: 'omalley@example.org', type: 'home' }],
    name: { familyName: "O'Malley" },
    updatedAt: '2012-01-01T00:00:00Z',
  },
  {
    id: ids.underscore,
    userName: 'a_b%c\\d',
    externalId: null,
    displayName: 'Under Score',
    active: true,
    emails: [{ value: 'under@acme.test', type: 'work' }],
    updatedAt: '2010-01-01T00:00:00Z',
  },
  { id: ids.bare, userName: 'axbyc', externalId: null, displayName: null, active: true, emails: [], updatedAt: '2010-06-01T00:00:00Z' },
];

describe.each(databaseKinds)('compiled filters on the %s database', (kind) => {
  let db: Database;
  let drop: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    const settings = { embeddedDbDir: 'memory://', projectDir, databaseTimeouts: { connectMs: 5000, queryMs: 5000 } };
    if (kind === 'postgres') {
      const database = await createThrowawayDatabase();
      drop = database.drop;
      db = await openDatabase({ ...settings, databaseUrl: database.url, databasePreparedStatements: false });
    } else {
      db = await openDatabase({ ...settings, databaseUrl: '' });
    }
    for (const statement of schemaSql.split(';').filter((text) => text.trim())) await db.query(statement);
    for (const user of users) {
      const attributes = { userName: user.userName, emails: user.emails, ...(user.name ? { name: user.name } : {}) };
      await db.query(
        `INSERT INTO "authstrap_scim_user" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        // The column holds the name lowercased, as the service keeps it (the resource as sent is in attributes).
        [user.id, user.userName.toLowerCase(), user.externalId, (user.emails[0]?.value ?? 'none').toLowerCase(), user.emails.map((email) => email.value.toLowerCase()), user.displayName, user.active, JSON.stringify(attributes), user.updatedAt],
      );
    }
    await db.query(`INSERT INTO "authstrap_scim_group" VALUES ($1, 'Admins', 'ext-admins', '2020-01-01T00:00:00Z'), ($2, 'Empty', NULL, '2020-01-01T00:00:00Z')`, [ids.admins, ids.empty]);
    await db.query(`INSERT INTO "authstrap_scim_group_member" VALUES ($1, $2), ($1, $3)`, [ids.admins, ids.barbara, ids.omalley]);
  });

  afterAll(async () => {
    await db?.close();
    await drop?.();
  });

  /** The userNames of the users `filter` matches. */
  async function usersMatching(filter: string): Promise<Set<string>> {
    const params: unknown[] = [];
    const condition = compileFilter(parseFilter(filter), 'User', params);
    const { rows } = await db.query<{ userName: string }>(`SELECT u."attributes"->>'userName' AS "userName" FROM "authstrap_scim_user" u WHERE ${condition} `, params);
    return new Set(rows.map((row) => row.userName));
  }

  async function groupsMatching(filter: string): Promise<Set<string>> {
    const params: unknown[] = [];
    const condition = compileFilter(parseFilter(filter), 'Group', params);
    const { rows } = await db.query<{ displayName: string }>(`SELECT g."displayName" FROM "authstrap_scim_group" g WHERE ${condition}`, params);
    return new Set(rows.map((row) => row.displayName));
  }

  const all = users.map((user) => user.userName);

  it('finds a user by userName in any case, and by externalId only in its own case', async () => {
    expect(await usersMatching('userName eq "bjensen@example.com"')).toEqual(new Set(['BJensen@Example.com']));
    expect(await usersMatching('urn:ietf:params:scim:schemas:core:2.0:User:userName sw "BJ"')).toEqual(new Set(['BJensen@Example.com']));
    expect(await usersMatching('externalId eq "bjensen"')).toEqual(new Set(['BJensen@Example.com']));
    expect(await usersMatching('externalId eq "BJENSEN"')).toEqual(new Set(["o'malley"]));
    expect(await usersMatching('userName eq "non-existent user"')).toEqual(new Set());
  });

  it('keeps an injection attempt a value', async () => {
    expect(await usersMatching('userName eq "x\\") OR 1=1 --"')).toEqual(new Set());
    expect(await usersMatching(`userName eq "x' OR '1'='1"`)).toEqual(new Set());
  });

  it('matches %, _ and \\ literally in co, sw and ew', async () => {
    expect(await usersMatching('userName co "_"')).toEqual(new Set(['a_b%c\\d']));
    expect(await usersMatching('userName sw "a_b%c\\\\"')).toEqual(new Set(['a_b%c\\d']));
    expect(await usersMatching('userName ew "%c\\\\d"')).toEqual(new Set(['a_b%c\\d']));
    expect(await usersMatching('userName co "%"')).toEqual(new Set(['a_b%c\\d']));
  });

  it('finds users by any of their addresses, and by the address of one type', async () => {
    expect(await usersMatching('emails.value eq "Babs@Jensen.org"')).toEqual(new Set(['BJensen@Example.com']));
    expect(await usersMatching('emails co "example"')).toEqual(new Set(['BJensen@Example.com', "o'malley"]));
    expect(await usersMatching('emails[type eq "work"].value eq "bjensen@example.com"')).toEqual(new Set(['BJensen@Example.com']));
    // The same address, but not the work one.
    expect(await usersMatching('emails[type eq "work"].value eq "babs@jensen.org"')).toEqual(new Set());
    expect(await usersMatching('emails[type eq "work" and value co "@acme"]')).toEqual(new Set(['a_b%c\\d']));
    expect(await usersMatching('emails.type eq "home"')).toEqual(new Set(['BJensen@Example.com', "o'malley"]));
    expect(await usersMatching('emails[primary eq true]')).toEqual(new Set(['BJensen@Example.com']));
    expect(await usersMatching('emails pr')).toEqual(new Set(['BJensen@Example.com', "o'malley", 'a_b%c\\d']));
  });

  it('matches absent values with ne and not ( ), and never with eq', async () => {
    expect(await usersMatching('displayName ne "Babs Jensen"')).toEqual(new Set(["o'malley", 'a_b%c\\d', 'axbyc'].sort()));
    expect(await usersMatching('not (name.givenName eq "barbara")')).toEqual(new Set(["o'malley", 'a_b%c\\d', 'axbyc'].sort()));
    expect(await usersMatching('not (not (name.givenName eq "barbara"))')).toEqual(new Set(['BJensen@Example.com']));
    expect(await usersMatching('displayName pr')).toEqual(new Set(['BJensen@Example.com', 'a_b%c\\d']));
    expect(await usersMatching('not (displayName pr)')).toEqual(new Set(["o'malley", 'axbyc']));
    expect(await usersMatching('displayName eq null')).toEqual(new Set(["o'malley", 'axbyc']));
    expect(await usersMatching('name.familyName co "malley"')).toEqual(new Set(["o'malley"]));
  });

  it('compares active as a boolean, given as Entra ID\'s strings too', async () => {
    expect(await usersMatching('active eq false')).toEqual(new Set(["o'malley"]));
    expect(await usersMatching('active eq "True"')).toEqual(new Set(all.filter((name) => name !== "o'malley")));
    expect(await usersMatching('active ne true')).toEqual(new Set(["o'malley"]));
  });

  it('compares meta.lastModified as a date-time (RFC 7644\'s examples)', async () => {
    expect(await usersMatching('meta.lastModified gt "2011-05-13T04:42:34Z"')).toEqual(new Set(["o'malley"]));
    expect(await usersMatching('meta.lastModified ge "2011-05-13T04:42:34Z"')).toEqual(new Set(['BJensen@Example.com', "o'malley"]));
    expect(await usersMatching('meta.lastModified lt "2011-05-13T04:42:34Z"')).toEqual(new Set(['a_b%c\\d', 'axbyc']));
    expect(await usersMatching('meta.lastModified le "2011-05-13T04:42:34Z"')).toEqual(new Set(['BJensen@Example.com', 'a_b%c\\d', 'axbyc']));
  });

  it('combines with and before or, and finds users by id (a value that is no uuid matching none)', async () => {
    expect(await usersMatching('userName sw "a" or active eq false and emails co "example"')).toEqual(new Set(["o'malley", 'a_b%c\\d', 'axbyc'].sort()));
    expect(await usersMatching('(userName sw "a" or active eq false) and emails co "example"')).toEqual(new Set(["o'malley"]));
    expect(await usersMatching(`id eq "${ids.barbara.toUpperCase()}"`)).toEqual(new Set(['BJensen@Example.com']));
    expect(await usersMatching('id eq "1 OR 1=1"')).toEqual(new Set());
    expect(await usersMatching('id ne "1 OR 1=1"')).toEqual(new Set(all));
  });

  it('finds groups by displayName in any case and by member', async () => {
    expect(await groupsMatching('displayName eq "admins"')).toEqual(new Set(['Admins']));
    expect(await groupsMatching(`members.value eq "${ids.omalley}"`)).toEqual(new Set(['Admins']));
    expect(await groupsMatching(`members[value eq "${ids.underscore}"]`)).toEqual(new Set());
    expect(await groupsMatching('not (members pr)')).toEqual(new Set(['Empty']));
    expect(await groupsMatching('externalId ne "ext-admins"')).toEqual(new Set(['Empty']));
    expect(await groupsMatching('members eq "not-an-id"')).toEqual(new Set());
    // Entra ID's question whether a user is in a group: about the members attribute of one group.
    expect(await groupsMatching(`id eq "${ids.admins}" and members eq "${ids.barbara}"`)).toEqual(new Set(['Admins']));
    expect(await groupsMatching(`id eq "${ids.empty}" and members eq "${ids.barbara}"`)).toEqual(new Set());
  });
});
