import type { Entity, Schema } from '../schema/types.js';
import { literal, quote } from './sql-text.js';
import type { AccessModel, Trigger } from './table-types.js';

/**
 * The sign-in rule as SQL (docs/enterprise-identity.md, 2.3 and 3.2): one function,
 * `authstrap.sign_in_verdict`, that the backend asks early (src/auth/sign-in-policy.ts) and two
 * triggers ask without exception, on every `session` row made and every `account.password`
 * written, whoever writes it (the backend's routes, Better Auth through the service API, a script).
 * A refusal is SQLSTATE AS403 with the verdict as its DETAIL, which the backend's error handler
 * answers as a 403 (src/http/errors.ts).
 */

/** The SQLSTATE of a refused sign-in (class AS: authstrap's own; 403: what the answer is). */
export const signInRefusedState = 'AS403';

/** The domain of an address: what follows its last `@`, lowercased. */
const domainOf = (address: string) => `lower(substring(${address} from '@([^@]*)$'))`;

/** The methods a break-glass owner may sign in or set a password by (3.2, rule 3). */
const breakGlassMethods = ['password', 'password-reset', 'password-change', 'password-set', 'better-auth:password'];

/**
 * The rule's DEPROVISIONED refusal, when directories suspended the user (`user_id`) in
 * organizations that `which` (a condition on the suspension `s`) concerns: the verdict names each
 * of them (`organizationIds`, in a stable order), so that the refusal is on the record in each
 * one's audit log, whose directory turned the user off (src/auth/sign-in-policy.ts). Statements of
 * the rule's body (its variable `deprovisioning`), indented by `indent`.
 */
const deprovisionedBy = (which: string, indent: string) =>
  [
    `SELECT jsonb_agg(s."organizationId" ORDER BY s."organizationId") INTO deprovisioning`,
    `  FROM "authstrap_member_suspension" s WHERE s."userId" = user_id AND ${which};`,
    `IF deprovisioning IS NOT NULL THEN`,
    `  RETURN jsonb_build_object('allowed', false, 'code', 'DEPROVISIONED', 'organizationIds', deprovisioning);`,
    `END IF;`,
  ]
    .map((line) => indent + line)
    .join('\n');

/** The parts of the rule that depend on the schema: what Better Auth's plugins keep (2.3). */
function generatedParts(schema: Schema): { refusals: string; ssoAllowed: string } {
  const entity = (name: string): Entity | undefined => schema.entities.find((candidate) => candidate.name === name);
  const column = (owner: Entity, field: string) => owner.fields.find((candidate) => candidate.name === field)?.column;
  const refusals: string[] = [];
  // Better Auth's admin plugin bans users; the backend's own path refuses them too.
  const user = entity('User');
  const banned = user && column(user, 'banned');
  if (user && banned) {
    const expires = column(user, 'banExpires');
    refusals.push(`  IF user_id IS NOT NULL AND EXISTS (SELECT 1 FROM ${quote(user.table)} u WHERE u."id" = user_id AND u.${quote(banned)}${
      expires ? ` AND (u.${quote(expires)} IS NULL OR u.${quote(expires)} > now())` : ''
    }) THEN
    RETURN jsonb_build_object('allowed', false, 'code', 'BANNED');
  END IF;
`);
  }
  // Better Auth's sso plugin: a session it makes is SSO when the user's account is one of the
  // enforcing organization's providers.
  const provider = entity('ssoProvider');
  const providerId = provider && column(provider, 'providerId');
  const providerOrganization = provider && column(provider, 'organizationId');
  let ssoAllowed = '';
  if (provider && providerId && providerOrganization) {
    // The user's accounts at providers of an organization: the plugin's organizationId is text
    // (createSchema writes Better Auth's string), an organization's id a uuid, so both as text.
    const accountsAtProvidersOf = (organization: string) =>
      `SELECT 1 FROM "account" a JOIN ${quote(provider.table)} p ON p.${quote(providerId)} = a."providerId"
       WHERE a."userId" = user_id AND p.${quote(providerOrganization)}::text = ${organization}::text`;
    // A user deprovisioned by an organization whose provider they signed in with gets no session
    // through the plugin, whatever the address: the plugin makes the session before the membership
    // (which it would make again) and leaves the session in no organization. The rule knows the user's
    // providers, not which one is signing in, so it refuses their every plugin sign-in (the safe side),
    // naming each such organization.
    refusals.push(`  IF method = 'better-auth:sso' AND user_id IS NOT NULL THEN
${deprovisionedBy(`EXISTS (${accountsAtProvidersOf('s."organizationId"')})`, '    ')}
  END IF;
`);
    ssoAllowed = `    IF method = 'better-auth:sso' AND user_id IS NOT NULL AND EXISTS (${accountsAtProvidersOf('owner_organization')}) THEN
      RETURN jsonb_build_object('allowed', true, 'breakGlass', false);
    END IF;
`;
  }
  return { refusals: refusals.join(''), ssoAllowed };
}

