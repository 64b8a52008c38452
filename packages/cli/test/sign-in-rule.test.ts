import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityTables } from '../src/generate/identity-tables.js';
import { planMigrations, snapshotPath } from '../src/generate/migrations-plan.js';
import { databaseModel } from '../src/generate/table-model.js';
import type { EntityDefinition, Schema } from '../src/schema/types.js';
import { validateSchema } from '../src/schema/validate.js';
import { adminUrl } from './support/check-cycle.js';
import { createResources } from './support/example-copies.js';

/**
 * The sign-in rule (docs/enterprise-identity.md, 3.2) and its two triggers, over rows inserted
 * directly: each rule, break-glass, the parts generated from Better Auth's plugins, the locks that
 * close the race with a policy change, and the row-level security of the identity tables. On the
 * embedded database and on PostgreSQL.
 */

const project: EntityDefinition = { fields: { name: { type: 'string' } } };
const schemaOf = (entities: Record<string, EntityDefinition>): Schema => validateSchema({ entities });
const initSql = (schema: Schema) => planMigrations(schema, { files: [] }).files.find((file) => file.ownership === 'migration')!.contents;

/** What the tests need of a database: PGlite and a pg client alike. */
interface Db {
  query<Row = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<Row[]>;
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
}

const embedded = async (): Promise<Db> => {
  const db = new PGlite();
  return {
    query: async <Row,>(sql: string, params: unknown[] = []) => (await db.query<Row>(sql, params)).rows,
    exec: async (sql) => void (await db.exec(sql)),
    close: () => db.close(),
  };
};
const postgres = async (url: string): Promise<Db> => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return {
    query: async <Row,>(sql: string, params: unknown[] = []) => (await client.query(sql, params)).rows as Row[],
    exec: async (sql) => void (await client.query(sql)),
    close: () => client.end(),
  };
};

/**
 * A superuser passes every row-level security policy, so a rule that forgot the policies of the
 * tables it reads would pass here and fail in production, where the tables' owner is an ordinary
 * user. The migration runs as such a user, who then owns the tables and the rule's functions (they
 * run as their owner); the tests' own statements stay the superuser's.
 */
const tablesOwner = `authstrap_tables_owner_${process.pid}`;
async function migrateAsOwner(db: Db, sql: string) {
  const database = (await db.query<{ database: string }>('SELECT current_database() AS database'))[0]!.database;
  await db.exec(`DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'authstrap_app') THEN CREATE ROLE authstrap_app NOLOGIN; END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${tablesOwner}') THEN CREATE ROLE ${tablesOwner} NOLOGIN NOSUPERUSER NOBYPASSRLS; END IF;
  END $$;
  GRANT authstrap_app TO ${tablesOwner};
  GRANT CREATE ON DATABASE "${database}" TO ${tablesOwner};
  GRANT ALL ON SCHEMA public TO ${tablesOwner};`);
  await db.exec(`SET ROLE ${tablesOwner}`);
  try {
    await db.exec(sql);
  } finally {
    await db.exec('RESET ROLE');
  }
}
async function dropTablesOwner(url: string) {
  const db = await postgres(url);
  try {
    await db.exec(`DROP ROLE IF EXISTS ${tablesOwner}`);
  } finally {
    await db.close();
  }
}

/** A world of rows: acme owns acme.com (verified) and requires SSO; globex has a connection of its own. */
async function seed(db: Db) {
  const one = async (sql: string, params: unknown[] = []) => (await db.query<{ id: string }>(`${sql} RETURNING "id"`, params))[0]!.id;
  const organization = (slug: string) => one('INSERT INTO "Organization" ("name", "slug") VALUES ($1, $1)', [slug]);
  const user = (email: string) => one(`INSERT INTO "User" ("email", "name") VALUES ($1, 'Someone')`, [email]);
  const acme = await organization('acme');
  const globex = await organization('globex');
  const owner = await user('owner@acme.com');
  const employee = await user('employee@acme.com');
  const outsider = await user('someone@elsewhere.org');
  for (const [userId, organizationId, role] of [[owner, acme, 'owner'], [employee, acme, 'member'], [outsider, acme, 'member']]) {
    await db.query('INSERT INTO "member" ("organizationId", "userId", "role") VALUES ($1, $2, $3)', [organizationId, userId, role]);
  }
  await db.query(`INSERT INTO "authstrap_domain" ("organizationId", "domain", "state", "txtToken") VALUES ($1, 'acme.com', 'verified', 't1')`, [acme]);
  await db.query(`INSERT INTO "authstrap_sso_policy" ("organizationId", "ssoRequired", "requiredSince") VALUES ($1, true, now())`, [acme]);
  const connection = (organizationId: string, name: string, enabled: boolean) =>
    one(
      `INSERT INTO "authstrap_sso_connection" ("organizationId", "name", "protocol", "enabled", "oidcIssuer", "oidcClientId", "oidcClientSecret") VALUES ($1, $2, 'oidc', $3, 'https://idp.example', 'client', 'sealed:v1:x')`,
      [organizationId, name, enabled],
    );
  return {
    acme,
    globex,
    owner,
    employee,
    outsider,
    acmeConnection: await connection(acme, 'Okta', true),
    acmeDisabled: await connection(acme, 'Old Okta', false),
    globexConnection: await connection(globex, 'Globex IdP', true),
  };
}
type World = Awaited<ReturnType<typeof seed>>;

const verdict = async (db: Db, address: string, userId: string | null, method: string, organizationId: string | null = null, connectionId: string | null = null) =>
  (await db.query<{ verdict: unknown }>('SELECT authstrap.sign_in_verdict($1, $2, $3, $4, $5) AS verdict', [address, userId, method, organizationId, connectionId]))[0]!.verdict;
const allowed = { allowed: true, breakGlass: false };

