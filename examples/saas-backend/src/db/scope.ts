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
  /** The signed-in user; '' for a machine key, which is no user. */
  userId: string;
  role: string;
  /** The machine key the request came with (as `authstrap.key_id`), if it came with one. */
  keyId?: string;
}

/** A tenant-scoped table's organization column must equal this: the request's organization. */
export const callersOrganization = { sql: 'authstrap.organization_id()' } as const;

/** Sets the scope for the rest of the transaction. */
export const setScopeStatement = (scope: Scope): Statement =>
  scope.keyId === undefined
    ? {
        text: `SELECT set_config('authstrap.organization_id', $1, true), set_config('authstrap.user_id', $2, true), set_config('authstrap.role', $3, true)`,
        params: [scope.organizationId, scope.userId, scope.role],
      }
    : {
        text: `SELECT set_config('authstrap.organization_id', $1, true), set_config('authstrap.user_id', $2, true), set_config('authstrap.role', $3, true), set_config('authstrap.key_id', $4, true)`,
        params: [scope.organizationId, scope.userId, scope.role, scope.keyId],
      };

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
  /** The operator signed in as the user (an impersonation session), else null. */
  impersonatedBy: string | null;
}

/**
 * Looks up the session behind the presented token (its stored forms, `tokens`) and the caller's
 * membership of the organization `x-organization-id` names, or else of the session's active
 * organization; and scopes the transaction to that organization when, and only when, the caller
 * is a member. One row, or none for an unknown or expired session.
 *
 * `eventContext`, for a request that writes, is the JSON the transaction's events carry
 * (`authstrap.request`: src/events/events.ts), set by the same statement rather than one more;
 * for an impersonation session, with the operator added (`impersonatedBy`), known only here.
 */
export function callerStatement(tokens: string[], organizationHeader: string | undefined, eventContext?: string): Statement {
  return eventContext === undefined
    ? { text: callerLookupText, params: [tokens, organizationHeader ?? null] }
    : { text: callerLookupWithContextText, params: [tokens, organizationHeader ?? null, eventContext] };
}

/** callerStatement's SQL, written once (so it is also hashed once, when its prepared name is looked up). */
function callerLookupSql(setsEventContext: boolean): string {
  const context = setsEventContext
    ? `\n         || set_config('authstrap.request', CASE WHEN s."impersonatedBy" IS NULL THEN $3::text ELSE ($3::text::jsonb || jsonb_build_object('impersonatedBy', s."impersonatedBy"))::text END, true)`
    : '';
  return `SELECT s."id" AS "sessionId", s."userId", floor(extract(epoch FROM s."expiresAt") * 1000)::float8 AS "expiresAtMs",
       COALESCE($2::uuid, s."activeOrganizationId") AS "organizationId", m."role", s."impersonatedBy",
       (set_config('authstrap.organization_id', COALESCE(m."organizationId"::text, ''), true)
         || set_config('authstrap.user_id', CASE WHEN m."role" IS NULL THEN '' ELSE s."userId"::text END, true)
         || set_config('authstrap.role', COALESCE(m."role", ''), true)${context}) IS NOT NULL AS "scoped"
     FROM "session" s
     LEFT JOIN "member" m ON m."userId" = s."userId" AND m."organizationId" = COALESCE($2::uuid, s."activeOrganizationId")
     WHERE s."token" = ANY($1::text[]) AND s."expiresAt" > now()
     LIMIT 1`;
}
const callerLookupText = callerLookupSql(false);
const callerLookupWithContextText = callerLookupSql(true);

/** What a request with a machine key asks for: one operation on one entity. */
export type KeyOperation = 'list' | 'read' | 'create' | 'update' | 'delete';

/**
 * Why machineKeyStatement did not scope the transaction; 'ok' when it did. (The key's rate limit
 * is counted before the statement, in the rate-limit store: http/machine-key-limit.ts.)
 */