/**
 * Runs `statements` as the tables' owner with the maintenance setting on, as record_event does:
 * the identity tables have row-level security (forced on their owner too), and the rule reads
 * every organization's rows, outside any request's scope. The setting is put back after.
 */
const withMaintenance = (statements: string) => `  was_maintenance := COALESCE(current_setting('authstrap.maintenance', true), '');
  PERFORM set_config('authstrap.maintenance', 'on', true);
${statements}
  PERFORM set_config('authstrap.maintenance', was_maintenance, true);`;

/** What the backend and the triggers ask: the rule, run where it can read the identity tables. */
const signInVerdict = `CREATE OR REPLACE FUNCTION authstrap.sign_in_verdict(address text, user_id uuid, method text, organization_id uuid, connection_id uuid) RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text;
  verdict jsonb;
BEGIN
${withMaintenance('  verdict := authstrap.sign_in_rule(address, user_id, method, organization_id, connection_id);')}
  RETURN verdict;
END
$$;`;

/**
 * The operators' ban of `userId` (authstrap_user_ban), while it is in force: a row whose end, if
 * it has one, is still to come. What the rule and `authstrap.key_creator_refusal` both ask.
 */
const banInForce = (userId: string) =>
  `SELECT 1 FROM "authstrap_user_ban" b WHERE b."userId" = ${userId} AND (b."expiresAt" IS NULL OR b."expiresAt" > now())`;

/**
 * The rule. `{"allowed":true,"breakGlass":false}`, or a refusal with its code. STABLE and
 * read-only: one probe of the verified domains' unique index, one of the suspensions by user, one
 * of the operators' bans by user, and one of `member` only when enforcement applies. Not SECURITY
 * DEFINER: called by anyone else, it reads only what their row-level security lets them, which is
 * less, never more.
 */
function signInRule(schema: Schema): string {
  const { refusals, ssoAllowed } = generatedParts(schema);
  return `CREATE OR REPLACE FUNCTION authstrap.sign_in_rule(address text, user_id uuid, method text, organization_id uuid, connection_id uuid) RETURNS jsonb LANGUAGE plpgsql STABLE SET search_path = public, pg_temp AS $$
DECLARE
  owner_organization uuid;
  owner_slug text;
  sso_required boolean;
  break_glass text;
  deprovisioning jsonb;
BEGIN
  -- The organization that owns the address: its verified (or failing, within the grace) domain.
  SELECT d."organizationId", o."slug", COALESCE(p."ssoRequired", false), p."breakGlass"
    INTO owner_organization, owner_slug, sso_required, break_glass
    FROM "authstrap_domain" d
    JOIN "Organization" o ON o."id" = d."organizationId"
    LEFT JOIN "authstrap_sso_policy" p ON p."organizationId" = d."organizationId"
   WHERE d."domain" = ${domainOf('address')} AND d."state" IN ('verified', 'failing');

  -- Deprovisioned by the organization that owns the address (everywhere), or by the one asked for.
  IF user_id IS NOT NULL THEN
${deprovisionedBy('(s."organizationId" = owner_organization OR s."organizationId" = organization_id)', '    ')}
  END IF;
  -- Banned by the platform's operators, until the ban ends (or is lifted).
  IF user_id IS NOT NULL AND EXISTS (${banInForce('user_id')}) THEN
    RETURN jsonb_build_object('allowed', false, 'code', 'BANNED');
  END IF;
${refusals}
  -- An operator signed in as the user (the session trigger has checked the operator): the user's
  -- organization's SSO requirement binds the user, not support; a ban or deprovisioning still refuses.
  IF method = 'impersonation' THEN
    RETURN jsonb_build_object('allowed', true, 'breakGlass', false);
  END IF;
  IF owner_organization IS NOT NULL AND sso_required THEN
    -- An enabled connection of the organization that owns the address, never another's.
    IF method = 'sso' AND EXISTS (
      SELECT 1 FROM "authstrap_sso_connection" c WHERE c."id" = connection_id AND c."organizationId" = owner_organization AND c."enabled") THEN
      RETURN jsonb_build_object('allowed', true, 'breakGlass', false);
    END IF;
${ssoAllowed}    -- Break-glass: the organization's owners keep a password path while the IdP is down.
    IF method IN (${breakGlassMethods.map(literal).join(', ')}) AND break_glass = 'owners' AND user_id IS NOT NULL AND EXISTS (
      SELECT 1 FROM "member" m WHERE m."organizationId" = owner_organization AND m."userId" = user_id AND m."role" = 'owner') THEN
      RETURN jsonb_build_object('allowed', true, 'breakGlass', true);
    END IF;
    RETURN jsonb_build_object('allowed', false, 'code', 'SSO_REQUIRED', 'organizationId', owner_organization, 'slug', owner_slug, 'domain', ${domainOf('address')});
  END IF;
  RETURN jsonb_build_object('allowed', true, 'breakGlass', false);
END
$$;`;
}