describe.each(['embedded', 'postgres'] as const)('the sign-in rule, %s database', (kind) => {
  const resources = createResources({ adminUrl, name: 'signinrule' });
  const skip = kind === 'postgres' && !adminUrl;
  let db: Db;
  let world: World;
  let ssoRequired: Record<string, unknown>;

  beforeAll(async () => {
    if (skip) return;
    db = kind === 'embedded' ? await embedded() : await postgres(await resources.createDatabase());
    await migrateAsOwner(db, initSql(schemaOf({ Project: project })));
    world = await seed(db);
    ssoRequired = { allowed: false, code: 'SSO_REQUIRED', organizationId: world.acme, slug: 'acme', domain: 'acme.com' };
  }, 60_000);
  afterAll(async () => {
    await db?.close();
    await resources.cleanup();
    if (kind === 'postgres' && adminUrl) await dropTablesOwner(adminUrl);
  });
  /** Runs `body` in a transaction that is rolled back: each test changes the world for itself. */
  const inRollback = async (body: () => Promise<void>) => {
    await db.exec('BEGIN');
    try {
      await body();
    } finally {
      await db.exec('ROLLBACK');
    }
  };

  it.skipIf(skip)('refuses every method but SSO for an address in a verified domain of an organization that requires it, and says where to go', async () => {
    for (const method of ['password', 'sign-up', 'invitation', 'password-reset', 'email-change', 'better-auth:magic-link', 'service', 'unknown']) {
      expect(await verdict(db, 'employee@acme.com', world.employee, method), method).toEqual(ssoRequired);
    }
    // A sign-up has no user yet; the domain alone decides. The case of the address does not matter.
    expect(await verdict(db, 'New.Hire@ACME.com', null, 'sign-up')).toEqual(ssoRequired);
    expect(await verdict(db, 'employee@acme.com', world.employee, 'sso', world.acme, world.acmeConnection)).toEqual(allowed);
  });

  it.skipIf(skip)('accepts SSO only through an enabled connection of the organization that owns the address', async () => {
    expect(await verdict(db, 'employee@acme.com', world.employee, 'sso', world.acme, world.acmeDisabled)).toEqual(ssoRequired);
    expect(await verdict(db, 'employee@acme.com', world.employee, 'sso', world.globex, world.globexConnection)).toEqual(ssoRequired);
    expect(await verdict(db, 'employee@acme.com', world.employee, 'sso', world.acme, null)).toEqual(ssoRequired);
  });

  it.skipIf(skip)('lets anyone sign in by any method outside an enforced, verified domain', async () => {
    expect(await verdict(db, 'someone@elsewhere.org', world.outsider, 'password', world.acme)).toEqual(allowed);
    await inRollback(async () => {
      await db.query(`UPDATE "authstrap_sso_policy" SET "ssoRequired" = false`);
      expect(await verdict(db, 'employee@acme.com', world.employee, 'password')).toEqual(allowed);
    });
    for (const [state, expected] of [['pending', allowed], ['lapsed', allowed], ['failing', ssoRequired]] as const) {
      await inRollback(async () => {
        await db.query(`UPDATE "authstrap_domain" SET "state" = $1`, [state]);
        expect(await verdict(db, 'employee@acme.com', world.employee, 'password'), state).toEqual(expected);
      });
    }
    // A claim of another organization, still pending, captures nothing.
    await inRollback(async () => {
      await db.query(`INSERT INTO "authstrap_domain" ("organizationId", "domain", "txtToken") VALUES ($1, 'elsewhere.org', 't2')`, [world.globex]);
      await db.query(`INSERT INTO "authstrap_sso_policy" ("organizationId", "ssoRequired", "requiredSince") VALUES ($1, true, now())`, [world.globex]);
      expect(await verdict(db, 'someone@elsewhere.org', world.outsider, 'password')).toEqual(allowed);
    });
  });

  it.skipIf(skip)("keeps a password path for the owners (break-glass) unless the organization turned it off", async () => {
    for (const method of ['password', 'password-reset', 'password-change', 'password-set', 'better-auth:password']) {
      expect(await verdict(db, 'owner@acme.com', world.owner, method), method).toEqual({ allowed: true, breakGlass: true });
    }
    expect(await verdict(db, 'owner@acme.com', world.owner, 'better-auth:magic-link')).toEqual(ssoRequired);
    await inRollback(async () => {
      await db.query(`UPDATE "authstrap_sso_policy" SET "breakGlass" = 'none'`);
      expect(await verdict(db, 'owner@acme.com', world.owner, 'password')).toEqual(ssoRequired);
    });
  });

  it.skipIf(skip)('refuses a user suspended by the organization that owns the address everywhere, and one suspended elsewhere only there, naming each organization that suspended them', async () => {
    const suspend = (organizationId: string, userId: string) =>
      db.query(`INSERT INTO "authstrap_member_suspension" ("id", "organizationId", "userId", "role", "memberCreatedAt", "reason") VALUES (gen_random_uuid(), $1, $2, 'member', now(), 'directory-inactive')`, [organizationId, userId]);
    const deprovisionedBy = (...organizationIds: string[]) => ({ allowed: false, code: 'DEPROVISIONED', organizationIds: organizationIds.sort() });
    await inRollback(async () => {
      await suspend(world.acme, world.employee);
      expect(await verdict(db, 'employee@acme.com', world.employee, 'sso', world.acme, world.acmeConnection)).toEqual(deprovisionedBy(world.acme));
      expect(await verdict(db, 'employee@acme.com', world.employee, 'password', world.globex)).toEqual(deprovisionedBy(world.acme));
      // Suspended by the one asked for too: both are named, each once.
      await suspend(world.globex, world.employee);
      expect(await verdict(db, 'employee@acme.com', world.employee, 'password', world.globex)).toEqual(deprovisionedBy(world.acme, world.globex));
      expect(await verdict(db, 'employee@acme.com', world.employee, 'password', world.acme)).toEqual(deprovisionedBy(world.acme));
    });
    await inRollback(async () => {
      await suspend(world.globex, world.outsider);
      expect(await verdict(db, 'someone@elsewhere.org', world.outsider, 'password', world.globex)).toEqual(deprovisionedBy(world.globex));
      expect(await verdict(db, 'someone@elsewhere.org', world.outsider, 'password', world.acme)).toEqual(allowed);
      expect(await verdict(db, 'someone@elsewhere.org', world.outsider, 'password')).toEqual(allowed);
    });
  });

  it.skipIf(skip)('refuses a session row made from anywhere with SQLSTATE AS403, the verdict and whom it refused as its detail; a break-glass session says so', async () => {
    const insertSession = (userId: string, authMethod: string | null, extra = '') =>
      db.query<{ authMethod: string | null }>(
        `INSERT INTO "session" ("userId", "token", "expiresAt", "authMethod"${extra ? ', "ssoConnectionId"' : ''}) VALUES ($1, gen_random_uuid()::text, now() + interval '1 day', $2${extra ? `, '${extra}'` : ''}) RETURNING "authMethod"`,
        [userId, authMethod],
      );
    await inRollback(async () => {
      const refused = await insertSession(world.employee, 'password').then(() => undefined, (error: { code: string; detail: string }) => error);
      expect(refused?.code).toBe('AS403');
      expect(JSON.parse(refused!.detail)).toEqual({ ...ssoRequired, attempt: { email: 'employee@acme.com', userId: world.employee } });
    });
    await inRollback(async () => {
      // A row that says nothing of how it was made is 'unknown': refused in an enforced domain.
      await expect(insertSession(world.employee, null)).rejects.toMatchObject({ code: 'AS403' });
    });
    await inRollback(async () => {
      expect(await insertSession(world.employee, 'sso', world.acmeConnection)).toEqual([{ authMethod: 'sso' }]);
      expect(await insertSession(world.owner, 'password')).toEqual([{ authMethod: 'password:break-glass' }]);
      expect(await insertSession(world.outsider, null)).toEqual([{ authMethod: null }]);
    });
  });

  it.skipIf(skip)('refuses a password stored for an address that must use SSO, and lets other writes of the account through', async () => {
    await inRollback(async () => {
      await expect(
        db.query(`INSERT INTO "account" ("userId", "accountId", "providerId", "password") VALUES ($1, $2, 'credential', 'hash')`, [world.employee, world.employee]),
      ).rejects.toMatchObject({ code: 'AS403' });
    });
    await inRollback(async () => {
      await db.query(`INSERT INTO "account" ("userId", "accountId", "providerId") VALUES ($1, $2, 'okta')`, [world.employee, world.employee]);
      await db.query(`UPDATE "account" SET "scope" = 'openid' WHERE "userId" = $1`, [world.employee]);
      await db.query(`INSERT INTO "account" ("userId", "accountId", "providerId", "password") VALUES ($1, $2, 'credential', 'hash')`, [world.owner, world.owner]);
      await db.query(`INSERT INTO "account" ("userId", "accountId", "providerId", "password") VALUES ($1, $2, 'credential', 'hash')`, [world.outsider, world.outsider]);
      // A password set later on an account without one is refused too (a refusal ends the transaction: last).
      await expect(db.query(`UPDATE "account" SET "password" = 'hash' WHERE "userId" = $1`, [world.employee])).rejects.toMatchObject({ code: 'AS403' });
    });
  });

  it.skipIf(skip)('keeps each organization to its own identity rows, and members away from connections', async () => {
    const app = async (organizationId: string, role: string, userId: string, sql: string) => {
      // Inside the test's own transaction: a savepoint takes the role and the scope back after.
      await db.exec('SAVEPOINT request');
      try {
        await db.exec('SET LOCAL ROLE authstrap_app');
        await db.query(`SELECT set_config('authstrap.organization_id', $1, true), set_config('authstrap.role', $2, true), set_config('authstrap.user_id', $3, true)`, [organizationId, role, userId]);
        return await db.query<{ n: number }>(sql);
      } finally {
        await db.exec('ROLLBACK TO SAVEPOINT request');
      }
    };
    /** How many of acme's rows of `table` a caller scoped to `organizationId` sees. */
    const count = async (table: string, organizationId: string, role: string, userId = world.owner) =>
      (await app(organizationId, role, userId, `SELECT count(*)::int AS n FROM "${table}" WHERE "organizationId" = '${world.acme}'`))[0]!.n;
    const rlsTables = identityTables.filter((table) => table.rowSecurity);
    expect(rlsTables).toHaveLength(13);
    await inRollback(async () => {
      // One row in each table of acme, inserted as the tables' owner.
      const directory = (await db.query<{ id: string }>(`INSERT INTO "authstrap_scim_directory" ("organizationId", "name") VALUES ($1, 'Okta') RETURNING "id"`, [world.acme]))[0]!.id;
      const scimUser = (await db.query<{ id: string }>(
        `INSERT INTO "authstrap_scim_user" ("directoryId", "organizationId", "userId", "userName", "email", "active", "membership") VALUES ($1, $2, $3, 'employee', 'employee@acme.com', true, 'member') RETURNING "id"`,
        [directory, world.acme, world.employee],
      ))[0]!.id;
      const group = (await db.query<{ id: string }>(`INSERT INTO "authstrap_scim_group" ("directoryId", "organizationId", "displayName") VALUES ($1, $2, 'Engineering') RETURNING "id"`, [directory, world.acme]))[0]!.id;
      await db.exec(`
        INSERT INTO "authstrap_sso_certificate" ("connectionId", "organizationId", "pem", "fingerprintSha256", "notBefore", "notAfter", "source") VALUES ('${world.acmeConnection}', '${world.acme}', 'pem', 'ab', now(), now() + interval '1 year', 'upload');
        INSERT INTO "authstrap_sso_identity" ("organizationId", "connectionId", "userId", "subject", "email") VALUES ('${world.acme}', '${world.acmeConnection}', '${world.employee}', 'sub-1', 'employee@acme.com');
        INSERT INTO "authstrap_scim_token" ("directoryId", "organizationId", "tokenHash", "start") VALUES ('${directory}', '${world.acme}', 'hash', 'scim_abcde');
        INSERT INTO "authstrap_scim_group_member" ("groupId", "scimUserId", "organizationId") VALUES ('${group}', '${scimUser}', '${world.acme}');
        INSERT INTO "authstrap_scim_role_mapping" ("organizationId", "directoryId", "groupId", "role") VALUES ('${world.acme}', '${directory}', '${group}', 'admin');
        INSERT INTO "authstrap_scim_request" ("directoryId", "organizationId", "method", "path", "status", "durationMs") VALUES ('${directory}', '${world.acme}', 'GET', '/Users', 200, 3);
        INSERT INTO "authstrap_member_suspension" ("id", "organizationId", "userId", "role", "memberCreatedAt", "reason") VALUES (gen_random_uuid(), '${world.acme}', '${world.outsider}', 'member', now(), 'directory-inactive');
      `);
      for (const table of rlsTables) {
        // Whoever reads in acme with the widest role of the table sees its row; another organization's owner sees nothing.
        const reader = table.name.startsWith('authstrap_scim_') && !['authstrap_scim_token', 'authstrap_scim_request'].includes(table.name) ? 'directory' : 'owner';
        expect(await count(table.name, world.acme, reader), `${table.name} in acme as ${reader}`).toBeGreaterThan(0);
        expect(await count(table.name, world.globex, reader), `${table.name} from globex as ${reader}`).toBe(0);
        expect(await count(table.name, world.globex, 'owner'), `${table.name} from globex as owner`).toBe(0);
      }
      for (const table of ['authstrap_sso_connection', 'authstrap_sso_certificate', 'authstrap_scim_directory', 'authstrap_scim_token', 'authstrap_member_suspension']) {
        expect(await count(table, world.acme, 'member', world.employee), `${table} as a member`).toBe(0);
      }
      // What every member may read: that the domain is the organization's and SSO is required; and one's own identity.
      expect(await count('authstrap_domain', world.acme, 'member', world.employee)).toBe(1);
      expect(await count('authstrap_sso_policy', world.acme, 'member', world.employee)).toBe(1);
      expect(await count('authstrap_sso_identity', world.acme, 'member', world.employee)).toBe(1);
      expect(await count('authstrap_sso_identity', world.acme, 'member', world.outsider)).toBe(0);
      // Only an owner maps a group to owner, and no one but the engine's roles writes a suspension.
      await expect(app(world.acme, 'admin', world.owner, `INSERT INTO "authstrap_scim_role_mapping" ("organizationId", "directoryId", "groupId", "role") VALUES ('${world.acme}', '${directory}', '${group}', 'owner')`)).rejects.toThrow(/row-level security/);
      await expect(app(world.acme, 'owner', world.owner, `UPDATE "authstrap_member_suspension" SET "role" = 'owner' RETURNING 1 AS n`)).resolves.toEqual([]);
    });
  });

  it.skipIf(skip)("refuses a user the platform's operators banned, on every method (SSO and break-glass included), until the ban ends; no request reads the bans", async () => {
    const banned = { allowed: false, code: 'BANNED' };
    // What a machine key's lookup asks about its maker (db/scope.ts).
    const keyCreatorRefusal = async (userId: string) => (await db.query<{ refusal: string | null }>('SELECT authstrap.key_creator_refusal($1, $2) AS refusal', [userId, world.acme]))[0]!.refusal;
    await inRollback(async () => {
      await db.query(`INSERT INTO "authstrap_user_ban" ("userId", "reason") VALUES ($1, 'spam'), ($2, 'spam')`, [world.outsider, world.owner]);
      for (const method of ['password', 'sign-up', 'invitation', 'password-reset', 'password-set', 'email-change', 'sso', 'better-auth:password', 'better-auth:magic-link', 'service', 'unknown']) {
        expect(await verdict(db, 'someone@elsewhere.org', world.outsider, method, world.acme), method).toEqual(banned);
      }
      // Neither the organization's own SSO connection nor an owner's break-glass gets past a ban.
      expect(await verdict(db, 'owner@acme.com', world.owner, 'sso', world.acme, world.acmeConnection)).toEqual(banned);
      expect(await verdict(db, 'owner@acme.com', world.owner, 'password')).toEqual(banned);
      expect(await verdict(db, 'employee@acme.com', world.employee, 'sso', world.acme, world.acmeConnection)).toEqual(allowed);
      expect([await keyCreatorRefusal(world.outsider), await keyCreatorRefusal(world.employee)]).toEqual(['creator-banned', null]);
      // A request (the backend's role, scoped to the user themselves) sees no ban, not even its own, and writes none.
      await db.exec('SAVEPOINT request');
      try {
        await db.exec('SET LOCAL ROLE authstrap_app');
        await db.query(`SELECT set_config('authstrap.user_id', $1, true), set_config('authstrap.organization_id', $2, true), set_config('authstrap.role', 'owner', true)`, [world.outsider, world.acme]);
        expect(await db.query('SELECT * FROM "authstrap_user_ban"')).toEqual([]);
        await expect(db.query(`INSERT INTO "authstrap_user_ban" ("userId", "reason") VALUES ($1, 'x')`, [world.employee])).rejects.toThrow(/row-level security/);
      } finally {
        await db.exec('ROLLBACK TO SAVEPOINT request');
      }
      // The session trigger refuses the row whoever writes it (a refusal ends the transaction: last).
      const refused = await db
        .query(`INSERT INTO "session" ("userId", "token", "expiresAt", "authMethod") VALUES ($1, gen_random_uuid()::text, now() + interval '1 day', 'password')`, [world.outsider])
        .then(() => undefined, (error: { code: string; detail: string }) => error);
      expect(refused?.code).toBe('AS403');
      expect(JSON.parse(refused!.detail)).toEqual({ ...banned, attempt: { email: 'someone@elsewhere.org', userId: world.outsider } });
    });
    await inRollback(async () => {
      await db.query(`INSERT INTO "authstrap_user_ban" ("userId", "reason", "expiresAt") VALUES ($1, 'cooling off', now() + interval '1 hour')`, [world.outsider]);
      expect(await verdict(db, 'someone@elsewhere.org', world.outsider, 'password')).toEqual(banned);
      // Ended: it refuses nothing, and the keys the user made work again.
      await db.query(`UPDATE "authstrap_user_ban" SET "expiresAt" = now() - interval '1 second'`);
      expect(await verdict(db, 'someone@elsewhere.org', world.outsider, 'password')).toEqual(allowed);
      expect(await keyCreatorRefusal(world.outsider)).toBe(null);
      // A suspension in the key's organization stops it too, and is named first; one in another organization is not this key's business.
      await db.query(`UPDATE "authstrap_user_ban" SET "expiresAt" = NULL`);
      await db.query(`INSERT INTO "authstrap_member_suspension" ("id", "organizationId", "userId", "role", "memberCreatedAt", "reason") VALUES (gen_random_uuid(), $1, $2, 'member', now(), 'directory-inactive'), (gen_random_uuid(), $3, $4, 'member', now(), 'directory-inactive')`, [world.acme, world.outsider, world.globex, world.employee]);
      expect([await keyCreatorRefusal(world.outsider), await keyCreatorRefusal(world.employee)]).toEqual(['creator-suspended', null]);
    });
  });

  it.skipIf(skip)("admits an impersonation session only as an operator's of a user who is none, and judges that user as any sign-in; it keeps its bound", async () => {
    /** Inserts a session in a savepoint: its stored method, or the refusal's code (and reason). */
    const insertSession = async (userId: string, authMethod: string | null, impersonatedBy: string | null) => {
      await db.exec('SAVEPOINT attempt');
      try {
        const rows = await db.query<{ authMethod: string }>(
          `INSERT INTO "session" ("userId", "token", "expiresAt", "authMethod", "impersonatedBy") VALUES ($1, gen_random_uuid()::text, now() + interval '30 minutes', $2, $3) RETURNING "authMethod"`,
          [userId, authMethod, impersonatedBy],
        );
        await db.exec('RELEASE SAVEPOINT attempt');
        return rows[0]!.authMethod;
      } catch (error) {
        await db.exec('ROLLBACK TO SAVEPOINT attempt');
        const { code, detail } = error as { code: string; detail: string };
        const verdict = JSON.parse(detail) as { code: string; reason?: string };
        return `${code} ${verdict.code}${verdict.reason ? ` ${verdict.reason}` : ''}`;
      }
    };
    await inRollback(async () => {
      await db.query(`INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line')`, [world.outsider]);
      // Not an operator behind it, or the two marks apart: refused whoever inserts the row.
      expect(await insertSession(world.employee, 'impersonation', null)).toBe('AS403 IMPERSONATION_REFUSED not-marked');
      expect(await insertSession(world.employee, 'password:break-glass', world.outsider)).toBe('AS403 IMPERSONATION_REFUSED not-marked');
      expect(await insertSession(world.employee, 'impersonation', world.owner)).toBe('AS403 IMPERSONATION_REFUSED not-an-operator');
      // An operator as the target, themselves included.
      expect(await insertSession(world.outsider, 'impersonation', world.outsider)).toBe('AS403 IMPERSONATION_REFUSED operator-target');
      // An operator's: the SSO an organization requires binds its users, not support; no break-glass mark for an owner.
      expect(await verdict(db, 'employee@acme.com', world.employee, 'impersonation')).toEqual(allowed);
      expect(await insertSession(world.employee, 'impersonation', world.outsider)).toBe('impersonation');
      expect(await insertSession(world.owner, 'impersonation', world.outsider)).toBe('impersonation');
      // A banned or deprovisioned user is refused to the operator as to anyone.
      await db.query(`INSERT INTO "authstrap_user_ban" ("userId", "reason") VALUES ($1, 'spam')`, [world.owner]);
      expect(await insertSession(world.owner, 'impersonation', world.outsider)).toBe('AS403 BANNED');
      await db.query(`INSERT INTO "authstrap_member_suspension" ("id", "organizationId", "userId", "role", "memberCreatedAt", "reason") VALUES (gen_random_uuid(), $1, $2, 'member', now(), 'directory-inactive')`, [world.acme, world.employee]);
      expect(await insertSession(world.employee, 'impersonation', world.outsider)).toBe('AS403 DEPROVISIONED');
    });
    await inRollback(async () => {
      await db.query(`INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line')`, [world.outsider]);
      const [made] = await db.query<{ id: string; expiresAt: Date }>(
        `INSERT INTO "session" ("userId", "token", "expiresAt", "authMethod", "impersonatedBy") VALUES ($1, gen_random_uuid()::text, now() + interval '30 minutes', 'impersonation', $2) RETURNING "id", "expiresAt"`,
        [world.employee, world.outsider],
      );
      // No update extends it or unmarks it (a renewal, Better Auth's through the service API); an earlier end is kept.
      const [kept] = await db.query<{ expiresAt: Date; authMethod: string; impersonatedBy: string }>(
        `UPDATE "session" SET "expiresAt" = now() + interval '7 days', "authMethod" = 'password', "impersonatedBy" = NULL WHERE "id" = $1 RETURNING "expiresAt", "authMethod", "impersonatedBy"`,
        [made!.id],
      );
      expect(kept).toEqual({ expiresAt: made!.expiresAt, authMethod: 'impersonation', impersonatedBy: world.outsider });
      const [shortened] = await db.query<{ expiresAt: Date }>(`UPDATE "session" SET "expiresAt" = now() + interval '1 minute' WHERE "id" = $1 RETURNING "expiresAt"`, [made!.id]);
      expect(shortened!.expiresAt.getTime()).toBeLessThan(made!.expiresAt.getTime());
      // Nor does an update make an impersonation of a user's own session (a refusal ends the transaction: last).
      const [own] = await db.query<{ id: string }>(`INSERT INTO "session" ("userId", "token", "expiresAt", "authMethod") VALUES ($1, gen_random_uuid()::text, now() + interval '1 day', 'password') RETURNING "id"`, [world.outsider]);
      await expect(db.query(`UPDATE "session" SET "impersonatedBy" = $2 WHERE "id" = $1`, [own!.id, world.outsider])).rejects.toMatchObject({ code: 'AS403' });
    });
  });

  it.skipIf(skip)('generates the parts of Better Auth’s plugins: a banned user is refused, an sso provider of the organization signs in', async () => {
    const withPlugins = schemaOf({
      Project: project,
      User: { fields: { banned: { type: 'boolean', nullable: true }, banExpires: { type: 'datetime', nullable: true } } },
      // As the adapter's createSchema writes it: the plugin's organizationId is a string.
      ssoProvider: { serviceOnly: true, fields: { providerId: { type: 'string' }, organizationId: { type: 'text', nullable: true }, issuer: { type: 'string' } } } as EntityDefinition,
    });
    const other = kind === 'embedded' ? await embedded() : await postgres(await resources.createDatabase());
    try {
      await migrateAsOwner(other, initSql(withPlugins));
      const plugged = await seed(other);
      await other.query(`UPDATE "User" SET "banned" = true, "banExpires" = now() + interval '1 day' WHERE "id" = $1`, [plugged.outsider]);
      expect(await verdict(other, 'someone@elsewhere.org', plugged.outsider, 'password')).toEqual({ allowed: false, code: 'BANNED' });
      await other.query(`UPDATE "User" SET "banExpires" = now() - interval '1 day' WHERE "id" = $1`, [plugged.outsider]);
      expect(await verdict(other, 'someone@elsewhere.org', plugged.outsider, 'password')).toEqual(allowed);

      expect(await verdict(other, 'employee@acme.com', plugged.employee, 'better-auth:sso')).toMatchObject({ code: 'SSO_REQUIRED' });
      await other.query(`INSERT INTO "ssoProvider" ("providerId", "organizationId", "issuer") VALUES ('acme-okta', $1, 'https://idp.example'), ('globex-idp', $2, 'https://idp.example')`, [plugged.acme, plugged.globex]);
      await other.query(`INSERT INTO "account" ("userId", "accountId", "providerId") VALUES ($1, 'sub-2', 'globex-idp')`, [plugged.employee]);
      expect(await verdict(other, 'employee@acme.com', plugged.employee, 'better-auth:sso')).toMatchObject({ code: 'SSO_REQUIRED' });
      await other.query(`INSERT INTO "account" ("userId", "accountId", "providerId") VALUES ($1, 'sub-1', 'acme-okta')`, [plugged.employee]);
      expect(await verdict(other, 'employee@acme.com', plugged.employee, 'better-auth:sso')).toEqual(allowed);
      // Deprovisioned by an organization whose provider they signed in with: no session through the plugin at all.
      await other.query(
        `INSERT INTO "authstrap_member_suspension" ("id", "organizationId", "userId", "role", "memberCreatedAt", "reason") VALUES (gen_random_uuid(), $1, $2, 'member', now(), 'directory-inactive')`,
        [plugged.globex, plugged.employee],
      );
      expect(await verdict(other, 'employee@acme.com', plugged.employee, 'better-auth:sso')).toEqual({ allowed: false, code: 'DEPROVISIONED', organizationIds: [plugged.globex] });
    } finally {
      await other.close();
    }
  });
});

