import { Node } from 'ts-morph';
import { fail, pass, skip, warn, type Check, type FileChange, type Finding } from './check.js';
import { parseSource } from './source.js';

const serviceFile = 'src/extensions/auth/auth.service.ts';

/**
 * Password accounts whose `providerId` is not 'credential': sign-up works, and every sign-in
 * fails ('Invalid email or password'), because sign-in looks the account up by that value. Two
 * causes: sign-up code that writes another value (read as syntax: the SQL string literals of
 * auth.service.ts), and rows already stored that way (an import, an old adapter). The probe reads
 * the account verify's own sign-up stored.
 */
export const credentialProvider: Check = {
  id: 'credential-provider',
  title: "Password accounts have providerId 'credential'",
  examine(project) {
    const service = project.files[serviceFile] ?? '';
    const code = service ? signUpProvider(service) : undefined;
    const problems: string[] = [];
    const files: FileChange[] = [];
    const sql: string[] = [];
    if (code && 'wrong' in code) {
      problems.push(`auth.service.ts creates password accounts with providerId '${code.wrong}': sign-up works, every sign-in fails`);
      files.push({ path: serviceFile, before: service, after: code.repaired });
    }
    const wrong = project.database?.wrongProviderAccounts ?? 0;
    if (wrong > 0) {
      problems.push(`${wrong} account${wrong === 1 ? ' has' : 's have'} a password but providerId is not 'credential', so ${wrong === 1 ? 'its user' : 'their users'} cannot sign in`);
      // accountId follows: a password account is keyed by its user. Users who already have a
      // credential account are left alone rather than given a second one.
      sql.push(
        `UPDATE "account" AS a SET "providerId" = 'credential', "accountId" = a."userId"::text, "updatedAt" = now()
  WHERE a."password" IS NOT NULL AND a."providerId" IS DISTINCT FROM 'credential'
    AND NOT EXISTS (SELECT 1 FROM "account" c WHERE c."userId" = a."userId" AND c."providerId" = 'credential')`,
      );
    }
    if (problems.length > 0) {
      const summary = [files.length ? "make sign-up write 'credential'" : '', wrong ? `set providerId = 'credential' on ${wrong} account${wrong === 1 ? '' : 's'}` : ''].filter(Boolean).join('; ');
      return { ...fail(problems.join('; ')), repair: { summary, files, sql } };
    }
    const codeFinding: Finding = !service
      ? warn(`there is no ${serviceFile}: check by hand that sign-up gives password accounts providerId 'credential'`)
      : code === undefined
        ? warn("auth.service.ts was changed: check by hand that password accounts get providerId 'credential'")
        : pass("sign-up writes 'credential'");
    if (codeFinding.status !== 'pass') return codeFinding;
    if (!project.database) return skip(`${codeFinding.message}; the accounts were not checked: ${project.databaseNote ?? 'no database'}`);
    return pass(`${codeFinding.message}, and every password account has it`);
  },
  probe: {
    needs: 'database',
    async run({ db, people: { alice } }) {
      if (!alice) return skip('needs a signed-up user');
      const users = await db!.query<{ id: string }>('SELECT "id" FROM "User" WHERE "id" = $1', [alice.id]);
      if (users.length !== 1) return fail('the signed-up user is not in "User"');
      const accounts = await db!.query<{ providerId: string | null; password: string | null }>('SELECT "providerId", "password" FROM "account" WHERE "userId" = $1', [alice.id]);
      if (accounts.length !== 1) return fail(`expected one account for the new user, found ${accounts.length}`);
      const [account] = accounts;
      if (account!.providerId !== 'credential') return fail(`sign-up stored account.providerId ${JSON.stringify(account!.providerId)}, not 'credential': every sign-in will fail`);
      if (!/^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$/.test(account!.password ?? '')) return fail('sign-up stored an account.password that is not a bcrypt hash');
      return pass(`sign-up stored providerId 'credential' and a bcrypt hash (cost ${account!.password!.slice(4, 6)})`);
    },
  },
  advice: 'sign-up stores another providerId than the code in this folder does: restart the backend, or check the code it runs',
};

const accountInsert = /INSERT INTO "account" \(([^)]*)\) VALUES \(([^)]*)\)/;

/**
 * The providerId sign-up writes, from the string literals of auth.service.ts that insert into
 * "account": `{ ok }` when every one writes 'credential', `{ wrong, repaired }` for the first that
 * does not (with the file as it should be), undefined when none can be read.
 */
export function signUpProvider(service: string): { ok: true } | { wrong: string; repaired: string } | undefined {
  const literals = parseSource(serviceFile, service)
    .getDescendants()
    .filter((node) => Node.isStringLiteral(node) || Node.isNoSubstitutionTemplateLiteral(node))
    .filter((node) => accountInsert.test(node.getText()));
  let found = false;
  for (const literal of literals) {
    const [whole, columnList, valueList] = accountInsert.exec(literal.getText())!;
    const columns = columnList!.split(',').map((column) => column.trim());
    const values = valueList!.split(',').map((value) => value.trim());
    const provider = /^'([^']*)'$/.exec(values[columns.indexOf('"providerId"')] ?? '');
    if (!provider) continue;
    found = true;
    if (provider[1] === 'credential') continue;
    values[columns.indexOf('"providerId"')] = "'credential'";
    const text = literal.getText().replace(whole, `INSERT INTO "account" (${columnList}) VALUES (${values.join(', ')})`);
    return { wrong: provider[1]!, repaired: service.slice(0, literal.getStart()) + text + service.slice(literal.getEnd()) };
  }
  return found ? { ok: true } : undefined;
}
