import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { signUpProvider } from '../../src/checks/credential-provider.js';
import { describeRepairCycle } from '../support/check-cycle.js';
import { exampleDir } from '../support/cli.js';
import { breakFile, query } from '../support/example-copies.js';

const serviceFile = 'src/extensions/auth/auth.service.ts';
const service = fs.readFileSync(path.join(exampleDir, serviceFile), 'utf8');
const credentialInsert = `VALUES ($1, $2, 'credential', $3)`;

describe("credential-provider reads sign-up's SQL as syntax", () => {
  it("finds 'credential' in the example's sign-up", () => {
    expect(signUpProvider(service)).toEqual({ ok: true });
  });

  it("finds another value, and repairs exactly that literal", () => {
    const broken = service.replace(credentialInsert, `VALUES ($1, $2, 'email', $3)`);
    expect(signUpProvider(broken)).toEqual({ wrong: 'email', repaired: service });
  });

  it('ignores a commented-out insert', () => {
    const commented = service.replace(credentialInsert, `VALUES ($1, $2, 'email', $3)`).replace(/^([ \t]*)(`INSERT INTO "account")/m, "$1// `INSERT INTO \"account\" (\"userId\", \"accountId\", \"providerId\", \"password\") VALUES ($1, $2, 'credential', $3)`,\n$1$2");
    expect(commented).toContain("// `INSERT INTO");
    expect(signUpProvider(commented)).toMatchObject({ wrong: 'email' });
  });
});

const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const accountRows = (databaseUrl: string) => query(databaseUrl, `SELECT "providerId", "accountId", "password" FROM "account" ORDER BY id`);
const erin = { email: `erin-${randomBytes(4).toString('hex')}@example.com`, name: 'Erin', password: 'correct horse battery staple' };

const { stage } = describeRepairCycle('credential-provider', [
  {
    name: "sign-up writes providerId 'email'",
    planShows: [`--- a/${serviceFile}`],
    alsoFailsInVerify: ['sign-in'],
    breakFiles: (dir) => breakFile(dir, serviceFile, credentialInsert, `VALUES ($1, $2, 'email', $3)`),
  },
  {
    name: "an account stored with providerId 'email'",
    planShows: ['UPDATE "account"'],
    async breakData(backend, _dir) {
      expect((await post(`${backend.url}/api/auth/sign-up/email`, erin)).status).toBe(201);
      // What an import from another auth library leaves behind: the password is right, the provider is not.
      await query(backend.databaseUrl, `UPDATE "account" SET "providerId" = 'email', "accountId" = $1`, [erin.email]);
    },
    rows: (backend) => accountRows(backend.databaseUrl),
    async afterRepair(_dir, backend, extra) {
      extra.signIn = (await post(`${backend.url}/api/auth/sign-in/email`, { email: erin.email, password: erin.password })).status;
      extra.accounts = await query(backend.databaseUrl, `SELECT a."providerId", a."accountId", u.id::text AS "userId" FROM "account" a JOIN "User" u ON u.id = a."userId" WHERE u.email = $1`, [erin.email]);
    },
  },
]);

describe.runIf(process.env.AUTHSTRAP_TEST_POSTGRES_URL)('credential-provider: what verify and fix say', () => {
  it("code: verify's sign-up stored the wrong providerId, and the repair restores auth.service.ts", () => {
    const name = "sign-up writes providerId 'email'";
    const check = stage(name, 'verifyBefore').report.checks.find((result) => result.id === 'credential-provider')!;
    expect(check.message).toBe(
      "auth.service.ts creates password accounts with providerId 'email': sign-up works, every sign-in fails; sign-up stored account.providerId \"email\", not 'credential': every sign-in will fail",
    );
    expect(stage(name, 'verifyBefore').report.checks.find((result) => result.id === 'sign-in')!.message).toContain('the right password answered 401');
    expect(stage(name, 'treeAfterFirst').get(serviceFile)).toBe(service);
  });

  it("data: the account is found, repaired without a restart, and keyed by its user", () => {
    const name = "an account stored with providerId 'email'";
    expect(stage(name, 'dryRunJson').report.checks.find((finding) => finding.id === 'credential-provider')!.message).toContain('1 account has a password');
    expect(stage(name, 'rowsBefore')).toEqual([expect.objectContaining({ providerId: 'email' })]);
    expect(stage(name, 'extra').signIn).toBe(200);
    const accounts = stage(name, 'extra').accounts as { providerId: string; accountId: string; userId: string }[];
    expect(accounts).toEqual([{ providerId: 'credential', accountId: accounts[0]!.userId, userId: accounts[0]!.userId }]);
  });
});