/**
 * Takes the shared advisory locks a sign-in holds until it commits, in the order
 * `lockUntilCommit` takes a policy change's exclusive ones (sorted by name: the domain's, the
 * organization's, the user's), so that the two never wait on each other in a circle. The domain's
 * comes from the address, before any lookup: it covers a domain verified meanwhile, which the
 * lookup of its owner could not see yet. A change that commits first is seen by the verdict (asked
 * after the locks, in a new snapshot); one that starts after waits, then sees this sign-in's row.
 */
const takeSignInLocks = (userId: string, address: string) => `  PERFORM pg_advisory_xact_lock_shared(hashtextextended('sign-in:domain:' || COALESCE(${domainOf(address)}, ''), 0));
${withMaintenance(`  SELECT d."organizationId" INTO owner_organization FROM "authstrap_domain" d WHERE d."domain" = ${domainOf(address)} AND d."state" IN ('verified', 'failing');`)}
  IF owner_organization IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock_shared(hashtextextended('sign-in:org:' || owner_organization::text, 0));
  END IF;
  PERFORM pg_advisory_xact_lock_shared(hashtextextended('sign-in:user:' || ${userId}::text, 0));`;

/**
 * A trigger function of the rule: the row's user, the locks, `before` (statements that may
 * refuse first, setting `verdict`), the verdict (`verdictCall`), a refusal as SQLSTATE AS403 with
 * the verdict as DETAIL and whom it refused as the detail's `attempt` (the row's user and their
 * address: a refusal on Better Auth's path is recorded from it, after its transaction rolled back,
 * src/auth/sign-in-policy.ts), then `allowed` (statements run when the verdict allows the row).
 */
const policyTrigger = (name: string, verdictCall: string, allowed = '', before = '') => `CREATE OR REPLACE FUNCTION authstrap.${name}() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  address text;
  owner_organization uuid;
  was_maintenance text;
  verdict jsonb;
BEGIN
  SELECT u."email" INTO address FROM "User" u WHERE u."id" = NEW."userId";
${takeSignInLocks('NEW."userId"', 'address')}
${before}  verdict := ${verdictCall};
  IF NOT (verdict->>'allowed')::boolean THEN
    RAISE EXCEPTION USING ERRCODE = '${signInRefusedState}', MESSAGE = 'sign-in refused: ' || (verdict->>'code'),
      DETAIL = (verdict || jsonb_build_object('attempt', jsonb_build_object('email', address, 'userId', NEW."userId")))::text;
  END IF;
${allowed}  RETURN NEW;
END
$$;`;

/**
 * The session trigger's refusal of an impersonation that may not be made (docs/operator.md,
 * "Impersonation"), IMPERSONATION_REFUSED with the reason: method 'impersonation' and
 * `impersonatedBy` come together or not at all, and name an operator now, signed in as a user who
 * is none (themselves included). Whoever inserts the row (the operators' function, a script, the
 * service API) meets this; the rule then judges the user as for any sign-in (a ban,
 * deprovisioning). Read with the maintenance setting on: no request may read another user's
 * operator row.
 */
