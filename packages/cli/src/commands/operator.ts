import path from 'node:path';
import { CliError } from '../cli-error.js';
import { openProjectDatabase } from '../project/database.js';
import { isJsonOutput, printJson } from '../ui/output.js';
import type { DatabaseProbe } from '../verify/database.js';

/**
 * `authstrap operator grant|revoke <email>` and `authstrap operator list`: the platform's
 * operators (the backend's src/operator/), kept in `authstrap_operator` of the project's database,
 * which this command reaches as the tables' owner (DATABASE_URL, or the embedded database when no
 * backend holds it). Each grant and revoke is an event about the user (`operator.granted`,
 * `operator.revoked`), done by the system from the command line.
 */

export interface OperatorCommandOptions {
  dir?: string;
  databaseUrl?: string;
  json?: boolean;
}

export interface Operator {
  email: string;
  name: string;
  grantedBy: string;
  grantedAt: string;
}

type Action = 'grant' | 'revoke' | 'list';

export async function operatorCommand(action: string, email: string | undefined, options: OperatorCommandOptions): Promise<void> {
  const act = parseAction(action, email);
  if (options.databaseUrl !== undefined && !/^postgres(ql)?:\/\/.+/.test(options.databaseUrl)) {
    throw new CliError('--database-url must look like postgresql://user:password@host:5432/database', 2);
  }
  const projectDir = path.resolve(options.dir ?? '.');
  const { db, note } = await openProjectDatabase(projectDir, options.databaseUrl);
  if (!db) throw new CliError(`Cannot reach the project's database: ${note}. Pass --database-url, or run this in the project's folder (--dir)`, 1);
  try {
    await requireOperatorTable(db);
    if (act.action === 'list') {
      const operators = await listOperators(db);
      if (isJsonOutput()) printJson({ operators });
      else if (operators.length === 0) console.log('No operators yet: `authstrap operator grant <email>` makes the first.');
      else for (const operator of operators) console.log(`${operator.email}  ${operator.name}  granted ${operator.grantedAt} by ${operator.grantedBy}`);
      return;
    }
    const user = await userByEmail(db, act.email);
    const changed = act.action === 'grant' ? await grant(db, user.id) : await revoke(db, user.id);
    const said = act.action === 'grant'
      ? changed ? `${user.email} is an operator now` : `${user.email} was an operator already`
      : changed ? `${user.email} is no longer an operator` : `${user.email} was not an operator`;
    if (isJsonOutput()) printJson({ action: act.action, email: user.email, changed });
    else console.log(said);
  } finally {
    await db.close();
  }
}

/** The action and its address, or a usage error naming what to pass. */
function parseAction(action: string, email: string | undefined): { action: 'list' } | { action: 'grant' | 'revoke'; email: string } {
  if (!(['grant', 'revoke', 'list'] as Action[]).includes(action as Action)) {
    throw new CliError(`Unknown action "${action}": use \`authstrap operator grant <email>\`, \`revoke <email>\` or \`list\``, 2);
  }
  if (action === 'list') {
    if (email !== undefined) throw new CliError('`authstrap operator list` takes no address', 2);
    return { action: 'list' };
  }
  if (email === undefined || !/^[^\s@]+@[^\s@]+$/.test(email)) {
    throw new CliError(`\`authstrap operator ${action}\` needs the user's e-mail address, like \`authstrap operator ${action} jane@example.com\``, 2);
  }
  return { action: action as 'grant' | 'revoke', email: email.toLowerCase() };
}

async function requireOperatorTable(db: DatabaseProbe): Promise<void> {
  const [row] = await db.query<{ exists: boolean }>(`SELECT to_regclass('authstrap_operator') IS NOT NULL AS "exists"`);
  if (!row?.exists) {
    throw new CliError('The database has no operators table yet: run `authstrap generate`, then start the backend once (it applies the migration that makes it)', 1);
  }
}

async function userByEmail(db: DatabaseProbe, email: string): Promise<{ id: string; email: string }> {
  const [user] = await db.query<{ id: string; email: string }>(`SELECT "id", "email" FROM "User" WHERE "email" = $1`, [email]);
  if (!user) throw new CliError(`No user has the address ${email}: they sign up first, then run this again`, 1);
  return user;
}

/** The change and its event, in one transaction. True when it changed something. */
async function inTransaction(db: DatabaseProbe, work: () => Promise<boolean>): Promise<boolean> {
  await db.query('BEGIN');
  try {
    const changed = await work();
    await db.query('COMMIT');
    return changed;
  } catch (error) {
    await db.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

const recordEvent = (db: DatabaseProbe, type: 'operator.granted' | 'operator.revoked', userId: string) =>
  db.query(`SELECT authstrap.record_event($1, NULL, $2::uuid, 'User', $2::text, $3::jsonb, $4::jsonb)`, [
    type,
    userId,
    JSON.stringify({ by: 'command line' }),
    JSON.stringify({ actorType: 'system' }),
  ]);

const grant = (db: DatabaseProbe, userId: string) =>
  inTransaction(db, async () => {
    const inserted = await db.query(`INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line') ON CONFLICT ("userId") DO NOTHING RETURNING "userId"`, [userId]);
    if (inserted.length === 0) return false;
    await recordEvent(db, 'operator.granted', userId);
    return true;
  });

const revoke = (db: DatabaseProbe, userId: string) =>
  inTransaction(db, async () => {
    const deleted = await db.query(`DELETE FROM "authstrap_operator" WHERE "userId" = $1 RETURNING "userId"`, [userId]);
    if (deleted.length === 0) return false;
    // The sessions they opened as other users (impersonations) end with the role that allowed them.
    await db.query(`DELETE FROM "session" WHERE "impersonatedBy" = $1`, [userId]);
    await recordEvent(db, 'operator.revoked', userId);
    return true;
  });

async function listOperators(db: DatabaseProbe): Promise<Operator[]> {
  const rows = await db.query<{ email: string; name: string; grantedBy: string; grantedAt: Date }>(
    `SELECT u."email", u."name", o."grantedBy", o."grantedAt" FROM "authstrap_operator" o JOIN "User" u ON u."id" = o."userId" ORDER BY o."grantedAt", u."email"`,
  );
  return rows.map((row) => ({ ...row, grantedAt: new Date(row.grantedAt).toISOString() }));
}
