import type { EnvFileText } from '../project/loopback-hosts.js';
import { checks, loopbackHostsWarning, newRunId, type CheckResult, type VerifyContext } from './checks.js';
import { openDatabase, type DatabaseTarget } from './database.js';
import { frontendChecks } from './frontend.js';
import { httpClient, RateLimitedError } from './http.js';

export type { CheckResult } from './checks.js';
export type { DatabaseTarget } from './database.js';

export interface VerifyOptions {
  url: string;
  /** Where to read the database; without it the database checks are skipped. */
  database?: DatabaseTarget;
  /** Why there is no database target, shown on the skipped checks. */
  noDatabaseReason?: string;
  serviceKey?: string;
  /** A frontend running Better Auth on the adapter: its page, sign-up and sign-in are checked too. */
  frontendUrl?: string;
  /** The project's .env and its frontends' env files, when verify runs in a project: read for a warning. */
  urlSettings?: { backend: EnvFileText; frontends: EnvFileText[] };
  /** Runs between the HTTP checks and the database checks: setup stops an embedded backend here. */
  beforeDatabaseChecks?: () => Promise<void>;
  /** Each result as it is known, for progress output. */
  onResult?: (result: CheckResult) => void;
}

export interface VerifyReport {
  ok: boolean;
  url: string;
  checks: CheckResult[];
  /** What could not be removed again, if anything. */
  leftBehind?: string;
}

/**
 * Runs every check: first against the running backend, then against its database. Users and
 * organizations created on the way are removed at the end: in the database when it is open,
 * and through the API (organizations by their owner, users with the service key) when it is not
 * or when it did not hold them.
 */
export async function runVerify(options: VerifyOptions): Promise<VerifyReport> {
  const context: VerifyContext = {
    http: httpClient(options.url, { serviceKey: options.serviceKey }),
    serviceKey: options.serviceKey,
    runId: newRunId(),
    people: {},
    created: { userIds: [], organizationIds: [] },
  };
  const results: CheckResult[] = [];
  const record = (result: CheckResult) => {
    results.push(result);
    options.onResult?.(result);
  };
  const runCheck = async (check: (typeof checks)[number]) => {
    try {
      const outcome = await check.run(context);
      record({ id: check.id, title: check.title, ...outcome, ...(outcome.status === 'fail' && check.fix ? { fix: check.fix } : {}) });
    } catch (error) {
      if (error instanceof RateLimitedError) {
        // Not a broken setup, so no repair to suggest: the verdict waits for a retry.
        record({ id: check.id, title: check.title, status: 'skip', message: error.message, rateLimited: true });
        return;
      }
      const reason = (error as Error).cause ? `${(error as Error).message}: ${((error as Error).cause as Error).message}` : (error as Error).message;
      record({ id: check.id, title: check.title, status: 'fail', message: reason, ...(check.fix ? { fix: check.fix } : {}) });
    }
  };

  const httpChecks = checks.filter((check) => check.needs === 'http');
  const serverUp = httpChecks[0]!;
  await runCheck(serverUp);
  const reachable = results[0]!.status === 'pass';
  for (const check of httpChecks.slice(1)) {
    if (reachable) await runCheck(check);
    else record({ id: check.id, title: check.title, status: 'skip', message: `the server at ${options.url} does not answer` });
  }

  if (reachable && options.frontendUrl) for (const result of await frontendChecks(context, options.frontendUrl, options.url)) record(result);

  const loopbackWarning = options.urlSettings && loopbackHostsWarning(options.urlSettings);
  if (loopbackWarning) record(loopbackWarning);

  await options.beforeDatabaseChecks?.();

  const databaseChecks = checks.filter((check) => check.needs === 'database');
  if (options.database) {
    try {
      context.db = await openDatabase(options.database);
    } catch (error) {
      for (const check of databaseChecks) record({ id: check.id, title: check.title, status: 'fail', message: `cannot open the database: ${(error as Error).message}`, fix: 'check DATABASE_URL in .env' });
    }
  } else {
    for (const check of databaseChecks) record({ id: check.id, title: check.title, status: 'skip', message: options.noDatabaseReason ?? 'no database given (--database-url)' });
  }
  let leftBehind: string | undefined;
  if (context.db) {
    try {
      for (const check of databaseChecks) await runCheck(check);
      await context.db.query('DELETE FROM "Organization" WHERE "id" = ANY($1::uuid[])', [context.created.organizationIds]);
      const deleted = await context.db.query<{ id: string }>('DELETE FROM "User" WHERE "id" = ANY($1::uuid[]) RETURNING "id"', [context.created.userIds]);
      const gone = new Set(deleted.map((row) => row.id));
      context.created.userIds = context.created.userIds.filter((id) => !gone.has(id));
    } catch (error) {
      leftBehind = `test rows could not be deleted: ${(error as Error).message}`;
    } finally {
      await context.db.close();
    }
  }
  // Users the database did not hold (a --database-url that is not the backend's, or one that
  // could not be cleaned) are still in the backend's database: remove them through its API.
  if (reachable && (!context.db || leftBehind || context.created.userIds.length > 0)) {
    leftBehind = await cleanUpThroughApi(context, options.serviceKey);
  }

  // A check that was rate limited did not run: no verdict, so not ok either.
  const ok = results.every((result) => result.status !== 'fail' && !result.rateLimited);
  return { ok, url: options.url, checks: results, ...(leftBehind ? { leftBehind } : {}) };
}

async function cleanUpThroughApi(context: VerifyContext, serviceKey: string | undefined): Promise<string | undefined> {
  for (const person of [context.people.alice, context.people.bob]) {
    if (person) await context.http('DELETE', `/Organizations/${person.organizationId}`, { token: person.token }).catch(() => undefined);
  }
  if (context.created.userIds.length === 0) return undefined;
  if (!serviceKey) return `${context.created.userIds.length} test users (verify-*@example.com): give SERVICE_API_KEY to remove them`;
  const failed: string[] = [];
  for (const id of context.created.userIds) {
    const response = await context.http('DELETE', `/Users/${id}`, { token: serviceKey }).catch(() => undefined);
    if (response?.status !== 204) failed.push(id);
  }
  return failed.length ? `${failed.length} test users could not be deleted with the service key` : undefined;
}