const impersonationRefusal = `  IF NEW."authMethod" = 'impersonation' OR NEW."impersonatedBy" IS NOT NULL THEN
${withMaintenance(`    verdict := jsonb_build_object('allowed', false, 'code', 'IMPERSONATION_REFUSED', 'reason', CASE
      WHEN NEW."authMethod" IS DISTINCT FROM 'impersonation' OR NEW."impersonatedBy" IS NULL THEN 'not-marked'
      WHEN NOT EXISTS (SELECT FROM "authstrap_operator" o WHERE o."userId" = NEW."impersonatedBy") THEN 'not-an-operator'
      WHEN EXISTS (SELECT FROM "authstrap_operator" o WHERE o."userId" = NEW."userId") THEN 'operator-target'
    END);`)}
    IF verdict->>'reason' IS NOT NULL THEN
      RAISE EXCEPTION USING ERRCODE = '${signInRefusedState}', MESSAGE = 'sign-in refused: IMPERSONATION_REFUSED', DETAIL = verdict::text;
    END IF;
  END IF;
`;

/**
 * Every session row made, from anywhere, under the rule; a break-glass session says so in its
 * method; an impersonation only as impersonationRefusal allows.
 */
const sessionPolicy = policyTrigger(
  'session_policy',
  `authstrap.sign_in_verdict(address, NEW."userId", COALESCE(NEW."authMethod", 'unknown'), NEW."activeOrganizationId", NEW."ssoConnectionId")`,
  `  IF (verdict->>'breakGlass')::boolean THEN
    NEW."authMethod" := NEW."authMethod" || ':break-glass';
  END IF;
`,
  impersonationRefusal,
);

/**
 * What an impersonation session keeps once made, whoever updates it (the backend's sliding
 * renewal, Better Auth's through the service API): its end (never later than it was: the
 * operator's bound), its method and its operator. And no session becomes one afterwards.
 */
const impersonationBound = `CREATE OR REPLACE FUNCTION authstrap.impersonation_bound() RETURNS trigger LANGUAGE plpgsql SET search_path = public, pg_temp AS $$
BEGIN
  IF OLD."impersonatedBy" IS NOT NULL THEN
    NEW."expiresAt" := LEAST(NEW."expiresAt", OLD."expiresAt");
    NEW."authMethod" := OLD."authMethod";
    NEW."impersonatedBy" := OLD."impersonatedBy";
  ELSIF NEW."impersonatedBy" IS NOT NULL OR NEW."authMethod" = 'impersonation' THEN
    RAISE EXCEPTION USING ERRCODE = '${signInRefusedState}', MESSAGE = 'sign-in refused: IMPERSONATION_REFUSED',
      DETAIL = jsonb_build_object('allowed', false, 'code', 'IMPERSONATION_REFUSED', 'reason', 'not-at-creation')::text;
  END IF;
  RETURN NEW;
END
$$;`;

/** No password is stored for an address that must sign in with SSO (its owners excepted, under break-glass). */
const passwordPolicy = policyTrigger('password_policy', `authstrap.sign_in_verdict(address, NEW."userId", 'password-set', NULL, NULL)`);

/**
 * Who a SCIM request is (docs/enterprise-identity.md, 5.3): the directory whose token hashes to
 * `token_hash`, if it is the one the path names (`directory_id`), its default role, and why it may
 * not act when it may not. No row: no such token (never made, or revoked). SECURITY DEFINER with the maintenance
 * setting, as sign_in_verdict: the tokens are read before any scope exists. It notes the token's
 * and the directory's last use at most once a minute, so a sync's requests do not queue on the rows.
 */
const scimCaller = `CREATE OR REPLACE FUNCTION authstrap.scim_caller(token_hash text, directory_id uuid) RETURNS TABLE ("directoryId" uuid, "organizationId" uuid, "defaultRole" text, "outcome" text) LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text;
  token_id uuid;
  found_directory uuid;
  found_organization uuid;
  directory_enabled boolean;
  directory_role text;
  token_expires timestamptz;
  token_used timestamptz;
  verdict text;
BEGIN
${withMaintenance(`  SELECT t."id", t."directoryId", t."organizationId", d."enabled", d."defaultRole", t."expiresAt", t."lastUsedAt"
    INTO token_id, found_directory, found_organization, directory_enabled, directory_role, token_expires, token_used
    FROM "authstrap_scim_token" t JOIN "authstrap_scim_directory" d ON d."id" = t."directoryId"
   WHERE t."tokenHash" = token_hash;
  IF token_id IS NOT NULL THEN
    verdict := CASE WHEN found_directory IS DISTINCT FROM directory_id THEN 'other-directory'
                    WHEN NOT directory_enabled THEN 'disabled'
                    WHEN token_expires IS NOT NULL AND token_expires <= now() THEN 'expired'
                    ELSE 'ok' END;
    IF verdict = 'ok' AND (token_used IS NULL OR token_used < now() - interval '1 minute') THEN
      UPDATE "authstrap_scim_token" SET "lastUsedAt" = now() WHERE "id" = token_id;
      UPDATE "authstrap_scim_directory" SET "lastRequestAt" = now() WHERE "id" = found_directory;
    END IF;
  END IF;`)}
  IF token_id IS NOT NULL THEN
    RETURN QUERY SELECT found_directory, found_organization, directory_role, verdict;
  END IF;
END
$$;`;

