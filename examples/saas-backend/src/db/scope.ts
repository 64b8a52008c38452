import type { Database, Queryable, QueryResult } from './database.js';
import type { Statement } from './sql.js';

/**
 * The second wall between tenants. Every request's connection acts as the database role
 * `authstrap_app`, which owns no table and cannot bypass row-level security. The policies on
 * every tenant-scoped table (written by `authstrap generate`, in migrations) let it see and write
 * only the rows of the organization its transaction is scoped to, as its caller's role allows.
 * The scope is three transaction-local settings, read in SQL through these functions:
 *
 *   authstrap.organization_id()   the organization the request acts in
 *   authstrap.user_id()           the caller
 *   authstrap.role()              the caller's role there (owner, admin, member)
 *
 * They are set in the same round trip as the statement they scope (src/db/pipeline.ts), and only
 * from what the database itself found: the session and the membership (callerStatement below).
 * A statement run without them (a raw `db.query` that forgot its organization filter, a script, a
 * report) sees no tenant rows and can write none. Generated statements also filter by
 * `authstrap.organization_id()` themselves: that is the first wall.
 */

/** The role requests run as (created by the migration that turns row-level security on). */
export const appRole = 'authstrap_app';

/**
 * Makes every request's connection act as `appRole`, once the migrations that turn row-level
 * security on have run (they create the schema `authstrap`). A backend that logs in as the role
 * itself (production: docs/deploy.md) has nothing to switch.
 */
export async function actAsAppRole(db: Database): Promise<void> {
  const { rows } = await db.withConnection((connection) =>
    connection.query<{ secured: boolean; loggedInAsRole: boolean }>(
      `SELECT to_regnamespace('authstrap') IS NOT NULL AS "secured", current_user = $1 AS "loggedInAsRole"`,
      [appRole],
    ),
  );
  if (rows[0]?.secured && !rows[0].loggedInAsRole) await db.actAs(appRole);
}

/** Who a transaction acts for. */
export interface Scope {
  organizationId: string;
  userId: string;
  role: string;
}

/** A tenant-scoped table's organization column must equal this: the request's organization. */
export const callersOrganization = { sql: 'authstrap.organization_id()' } as const;

/** Sets the scope for the rest of the transaction. */
export const setScopeStatement = (scope: Scope): Statement => ({
  text: `SELECT set_config('authstrap.organization_id', $1, true), set_config('authstrap.user_id', $2, true), set_config('authstrap.role', $3, true)`,
  params: [scope.organizationId, scope.userId, scope.role],
});

/** What callerStatement found: no row at all means no such (unexpired) session. */
export interface CallerRow {
  sessionId: string;
  userId: string;
  /** When the session expires, in milliseconds since 1970. */
  expiresAtMs: number;
  /** The organization asked for: the header's, or else the session's active one (null: neither). */
  organizationId: string | null;
  /** The caller's role there; null when not a member (and then the scope stays empty). */
  role: string | null;
}

/**
 * Looks up the session behind the presented token (its stored forms, `tokens`) and the caller's
 * membership of the organization `x-organization-id` names, or else of the session's active
 * organization; and scopes the transaction to that organization when, and only when, the caller
 * is a member. One row, or none for an unknown or expired session.
 */
export function callerStatement(tokens: string[], organizationHeader: string | undefined): Statement {
  return {
    text: `SELECT s."id" AS "sessionId", s."userId", floor(extract(epoch FROM s."expiresAt") * 1000)::float8 AS "expiresAtMs",
       COALESCE($2::uuid, s."activeOrganizationId") AS "organizationId", m."role",
       (set_config('authstrap.organization_id', COALESCE(m."organizationId"::text, ''), true)
         || set_config('authstrap.user_id', CASE WHEN m."role" IS NULL THEN '' ELSE s."userId"::text END, true)
         || set_config('authstrap.role', COALESCE(m."role", ''), true)) IS NOT NULL AS "scoped"
     FROM "session" s
     LEFT JOIN "member" m ON m."userId" = s."userId" AND m."organizationId" = COALESCE($2::uuid, s."activeOrganizationId")
     WHERE s."token" = ANY($1::text[]) AND s."expiresAt" > now()
     LIMIT 1`,
    params: [tokens, organizationHeader ?? null],
  };
}

/** Statements that run under a scope (asCaller, withScope): what the tenant-scoped repositories take. */
export interface ScopedQueryable extends Queryable {
  readonly scoped: true;
}

/** A database whose statements run under one scope: hand-written code's way to tenant rows. */
export interface ScopedDatabase extends ScopedQueryable {
  readonly scope: Scope;
  /** `work` in one transaction under the scope. */
  transaction<T>(work: (tx: ScopedQueryable) => Promise<T>): Promise<T>;
}

/**
 * `db`, scoped: every statement runs under `scope`, in the same round trip as the settings. For
 * a request, `asCaller(db, req)` (src/generated/guards/tenant.guard.ts) does this with the
 * caller's own scope; this is for code that acts for an organization on its own (a job, a script).
 */
export function withScope(db: Database, scope: Scope): ScopedDatabase {
  return {
    scoped: true,
    scope,
    async query<Row>(text: string, params: unknown[] = []): Promise<QueryResult<Row>> {
      const outcome = await db.pipeline([setScopeStatement(scope), { text, params }]);
      if (outcome.error !== undefined) throw outcome.error;
      return outcome.results[1] as QueryResult<Row>;
    },
    transaction: (work) =>
      db.transaction(async (tx) => {
        const settings = setScopeStatement(scope);
        await tx.query(settings.text, settings.params);
        return work({ scoped: true, query: tx.query.bind(tx) });
      }),
  };
}