/**
 * A policy change and a sign-in in flight, on two connections: the change takes the exclusive lock
 * (src/auth/sign-in-policy.ts, endRefusedSessions), the session trigger the shared one. Whichever
 * starts first, no session of a refused user survives the change.
 */
describe.runIf(adminUrl)('the sign-in locks, two connections on PostgreSQL', () => {
  const resources = createResources({ adminUrl, name: 'signinlocks' });
  let url: string;
  let world: World;
  beforeAll(async () => {
    url = await resources.createDatabase();
    const db = await postgres(url);
    await db.exec(initSql(schemaOf({ Project: project })));
    world = await seed(db);
    await db.query(`UPDATE "authstrap_sso_policy" SET "ssoRequired" = false`);
    await db.close();
  }, 60_000);
  afterAll(() => resources.cleanup());

  /** The change: SSO required, under the organization's exclusive lock, and the employee's password sessions ended. */
  const requireSso = (db: Db) =>
    db.exec(`SELECT pg_advisory_xact_lock(hashtextextended('sign-in:org:${world.acme}', 0));
      UPDATE "authstrap_sso_policy" SET "ssoRequired" = true;
      DELETE FROM "session" WHERE "userId" = '${world.employee}' AND "authMethod" IS DISTINCT FROM 'sso';`);
  const signIn = (db: Db) => db.query(`INSERT INTO "session" ("userId", "token", "expiresAt", "authMethod") VALUES ($1, gen_random_uuid()::text, now() + interval '1 day', 'password')`, [world.employee]);
  const sessions = async (db: Db) => (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "session" WHERE "userId" = $1`, [world.employee]))[0]!.n;
  const reset = (db: Db) => db.exec(`UPDATE "authstrap_sso_policy" SET "ssoRequired" = false; DELETE FROM "session";`);

  it('ends a session whose insert began before the change: the change waits for it, then deletes it', async () => {
    const [change, signing] = [await postgres(url), await postgres(url)];
    try {
      await reset(change);
      await signing.exec('BEGIN');
      await signIn(signing);
      await change.exec('BEGIN');
      const changed = requireSso(change);
      // The change waits on the sign-in's shared lock; once the sign-in commits, it deletes the session.
      await new Promise((resolve) => setTimeout(resolve, 200));
      await signing.exec('COMMIT');
      await changed;
      await change.exec('COMMIT');
      expect(await sessions(change)).toBe(0);
    } finally {
      await change.close();
      await signing.close();
    }
  });

  it("lets no session through an operator's ban: one whose insert began first is deleted by it, one that began after is refused", async () => {
    const [banning, signing] = [await postgres(url), await postgres(url)];
    try {
      await reset(banning);
      await banning.exec(`DELETE FROM "authstrap_user_ban"; INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ('${world.owner}', 'command line') ON CONFLICT DO NOTHING`);
      const ban = () => banning.query(`SELECT authstrap.operator_ban_user($1, $2, NULL, 'spam', '{}'::jsonb)`, [world.owner, world.employee]);
      // First: the sign-in holds its shared lock; the ban waits for its commit, then deletes its session.
      await signing.exec('BEGIN');
      await signIn(signing);
      await banning.exec('BEGIN');
      const banned = ban();
      await new Promise((resolve) => setTimeout(resolve, 200));
      await signing.exec('COMMIT');
      await banned;
      await banning.exec('COMMIT');
      expect(await sessions(banning)).toBe(0);
      // After: the ban holds the lock; the sign-in waits for its commit, then meets the ban.
      await banning.exec(`BEGIN; DELETE FROM "authstrap_user_ban"`);
      await ban();
      const signed = signIn(signing).then(
        () => 'signed in',
        (error: { code?: string }) => error.code,
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      await banning.exec('COMMIT');
      expect(await signed).toBe('AS403');
      expect(await sessions(banning)).toBe(0);
    } finally {
      await banning.exec(`DELETE FROM "authstrap_user_ban"`);
      await banning.close();
      await signing.close();
    }
  });

  it('refuses a session whose insert began after the change: it waits, then sees SSO required', async () => {
    const [change, signing] = [await postgres(url), await postgres(url)];
    try {
      await reset(change);
      await change.exec('BEGIN');
      await requireSso(change);
      const signed = signIn(signing).then(
        () => 'signed in',
        (error: { code?: string }) => error.code,
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      await change.exec('COMMIT');
      expect(await signed).toBe('AS403');
      expect(await sessions(change)).toBe(0);
    } finally {
      await change.close();
      await signing.close();
    }
  });
});

describe('the identity tables in migrations', () => {
  const schema = schemaOf({ Project: project });

  it('come to a project made before them in one migration, with the rule and its triggers, which PostgreSQL runs over existing rows', async () => {
    const now = databaseModel(schema);
    // The project as its last generate left it: no identity tables, functions, triggers or fields.
    const identity = (name: string) => name.startsWith('authstrap_') && !['authstrap_outbox', 'authstrap_event', 'authstrap_webhook_endpoint', 'authstrap_idempotency_key', 'authstrap_operator', 'authstrap_user_ban', 'authstrap_activity_day'].includes(name);
    const newColumns = new Set(['authMethod', 'ssoConnectionId', 'createdBy']);
    const before = {
      tables: now.tables
        .filter((table) => !identity(table.name))
        .map(({ triggers: _triggers, ...table }) => ({
          ...table,
          columns: table.columns.filter((column) => !newColumns.has(column.name) || !['session', 'apikey'].includes(table.name)),
          constraints: table.constraints.filter((constraint) => constraint.name !== 'apikey_createdBy_fkey'),
          indexes: table.indexes.filter((index) => index.name !== 'apikey_createdBy_idx'),
        })),
      access: { ...now.access!, functions: now.access!.functions.filter((fn) => !['sign_in_rule', 'sign_in_verdict', 'session_policy', 'password_policy'].includes(fn.name)) },
    };
    const db = new PGlite();
    try {
      const { diffModels } = await import('../src/generate/migration.js');
      await db.exec(diffModels({ tables: [] }, before).statements.join('\n'));
      const [organizationId] = (await db.query<{ id: string }>(`INSERT INTO "Organization" ("name", "slug") VALUES ('Acme', 'acme') RETURNING "id"`)).rows.map((row) => row.id);
      const [userId] = (await db.query<{ id: string }>(`INSERT INTO "User" ("email", "name") VALUES ('kept@acme.com', 'Kept') RETURNING "id"`)).rows.map((row) => row.id);
      await db.query(`INSERT INTO "session" ("userId", "token", "expiresAt") VALUES ($1, 'kept', now() + interval '1 day')`, [userId]);
      const plan = planMigrations(schema, { files: ['0001_init.sql', 'schema-snapshot.json'], snapshot: before });
      expect(plan.problems).toEqual([]);
      const migration = plan.files.find((file) => file.ownership === 'migration')!;
      expect(migration.path).toMatch(/^migrations\/0002_create_authstrap_sso_connection_/);
      await db.exec(migration.contents);
      const { rows } = await db.query<{ tgname: string; relname: string }>(`SELECT t.tgname, c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE t.tgname LIKE 'authstrap_%_policy' ORDER BY 1`);
      expect(rows).toEqual([
        { tgname: 'authstrap_password_policy', relname: 'account' },
        { tgname: 'authstrap_sign_in_policy', relname: 'session' },
      ]);
      // The session made before is kept, as made before the column: null.
      expect((await db.query('SELECT "token", "authMethod" FROM "session"')).rows).toEqual([{ token: 'kept', authMethod: null }]);
      await db.query(`INSERT INTO "authstrap_domain" ("organizationId", "domain", "state", "txtToken") VALUES ($1, 'acme.com', 'verified', 't')`, [organizationId]);
      await db.query(`INSERT INTO "authstrap_sso_policy" ("organizationId", "ssoRequired", "requiredSince") VALUES ($1, true, now())`, [organizationId]);
      await expect(db.query(`INSERT INTO "session" ("userId", "token", "expiresAt", "authMethod") VALUES ($1, 'new', now() + interval '1 day', 'password')`, [userId])).rejects.toMatchObject({ code: 'AS403' });
      // Generating again finds nothing left to do.
      const again = planMigrations(schema, { files: ['0001_init.sql', migration.path.slice('migrations/'.length), 'schema-snapshot.json'], snapshot: JSON.parse(plan.files.find((file) => file.path === snapshotPath)!.contents) });
      expect(again.files.map((file) => file.path)).toEqual([snapshotPath]);
    } finally {
      await db.close();
    }
  });

  it('gives a project whose rule named no deprovisioning organization a migration that replaces the rule alone, after which a refusal names them', async () => {
    const now = databaseModel(schema);
    // The rule as the previous version wrote it: DEPROVISIONED, naming no organization.
    const namingNone = (definition: string) => definition.replaceAll(`, 'organizationIds', deprovisioning`, '');
    const before = { ...now, access: { ...now.access!, functions: now.access!.functions.map((fn) => (fn.name === 'sign_in_rule' ? { ...fn, definition: namingNone(fn.definition) } : fn)) } };
    expect(JSON.stringify(before)).not.toContain('organizationIds');
    const db = new PGlite();
    try {
      const { diffModels } = await import('../src/generate/migration.js');
      await db.exec(diffModels({ tables: [] }, before).statements.join('\n'));
      const organizationId = (await db.query<{ id: string }>(`INSERT INTO "Organization" ("name", "slug") VALUES ('Acme', 'acme') RETURNING "id"`)).rows[0]!.id;
      const userId = (await db.query<{ id: string }>(`INSERT INTO "User" ("email", "name") VALUES ('leaver@elsewhere.org', 'Leaver') RETURNING "id"`)).rows[0]!.id;
      await db.query(`INSERT INTO "authstrap_member_suspension" ("id", "organizationId", "userId", "role", "memberCreatedAt", "reason") VALUES (gen_random_uuid(), $1, $2, 'member', now(), 'directory-inactive')`, [organizationId, userId]);
      const refusal = async () => (await db.query<{ verdict: unknown }>(`SELECT authstrap.sign_in_verdict('leaver@elsewhere.org', $1, 'password', $2, NULL) AS verdict`, [userId, organizationId])).rows[0]!.verdict;
      expect(await refusal()).toEqual({ allowed: false, code: 'DEPROVISIONED' });

      const plan = planMigrations(schema, { files: ['0001_init.sql', 'schema-snapshot.json'], snapshot: before });
      expect(plan.problems).toEqual([]);
      const migration = plan.files.find((file) => file.ownership === 'migration')!;
      expect(migration.contents.match(/^CREATE OR REPLACE FUNCTION authstrap\.\w+/gm)).toEqual(['CREATE OR REPLACE FUNCTION authstrap.sign_in_rule']);
      expect(migration.contents).not.toMatch(/CREATE TABLE|ALTER TABLE|DROP /);
      await db.exec(migration.contents);
      expect(await refusal()).toEqual({ allowed: false, code: 'DEPROVISIONED', organizationIds: [organizationId] });
      const again = planMigrations(schema, { files: ['0001_init.sql', migration.path.slice('migrations/'.length), 'schema-snapshot.json'], snapshot: JSON.parse(plan.files.find((file) => file.path === snapshotPath)!.contents) });
      expect(again.files.map((file) => file.path)).toEqual([snapshotPath]);
    } finally {
      await db.close();
    }
  });

  it('refuses a domain that is not a lowercase host name with a dot, and a second organization verifying a domain already verified', async () => {
    const db = new PGlite();
    try {
      await db.exec(initSql(schema));
      const organization = async (slug: string) => (await db.query<{ id: string }>(`INSERT INTO "Organization" ("name", "slug") VALUES ($1, $1) RETURNING "id"`, [slug])).rows[0]!.id;
      const [acme, globex] = [await organization('acme'), await organization('globex')];
      const claim = (organizationId: string, domain: string, state = 'pending') =>
        db.query(`INSERT INTO "authstrap_domain" ("organizationId", "domain", "state", "txtToken") VALUES ($1, $2, $3, 't')`, [organizationId, domain, state]);
      for (const bad of ['Acme.com', 'localhost', '127.0.0.1', 'acme..com', '-acme.com', 'acme.com.', 'ac me.com']) {
        await expect(claim(acme, bad), bad).rejects.toMatchObject({ constraint: 'authstrap_domain_domain_check' });
      }
      await claim(acme, 'acme.com', 'verified');
      // Another claim may wait, pending; it cannot be verified while acme holds the domain.
      await claim(globex, 'acme.com');
      await expect(db.query(`UPDATE "authstrap_domain" SET "state" = 'verified' WHERE "organizationId" = $1`, [globex])).rejects.toMatchObject({ constraint: 'authstrap_domain_domain_verified_key' });
    } finally {
      await db.close();
    }
  });
});