export type MachineKeyOutcome = 'ok' | 'disabled' | 'expired' | 'no-organization' | 'other-organization' | 'creator-suspended' | 'creator-banned' | 'forbidden' | 'quota-exhausted' | 'quota-uncharged';

/** What machineKeyStatement found: no row at all means no such key (never made, or revoked). */
export interface MachineKeyRow {
  keyId: string;
  /** The key's organization (its `referenceId`). */
  organizationId: string;
  role: string;
  outcome: MachineKeyOutcome;
  /** The key's rate limit as its row has it now, for its next request (http/machine-key-limit.ts). */
  rateLimitEnabled: boolean;
  rateLimitMax: number | null;
  rateLimitTimeWindow: number | null;
  /** Whether it has a quota to charge (Better Auth's `remaining`), for its next request too. */
  hasQuota: boolean;
}

/** Milliseconds since a timestamp column, in SQL. */
const sinceMs = (column: string) => `(extract(epoch FROM now() - ${column}) * 1000)`;
/** The key's quota is due to be set back to `refillAmount`. */
const refillDue = `(k."refillInterval" IS NOT NULL AND k."refillAmount" IS NOT NULL AND ${sinceMs('COALESCE(k."lastRefillAt", k."createdAt")')} > k."refillInterval")`;

/**
 * The conditions on a key row (alias `k`) that decide whether a request may use it, one SQL
 * expression each, with $2 the organization header (or null), $3 the entity, $4 the operation.
 * The quota is Better Auth's api-key plugin's, so a key behaves the same whichever of the two
 * checks it: `remaining` requests in all (null: no quota), set back to `refillAmount` every
 * `refillInterval` ms.
 */
const creatorRefusal = `authstrap.key_creator_refusal(k."createdBy", k."referenceId")`;
const keyConditions = {
  enabled: `k."enabled"`,
  unexpired: `(k."expiresAt" IS NULL OR k."expiresAt" > now())`,
  organizationExists: `EXISTS (SELECT FROM "Organization" o WHERE o."id" = k."referenceId")`,
  sameOrganization: `($2::uuid IS NULL OR k."referenceId" = $2::uuid)`,
  // A key stops with its maker: while the organization's directory suspends them
  // (docs/enterprise-identity.md, 3.6) or the platform's operators ban them (docs/operator.md).
  // A key made before keys recorded their maker, or by Better Auth without one, has no maker to ask about.
  creatorAllowed: `(k."createdBy" IS NULL OR ${creatorRefusal} IS NULL)`,
  permitted: `authstrap.key_allows(k."permissions", $3, $4)`,
  withinQuota: `(k."remaining" IS NULL OR (CASE WHEN ${refillDue} THEN k."refillAmount" ELSE k."remaining" END) > 0)`,
};

/**
 * Authenticates a machine key (stored as `hashedKey`) for one operation on one entity: one
 * statement, sent in the round trip of the route's own statement. The transaction is scoped to
 * the key's organization (user '' and the key's role) only when every condition holds; otherwise
 * the scope stays empty, so the route's statement reads nothing and writes nothing, and `outcome`
 * says which condition failed. One row, or none for an unknown (or revoked) key.
 *
 * It writes nothing for a key without a quota: the key's rate limit was counted before it, in the
 * rate-limit store, and its last use reaches its row later (http/machine-key-limit.ts). So the
 * requests of one key do not queue on its row, and a read stays a read. A key with a quota
 * (Better Auth's `remaining`) is charged here, on the row as it is when the UPDATE locks it: of
 * 20 concurrent requests of a key with 10 left, exactly 10 pass.
 */
export function machineKeyStatement(hashedKey: string, organizationHeader: string | undefined, operation: { entity: string; operation: KeyOperation }, charge = true): Statement {
  const reads = operation.operation === 'list' || operation.operation === 'read';
  const text = !charge ? machineKeyLookText : reads ? machineKeyReadText : machineKeyWriteText;
  return { text, params: [hashedKey, organizationHeader ?? null, operation.entity, operation.operation] };
}