/**
 * Whether a directory suspended `user_id` in `organization_id`: a machine key that user made stops
 * working while they are (3.6), on its next request and in the streams' recheck. SECURITY DEFINER:
 * asked by the key's own lookup, before any scope lets the suspensions be read.
 */
const memberSuspended = `CREATE OR REPLACE FUNCTION authstrap.member_suspended(user_id uuid, organization_id uuid) RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text;
  suspended boolean;
BEGIN
${withMaintenance('  suspended := EXISTS (SELECT 1 FROM "authstrap_member_suspension" s WHERE s."userId" = user_id AND s."organizationId" = organization_id);')}
  RETURN suspended;
END
$$;`;

/**
 * Why a machine key's maker stops it, or null when nothing does: `creator-suspended` while the
 * organization's directory has suspended them there (3.6), `creator-banned` while the platform's
 * operators ban them (docs/operator.md). Asked on every request of a key that records its maker
 * (db/scope.ts, creatorAllowed), and in the streams' recheck: one call, so one function and one
 * maintenance switch per request, not one per reason. SECURITY DEFINER, as member_suspended: no
 * request may read the suspensions or the bans.
 */
const keyCreatorRefusal = `CREATE OR REPLACE FUNCTION authstrap.key_creator_refusal(creator uuid, organization_id uuid) RETURNS text LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text;
  refusal text;
BEGIN
${withMaintenance(`  refusal := CASE
    WHEN EXISTS (SELECT 1 FROM "authstrap_member_suspension" s WHERE s."userId" = creator AND s."organizationId" = organization_id) THEN 'creator-suspended'
    WHEN EXISTS (${banInForce('creator')}) THEN 'creator-banned'
  END;`)}
  RETURN refusal;
END
$$;`;

/**
 * The verified domains' check worker's queue (src/domains/domain-checks.ts): claims up to
 * `max_rows` domains whose `nextCheckAt` is due at `checked_at` and moves it on by `lease_seconds`
 * in the same statement, so that no other instance claims them meanwhile (`FOR UPDATE SKIP LOCKED`:
 * two instances asking at once take different rows, never the same one) and a check that never
 * finishes (an instance stopped mid-check) is taken again once the lease is over. A pending claim
 * is checked only within `pending_hours` of its creation; after that only when its owner asks.
 * The time is a parameter, not now(), so that the worker's clock is the one the tests set.
 * As the tables' owner with the maintenance setting on: the worker acts in no organization yet.
 */
const dueDomainChecks = `CREATE OR REPLACE FUNCTION authstrap.due_domain_checks(max_rows integer, checked_at timestamptz, lease_seconds integer, pending_hours integer)
RETURNS TABLE ("id" uuid, "organizationId" uuid, "domain" text, "state" text, "txtToken" text, "failingSince" timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_column
DECLARE
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
BEGIN
  PERFORM set_config('authstrap.maintenance', 'on', true);
  RETURN QUERY
  WITH due AS (
    SELECT d."id" FROM "authstrap_domain" d
     WHERE d."nextCheckAt" <= checked_at
       AND (d."state" <> 'pending' OR d."createdAt" > checked_at - make_interval(hours => pending_hours))
     ORDER BY d."nextCheckAt", d."id"
     LIMIT max_rows
     FOR UPDATE SKIP LOCKED
  )
  UPDATE "authstrap_domain" d SET "nextCheckAt" = checked_at + make_interval(secs => lease_seconds)
    FROM due WHERE d."id" = due."id"
  RETURNING d."id", d."organizationId", d."domain", d."state", d."txtToken", d."failingSince";
  PERFORM set_config('authstrap.maintenance', was_maintenance, true);
END
$$;`;

/**
 * Claims up to `max_rows` single sign-on connections whose metadata refresh is due (the daily
 * refresh, src/sso/metadata-refresh.ts), moving their `metadataNextRefreshAt` a lease ahead in the
 * same statement: as due_domain_checks, two instances never refresh the same connection at once,
 * and one stopped mid-refresh leaves it to another once the lease is over. The worker sets the
 * next day's time when it has refreshed. As the tables' owner with the maintenance setting on.
 */
