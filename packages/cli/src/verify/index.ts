import { skip, type CheckResult } from '../checks/check.js';
import { probeContext, type ProbeContext } from '../checks/probe-context.js';
import { readProjectSnapshot } from '../checks/project-snapshot.js';
import { checks, examineProject } from '../checks/registry.js';
import { verdicts, type CheckParts } from '../checks/verdict.js';
import { openDatabase, type DatabaseTarget } from './database.js';
import { frontendChecks } from './frontend.js';
import { httpClient, RateLimitedError } from './http.js';

export interface VerifyOptions {
  url: string;
  /** The project folder: its files are examined too (without it, those parts are skipped). */
  projectDir?: string;
  /** Where to read the database; without it the database parts are skipped. */
  database?: DatabaseTarget;
  /** Why there is no database target, shown on the skipped parts. */
  noDatabaseReason?: string;
  serviceKey?: ProbeContext['serviceKey'];
  /** The backend's NODE_ENV, when known. */
  nodeEnv?: string;
  /** A frontend running Better Auth on the adapter: its page, sign-up and sign-in are checked too. */
  frontendUrl?: string;
  /** Runs between the HTTP probes and the database: setup stops an embedded backend here. */
  beforeDatabaseChecks?: () => Promise<void>;
}

export interface VerifyReport {
  ok: boolean;
  url: string;
  checks: CheckResult[];
  /** What could not be removed again, if anything. */
  leftBehind?: string;
}

/**
 * Runs every check of the registry: the probes against the running backend, then against its
 * database, then (in a project folder) the examines of the project's files and database, the
 * same that `fix` runs. Users and organizations created on the way are removed before the
 * project is examined: in the database when it is open, and through the API (organizations by
 * their owner, users with the service key) when it is not or when it did not hold them.
 */
export async function runVerify(options: VerifyOptions): Promise<VerifyReport> {
  const context = probeContext(httpClient(options.url, { serviceKey: options.serviceKey?.value }), options.serviceKey, options.nodeEnv);
  const parts = new Map(checks.map((check) => [check.id, {} as CheckParts]));
  const probe = async (check: (typeof checks)[number]) => {
    try {
      parts.get(check.id)!.probed = await check.probe!.run(context);
    } catch (error) {
      // A 429 is not a broken setup: the verdict waits for a retry.
      if (error instanceof RateLimitedError) parts.get(check.id)!.probed = { ...skip(error.message), rateLimited: true };
      else parts.get(check.id)!.probed = { status: 'fail', message: reasonOf(error) };
    }
  };

  const httpProbes = checks.filter((check) => check.probe?.needs === 'http');
  await probe(httpProbes[0]!);
  const reachable = parts.get(httpProbes[0]!.id)!.probed!.status === 'pass';
  for (const check of httpProbes.slice(1)) {
    if (reachable) await probe(check);
    else parts.get(check.id)!.probed = skip(`the server at ${options.url} does not answer`);
  }
  const frontend = reachable && options.frontendUrl ? await frontendChecks(context, options.frontendUrl, options.url) : [];

  await options.beforeDatabaseChecks?.();

  const databaseProbes = checks.filter((check) => check.probe?.needs === 'database');
  let databaseNote = options.noDatabaseReason ?? 'no database given (--database-url)';
  if (options.database) {
    try {
      context.db = await openDatabase(options.database);
    } catch (error) {
      databaseNote = `cannot open the database: ${(error as Error).message}`;
      for (const check of databaseProbes) parts.get(check.id)!.probed = { status: 'fail', message: databaseNote };
    }
  }
  let leftBehind: string | undefined;
  try {
    if (context.db) {
      for (const check of databaseProbes) await probe(check);
      leftBehind = await cleanUpInDatabase(context);
    } else if (!options.database) {
      for (const check of databaseProbes) parts.get(check.id)!.probed = skip(databaseNote);
    }
    // Users the database did not hold (a --database-url that is not the backend's, or one that
    // could not be cleaned) are still in the backend's database: remove them through its API.
    if (reachable && (!context.db || leftBehind || context.created.userIds.length > 0)) leftBehind = await cleanUpThroughApi(context);

    if (options.projectDir) {
      const project = await readProjectSnapshot(options.projectDir, { db: context.db, databaseNote });
      for (const result of examineProject(project)) parts.get(result.id)!.examined = result;
    } else {
      for (const check of checks.filter((candidate) => candidate.examine)) {
        parts.get(check.id)!.examined = skip('the project was not examined: run verify in its folder, or pass --dir');
      }
    }
  } finally {
    await context.db?.close();
  }

  const results = [...verdicts(checks, parts), ...frontend];
  // A check that was rate limited did not run: no verdict, so not ok either.
  const ok = results.every((result) => result.status !== 'fail' && !result.rateLimited);
  return { ok, url: options.url, checks: results, ...(leftBehind ? { leftBehind } : {}) };
}

const reasonOf = (error: unknown) => {
  const { message, cause } = error as Error;
  return cause ? `${message}: ${(cause as Error).message}` : message;
};

/** Deletes the organizations and users verify made; what could not be deleted, if anything. */
async function cleanUpInDatabase(context: ProbeContext): Promise<string | undefined> {
  if (context.created.userIds.length === 0 && context.created.organizationIds.length === 0) return undefined;
  try {
    await context.db!.query('DELETE FROM "Organization" WHERE "id" = ANY($1::uuid[])', [context.created.organizationIds]);
    const deleted = await context.db!.query<{ id: string }>('DELETE FROM "User" WHERE "id" = ANY($1::uuid[]) RETURNING "id"', [context.created.userIds]);
    const gone = new Set(deleted.map((row) => row.id));
    context.created.userIds = context.created.userIds.filter((id) => !gone.has(id));
    return undefined;
  } catch (error) {
    return `test rows could not be deleted: ${(error as Error).message}`;
  }
}

async function cleanUpThroughApi(context: ProbeContext): Promise<string | undefined> {
  for (const person of [context.people.alice, context.people.bob]) {
    if (person) await context.http('DELETE', `/Organizations/${person.organizationId}`, { token: person.token }).catch(() => undefined);
  }
  if (context.created.userIds.length === 0) return undefined;
  if (!context.serviceKey) return `${context.created.userIds.length} test users (verify-*@example.com): give SERVICE_API_KEY to remove them`;
  const failed: string[] = [];
  for (const id of context.created.userIds) {
    const response = await context.http('DELETE', `/Users/${id}`, { token: context.serviceKey.value }).catch(() => undefined);
    if (response?.status !== 204) failed.push(id);
  }
  return failed.length ? `${failed.length} test users could not be deleted with the service key` : undefined;
}