/**
 * machineKeyStatement's SQL, written once: `flushLater` for a request that only reads. Without
 * `charge`, the quota is only looked at: for a key that has none (the UPDATE would find nothing to
 * charge, and costs a data-modifying statement's planning and locks all the same: about a tenth of
 * the statement), and for a request refused by the key's rate limit, which is told why it would be
 * refused anyway first (tenant.guard.ts).
 */
function machineKeyText({ flushLater, charge }: { flushLater: boolean; charge: boolean }): string {
  const c = keyConditions;
  // Charging a quota makes a read a write, and a write waits for its WAL flush at commit. A read
  // writes nothing else, so its commit need not wait: a crash may then forget the last few
  // charges of a quota, never a record. A request that writes waits as every write does.
  const flush = flushLater && charge ? `\n         || set_config('synchronous_commit', 'off', true)` : '';
  const charged = charge
    ? `UPDATE "apikey" k SET
         "remaining" = CASE WHEN ${refillDue} THEN k."refillAmount" - 1 ELSE k."remaining" - 1 END,
         "lastRefillAt" = CASE WHEN ${refillDue} THEN now() ELSE k."lastRefillAt" END
       WHERE k."key" = $1 AND k."remaining" IS NOT NULL AND ${Object.values(keyConditions).join(' AND ')}
       RETURNING k."id"`
    : `SELECT NULL::uuid AS "id" WHERE false`;
  // Charged, the row as the UPDATE locked it decides. Looked at only, the row as read; and a key
  // that has a quota after all (set since its last request) is not let through uncharged: its
  // request is sent again with the charge (tenant.guard.ts).
  const quota = charge ? `WHEN k."remaining" IS NOT NULL THEN 'quota-exhausted'` : `WHEN NOT ${c.withinQuota} THEN 'quota-exhausted'\n           WHEN k."remaining" IS NOT NULL THEN 'quota-uncharged'`;
  return `WITH charged AS (
       ${charged}
     )
     SELECT k."id" AS "keyId", k."referenceId" AS "organizationId", k."role", o."outcome",
       k."rateLimitEnabled", k."rateLimitMax", k."rateLimitTimeWindow", k."remaining" IS NOT NULL AS "hasQuota",
       (set_config('authstrap.organization_id', CASE WHEN o."outcome" = 'ok' THEN k."referenceId"::text ELSE '' END, true)
         || set_config('authstrap.user_id', '', true)
         || set_config('authstrap.role', CASE WHEN o."outcome" = 'ok' THEN k."role" ELSE '' END, true)
         || set_config('authstrap.key_id', CASE WHEN o."outcome" = 'ok' THEN k."id"::text ELSE '' END, true)${flush}) IS NOT NULL AS "scoped"
     FROM "apikey" k
     LEFT JOIN charged c ON c."id" = k."id"
     CROSS JOIN LATERAL (SELECT CASE WHEN c."id" IS NOT NULL THEN 'ok'
         WHEN NOT ${c.enabled} THEN 'disabled'
         WHEN NOT ${c.unexpired} THEN 'expired'
         WHEN NOT ${c.organizationExists} THEN 'no-organization'
         WHEN NOT ${c.sameOrganization} THEN 'other-organization'
         -- The maker's refusal, asked once ('creator-suspended', 'creator-banned'), or the rest.
         ELSE COALESCE(CASE WHEN k."createdBy" IS NOT NULL THEN ${creatorRefusal} END, CASE
           WHEN NOT ${c.permitted} THEN 'forbidden'
           ${quota}
           ELSE 'ok' END) END AS "outcome") o
     WHERE k."key" = $1`;
}
const machineKeyReadText = machineKeyText({ flushLater: true, charge: true });
const machineKeyWriteText = machineKeyText({ flushLater: false, charge: true });
const machineKeyLookText = machineKeyText({ flushLater: false, charge: false });

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