const dueSsoRefreshes = `CREATE OR REPLACE FUNCTION authstrap.due_sso_refreshes(max_rows integer, refreshed_at timestamptz, lease_seconds integer)
RETURNS TABLE ("id" uuid, "organizationId" uuid)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_column
DECLARE
  was_maintenance text;
BEGIN
${withMaintenance(`  RETURN QUERY
  UPDATE "authstrap_sso_connection" c SET "metadataNextRefreshAt" = refreshed_at + make_interval(secs => lease_seconds)
   WHERE c."id" IN (SELECT due."id" FROM "authstrap_sso_connection" due WHERE due."metadataNextRefreshAt" <= refreshed_at
                     ORDER BY due."metadataNextRefreshAt", due."id" LIMIT max_rows FOR UPDATE SKIP LOCKED)
  RETURNING c."id", c."organizationId";`)}
END
$$;`;

/**
 * Keeps a batch of SCIM requests (src/scim/request-log.ts) in each directory's request log, and
 * trims it: seven days, and at most 1,000 rows a directory. `requests` is a JSON array of rows.
 * SECURITY DEFINER with the maintenance setting: one statement for a second of every directory's
 * requests, whatever their organizations. A directory deleted meanwhile takes its rows with it.
 */
const recordScimRequests = `CREATE OR REPLACE FUNCTION authstrap.record_scim_requests(requests jsonb) RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text;
BEGIN
${withMaintenance(`  INSERT INTO "authstrap_scim_request" ("directoryId", "organizationId", "method", "path", "status", "scimType", "detail", "durationMs", "createdAt")
  SELECT r."directoryId", d."organizationId", r."method", r."path", r."status", r."scimType", r."detail", r."durationMs", r."createdAt"
    FROM jsonb_to_recordset(requests) AS r("directoryId" uuid, "method" text, "path" text, "status" integer, "scimType" text, "detail" text, "durationMs" integer, "createdAt" timestamptz)
    JOIN "authstrap_scim_directory" d ON d."id" = r."directoryId";
  DELETE FROM "authstrap_scim_request" q USING (
    SELECT o."id" FROM (
      SELECT r."id", r."createdAt", row_number() OVER (PARTITION BY r."directoryId" ORDER BY r."createdAt" DESC, r."id" DESC) AS "newest"
        FROM "authstrap_scim_request" r
       WHERE r."directoryId" IN (SELECT DISTINCT (x->>'directoryId')::uuid FROM jsonb_array_elements(requests) x)) o
     WHERE o."newest" > 1000 OR o."createdAt" < now() - interval '7 days') old
   WHERE q."id" = old."id";`)}
END
$$;`;

/**
 * Whether a directory owns the role of `user_id` in `organization_id`: it provisioned them (a live
 * resource, a member) and it maps groups to roles (docs/enterprise-identity.md, 6.3 and 6.5). The
 * members' routes refuse a change of their role by hand (409 DIRECTORY_MANAGED). SECURITY DEFINER:
 * asked by a route whose transaction is not scoped to read the directory's rows.
 */
const directoryManagesRole = `CREATE OR REPLACE FUNCTION authstrap.directory_manages_role(user_id uuid, organization_id uuid) RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text;
  managed boolean;
BEGIN
${withMaintenance(`  managed := EXISTS (SELECT 1 FROM "authstrap_scim_user" su
                      WHERE su."userId" = user_id AND su."organizationId" = organization_id AND su."deletedAt" IS NULL AND su."membership" = 'member'
                        AND EXISTS (SELECT 1 FROM "authstrap_scim_role_mapping" r WHERE r."directoryId" = su."directoryId"));`)}
  RETURN managed;
END
$$;`;

/**
 * Whether a directory owns the profile of `user_id`: a directory provisioned them (a live
 * resource) in an organization that has verified the domain of their address
 * (docs/enterprise-identity.md, 6.3). Their name and address then change only from the directory:
 * the routes that change them by hand answer 409 DIRECTORY_MANAGED. SECURITY DEFINER, as
 * directory_manages_role: the user's own request cannot read the directory's rows.
 */
const directoryManagesProfile = `CREATE OR REPLACE FUNCTION authstrap.directory_manages_profile(user_id uuid) RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text;
  managed boolean;
BEGIN
${withMaintenance(`  managed := EXISTS (SELECT 1 FROM "authstrap_scim_user" su JOIN "User" u ON u."id" = su."userId"
                      JOIN "authstrap_domain" d ON d."organizationId" = su."organizationId" AND d."domain" = lower(substring(u."email" from '@([^@]*)$')) AND d."state" IN ('verified', 'failing')
                     WHERE su."userId" = user_id AND su."deletedAt" IS NULL);`)}
  RETURN managed;
END
$$;`;

/**
 * Whether an invitation a directory mailed (its inviter part is the directory's id; invitations.ts)
 * still stands: the directory is enabled, and its resource for the invited address is live, active
 * and still `invited`. Asked by the invitation's routes, which are scoped to no organization:
 * SECURITY DEFINER, and it answers that one boolean.
 */
const directoryInvitationStands = `CREATE OR REPLACE FUNCTION authstrap.directory_invitation_stands(directory_id text, organization_id text, address text) RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text;
  stands boolean;
BEGIN
${withMaintenance(`  stands := EXISTS (SELECT 1 FROM "authstrap_scim_user" su JOIN "authstrap_scim_directory" d ON d."id" = su."directoryId" JOIN "User" u ON u."id" = su."userId"
                     WHERE su."directoryId"::text = directory_id AND su."organizationId"::text = organization_id AND d."enabled"
                       AND su."deletedAt" IS NULL AND su."active" AND su."membership" = 'invited' AND lower(u."email") = lower(address));`)}
  RETURN stands;
END
$$;`;

/**
 * The directory's resources of a person who accepted its invitation become members (the
 * acceptance runs scoped to no organization, and the resources are the directory's to write);
 * answers each, with its directory and default role, for the roles its mappings give.
 */
const directoryInvitationAccepted = `CREATE OR REPLACE FUNCTION authstrap.directory_invitation_accepted(user_id uuid, organization_id uuid)
  RETURNS TABLE ("scimUserId" uuid, "directoryId" uuid, "defaultRole" text) LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text;
BEGIN
${withMaintenance(`  RETURN QUERY
    WITH accepted AS (
      UPDATE "authstrap_scim_user" su SET "membership" = 'member'
       WHERE su."userId" = user_id AND su."organizationId" = organization_id AND su."membership" = 'invited' AND su."deletedAt" IS NULL AND su."active"
      RETURNING su."id", su."directoryId")
    SELECT a."id", a."directoryId", d."defaultRole" FROM accepted a JOIN "authstrap_scim_directory" d ON d."id" = a."directoryId";`)}
END
$$;`;

/**
 * Where an address (its domain) or an organization (its slug) signs in with single sign-on: the
 * organization, whether it requires SSO, and its enabled connections, as jsonb
 * (`{ organizationId, slug, ssoRequired, connections: [{ id, name, protocol }] }`), or null. Only
 * a verified (or failing) domain routes. The sign-in page's question, asked before anyone is
 * signed in: SECURITY DEFINER, and it says nothing else of the organization.
 */
const ssoRoute = `CREATE OR REPLACE FUNCTION authstrap.sso_route(address_domain text, organization_slug text) RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text;
  route jsonb;
BEGIN
${withMaintenance(`  SELECT jsonb_build_object(
           'organizationId', o."id", 'slug', o."slug",
           'ssoRequired', COALESCE((SELECT p."ssoRequired" FROM "authstrap_sso_policy" p WHERE p."organizationId" = o."id"), false),
           'connections', COALESCE((SELECT jsonb_agg(jsonb_build_object('id', c."id", 'name', c."name", 'protocol', c."protocol") ORDER BY c."createdAt", c."id")
                                      FROM "authstrap_sso_connection" c WHERE c."organizationId" = o."id" AND c."enabled"), '[]'::jsonb))
    INTO route
    FROM "Organization" o
   WHERE (address_domain IS NOT NULL AND o."id" = (SELECT d."organizationId" FROM "authstrap_domain" d WHERE d."domain" = lower(address_domain) AND d."state" IN ('verified', 'failing')))
      OR (address_domain IS NULL AND o."slug" = organization_slug);`)}
  RETURN route;
END
$$;`;

/** The organization of a connection: what an SSO callback scopes its statements to (the connection is in its path). */
const ssoConnectionOwner = `CREATE OR REPLACE FUNCTION authstrap.sso_connection_owner(connection_id uuid) RETURNS uuid LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text;
  owner_organization uuid;
BEGIN
${withMaintenance('  SELECT c."organizationId" INTO owner_organization FROM "authstrap_sso_connection" c WHERE c."id" = connection_id;')}
  RETURN owner_organization;
END
$$;`;

/**
 * Deletes what single sign-on keeps only for minutes and never reads once expired: sign-in flows
 * (10 minutes), an app's one-time codes (60 seconds) and SAML assertion IDs past their
 * assertion's end (replay is refused until then). Hourly, in every instance (src/sso/prune.ts);
 * requests may not delete other organizations' rows, so SECURITY DEFINER. Returns how many rows
 * went. SCIM's request log keeps itself short as it is written (record_scim_requests).
 */
const pruneIdentity = `CREATE OR REPLACE FUNCTION authstrap.prune_identity() RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text;
  flows integer;
  codes integer;
  assertions integer;
BEGIN
${withMaintenance(`  DELETE FROM "authstrap_sso_flow" WHERE "expiresAt" < now();
  GET DIAGNOSTICS flows = ROW_COUNT;
  DELETE FROM "authstrap_sso_code" WHERE "expiresAt" < now();
  GET DIAGNOSTICS codes = ROW_COUNT;
  DELETE FROM "authstrap_saml_assertion" WHERE "expiresAt" < now();
  GET DIAGNOSTICS assertions = ROW_COUNT;`)}
  RETURN flows + codes + assertions;
END
$$;`;

/**
 * What an organization leaves that no foreign key reaches, gone with it on every path that
 * deletes one (the service key's DELETE, as Better Auth's organization plugin sends it; an
 * account deletion that takes the organizations only that user was in; an operator's delete):
 * its pending invitations (verification rows naming it in their value) and its machine keys
 * (Better Auth's key table names the organization in `referenceId`, without a foreign key).
 * SECURITY DEFINER with the maintenance setting: a deleter sees neither table's rows.
 */
const organizationLeftovers = `CREATE OR REPLACE FUNCTION authstrap.organization_leftovers() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text;
BEGIN
${withMaintenance(`  DELETE FROM "verification" v WHERE v."identifier" LIKE 'invitation:%' AND split_part(v."value", ':', 2) = OLD."id"::text;
  DELETE FROM "apikey" k WHERE k."referenceId" = OLD."id";`)}
  RETURN OLD;
END
$$;`;

export const identityFunctions = (schema: Schema): AccessModel['functions'] => [
  { name: 'sign_in_rule', definition: signInRule(schema) },
  { name: 'sign_in_verdict', definition: signInVerdict },
  { name: 'session_policy', definition: sessionPolicy },
  { name: 'impersonation_bound', definition: impersonationBound },
  { name: 'password_policy', definition: passwordPolicy },
  { name: 'scim_caller', definition: scimCaller },
  { name: 'member_suspended', definition: memberSuspended },
  { name: 'record_scim_requests', definition: recordScimRequests },
  { name: 'directory_manages_role', definition: directoryManagesRole },
  { name: 'directory_manages_profile', definition: directoryManagesProfile },
  { name: 'directory_invitation_stands', definition: directoryInvitationStands },
  { name: 'directory_invitation_accepted', definition: directoryInvitationAccepted },
  { name: 'key_creator_refusal', definition: keyCreatorRefusal },
  { name: 'due_domain_checks', definition: dueDomainChecks },
  { name: 'due_sso_refreshes', definition: dueSsoRefreshes },
  { name: 'sso_route', definition: ssoRoute },
  { name: 'sso_connection_owner', definition: ssoConnectionOwner },
  { name: 'prune_identity', definition: pruneIdentity },
  { name: 'organization_leftovers', definition: organizationLeftovers },
];

/** The backend's own triggers, by table: the sign-in rule's on `session` and `account`, an organization's leftovers on `Organization` (table-model.ts puts them there). */
export const identityTriggers: Record<string, Trigger[]> = {
  session: [
    { name: 'authstrap_sign_in_policy', timing: 'BEFORE INSERT', function: 'authstrap.session_policy' },
    {
      name: 'authstrap_impersonation_bound',
      timing: 'BEFORE UPDATE',
      function: 'authstrap.impersonation_bound',
      // A user's own session (nearly every update: renewals) never runs the function.
      when: `OLD."impersonatedBy" IS NOT NULL OR NEW."impersonatedBy" IS NOT NULL OR NEW."authMethod" = 'impersonation'`,
    },
  ],
  Organization: [{ name: 'authstrap_organization_leftovers', timing: 'AFTER DELETE', function: 'authstrap.organization_leftovers' }],
  account: [{ name: 'authstrap_password_policy', timing: 'BEFORE INSERT OR UPDATE OF "password"', function: 'authstrap.password_policy', when: 'NEW."password" IS NOT NULL' }],
};
