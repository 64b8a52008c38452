/**
 * The operators' one way past the tenants' walls (the backend's src/operator/): functions that run
 * as the tables' owner with the maintenance setting on, as prune_events does, and each begins by
 * checking that the user it is asked for is an operator now (`authstrap.operator_check`, SQLSTATE
 * 42501 otherwise). The backend's role never has row-level security switched off; a statement of
 * its own still sees no tenant rows. What each returns is the JSON its route sends.
 */

/** A timestamp as the API writes it everywhere: ISO 8601 in UTC with milliseconds (2026-12-06T13:40:00.123Z). */
const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The search term as an ILIKE pattern of a substring, its wildcards taken literally. */
const containsPattern = `'%' || replace(replace(replace(search, '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%'`;

const operatorCheck = `CREATE OR REPLACE FUNCTION authstrap.operator_check(operator_id uuid) RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
  found boolean;
BEGIN
  PERFORM set_config('authstrap.maintenance', 'on', true);
  found := EXISTS (SELECT FROM "authstrap_operator" WHERE "userId" = operator_id);
  PERFORM set_config('authstrap.maintenance', was_maintenance, true);
  IF NOT found THEN
    RAISE EXCEPTION 'not an operator' USING ERRCODE = '42501';
  END IF;
END
$$;`;

/**
 * An operator's paged search of one table, newest first, as one function: every row when
 * `search` is empty, the row whose id it is when it is a uuid, else the rows `matches` (SQL over
 * the row `m` and the ILIKE pattern of `search`). `fields` are the JSON of each row of the page.
 * Answers `{ total, rows }`.
 */
function pagedSearch({ name, table, matches, fields }: { name: string; table: string; matches: (pattern: string) => string; fields: Record<string, string> }): string {
  const row = Object.entries(fields).map(([field, sql]) => `'${field}', ${sql}`).join(', ');
  return `CREATE OR REPLACE FUNCTION authstrap.${name}(operator_id uuid, search text, page_limit integer, page_offset integer)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
  by_id uuid := CASE WHEN search ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN search::uuid END;
  answer jsonb;
BEGIN
  PERFORM authstrap.operator_check(operator_id);
  PERFORM set_config('authstrap.maintenance', 'on', true);
  -- One branch for each kind of search (every row, an id, a substring), exactly one of which holds: PL/pgSQL soon
  -- plans this statement once for any search (a generic plan), where an OR of the three would read every row; each
  -- branch keeps its own index (the primary key; pg_trgm's, operator-search-sql.ts) and the others are skipped.
  WITH matched AS (
    SELECT m."id", m."createdAt" FROM "${table}" m WHERE search = ''
    UNION ALL
    SELECT m."id", m."createdAt" FROM "${table}" m WHERE m."id" = by_id
    UNION ALL
    SELECT m."id", m."createdAt" FROM "${table}" m WHERE by_id IS NULL AND search <> '' AND (${matches(containsPattern)})
  ), paged AS (
    SELECT * FROM matched ORDER BY "createdAt" DESC, "id" LIMIT page_limit OFFSET page_offset
  )
  SELECT jsonb_build_object('total', (SELECT count(*) FROM matched), 'rows', COALESCE((SELECT jsonb_agg(jsonb_build_object(${row}) ORDER BY p."createdAt" DESC, p."id")
           FROM paged p JOIN "${table}" m ON m."id" = p."id"), '[]'::jsonb))
    INTO answer;
  PERFORM set_config('authstrap.maintenance', was_maintenance, true);
  RETURN answer;
END
$$;`;
}

/** Whether the ban row `b` is in force: it has no end, or its end is still to come. */
const banInForce = (b: string) => `(${b}."expiresAt" IS NULL OR ${b}."expiresAt" > now())`;

/** A ban row `b` as the routes answer it: why, until when (null: until lifted), since when, by whom. */
const banJson = (b: string) => `jsonb_build_object('reason', ${b}."reason", 'expiresAt', ${iso(`${b}."expiresAt"`)}, 'bannedAt', ${iso(`${b}."createdAt"`)},
        'bannedBy', CASE WHEN ${b}."bannedBy" IS NULL THEN NULL ELSE jsonb_build_object('id', ${b}."bannedBy", 'email', (SELECT bu."email" FROM "User" bu WHERE bu."id" = ${b}."bannedBy")) END)`;

/** Users by part of their address or name; each with how many organizations they are in and when a session of theirs was last used. */
const operatorUsers = pagedSearch({
  name: 'operator_users',
  table: 'User',
  matches: (pattern) => `m."email" ILIKE ${pattern} OR m."name" ILIKE ${pattern}`,
  fields: {
    id: 'm."id"',
    email: 'm."email"',
    name: 'm."name"',
    email_verified: 'm."email_verified"',
    createdAt: iso('m."createdAt"'),
    organizations: '(SELECT count(*) FROM "member" mm WHERE mm."userId" = m."id")::int',
    lastSeenAt: iso('(SELECT max(s."updatedAt") FROM "session" s WHERE s."userId" = m."id")'),
    banned: `EXISTS (SELECT FROM "authstrap_user_ban" b WHERE b."userId" = m."id" AND ${banInForce('b')})`,
  },
});

/**
 * One user as support needs them: their organizations and roles, their sessions (device, address,
 * last use), their last 50 sign-ins and failed ones, their last 20 sign-ins the sign-in rule
 * refused (SSO required, deprovisioned, banned: in an organization's audit log, or the platform's
 * with no organization), the ban in force (null when none), the memberships a directory
 * suspended, and the organization that requires them to sign in with single sign-on (null when
 * none); null for no such user.
 */
const operatorUser = `CREATE OR REPLACE FUNCTION authstrap.operator_user(operator_id uuid, user_id uuid)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
  answer jsonb;
BEGIN
  PERFORM authstrap.operator_check(operator_id);
  PERFORM set_config('authstrap.maintenance', 'on', true);
  SELECT jsonb_build_object(
      'id', u."id", 'email', u."email", 'name', u."name", 'email_verified', u."email_verified", 'createdAt', ${iso('u."createdAt"')},
      'operator', EXISTS (SELECT FROM "authstrap_operator" o WHERE o."userId" = u."id"),
      'ban', (SELECT ${banJson('b')} FROM "authstrap_user_ban" b WHERE b."userId" = u."id" AND ${banInForce('b')}),
      -- Enterprise identity's hold on them: where a directory suspended their membership, and the
      -- organization whose verified domain holds their address and requires single sign-on.
      'suspensions', COALESCE((SELECT jsonb_agg(jsonb_build_object('organizationId', org."id", 'name', org."name", 'slug', org."slug", 'reason', sus."reason", 'since', ${iso('sus."suspendedAt"')}) ORDER BY sus."suspendedAt")
                                 FROM "authstrap_member_suspension" sus JOIN "Organization" org ON org."id" = sus."organizationId" WHERE sus."userId" = u."id"), '[]'::jsonb),
      'ssoRequiredBy', (SELECT jsonb_build_object('organizationId', org."id", 'name', org."name", 'slug', org."slug")
                          FROM "authstrap_domain" d JOIN "Organization" org ON org."id" = d."organizationId"
                          JOIN "authstrap_sso_policy" p ON p."organizationId" = d."organizationId" AND p."ssoRequired"
                         WHERE d."domain" = lower(substring(u."email" from '@([^@]*)$')) AND d."state" IN ('verified', 'failing')),
      'organizations', COALESCE((SELECT jsonb_agg(jsonb_build_object('id', org."id", 'name', org."name", 'slug', org."slug", 'role', m."role", 'joinedAt', ${iso('m."createdAt"')}) ORDER BY m."createdAt")
                                   FROM "member" m JOIN "Organization" org ON org."id" = m."organizationId" WHERE m."userId" = u."id"), '[]'::jsonb),
      'sessions', COALESCE((SELECT jsonb_agg(jsonb_build_object('id', s."id", 'ipAddress', s."ipAddress", 'userAgent', s."userAgent", 'createdAt', ${iso('s."createdAt"')}, 'lastSeenAt', ${iso('s."updatedAt"')}, 'expiresAt', ${iso('s."expiresAt"')}, 'impersonatedBy', s."impersonatedBy") ORDER BY s."updatedAt" DESC)
                              FROM "session" s WHERE s."userId" = u."id" AND s."expiresAt" > now()), '[]'::jsonb),
      'signIns', COALESCE((SELECT jsonb_agg(jsonb_build_object('type', e."type", 'method', e."data"->>'method', 'createdAt', ${iso('e."createdAt"')}, 'ipAddress', e."ipAddress", 'userAgent', e."userAgent") ORDER BY e."createdAt" DESC)
                             FROM (SELECT * FROM "authstrap_event" ev WHERE ev."userId" = u."id" AND ev."type" IN ('session.signed_in', 'session.sign_in_failed')
                                    ORDER BY ev."createdAt" DESC LIMIT 50) e), '[]'::jsonb),
      -- A refused attempt is about the user when it names them: one that proved nothing about the
      -- account (a wrong password at an address that must use SSO) names the address only.
      'refusedSignIns', COALESCE((SELECT jsonb_agg(jsonb_build_object('createdAt', ${iso('e."createdAt"')}, 'method', e."data"->>'method', 'code', e."data"->>'code',
                                     'organization', CASE WHEN e."organizationId" IS NOT NULL THEN jsonb_build_object('id', e."organizationId", 'name', org."name", 'slug', org."slug") END,
                                     'ipAddress', e."ipAddress") ORDER BY e."createdAt" DESC)
                                    FROM (SELECT * FROM "authstrap_event" ev WHERE ev."userId" = u."id" AND ev."type" = 'session.sign_in_refused'
                                           ORDER BY ev."createdAt" DESC LIMIT 20) e
                                    LEFT JOIN "Organization" org ON org."id" = e."organizationId"), '[]'::jsonb))
    INTO answer
    FROM "User" u WHERE u."id" = user_id;
  PERFORM set_config('authstrap.maintenance', was_maintenance, true);
  RETURN answer;
END
$$;`;

/** Organizations by part of their name or slug, or of a member's address; each with its member count. */
const operatorOrganizations = pagedSearch({
  name: 'operator_organizations',
  table: 'Organization',
  matches: (pattern) =>
    // One IN of a UNION ALL, not three ORs: each part is an index scan of its own (pg_trgm's on the name, the slug and the
    // address: operator-search-sql.ts), where an OR with a subquery reads every organization; 1 ms against 19 ms with the
    // indexes, at 20,000 organizations and 100,000 users (EXPLAIN ANALYZE; bench/README.md).
    `m."id" IN (SELECT o."id" FROM "Organization" o WHERE o."name" ILIKE ${pattern} OR o."slug" ILIKE ${pattern}
                 UNION ALL SELECT mm."organizationId" FROM "member" mm JOIN "User" u ON u."id" = mm."userId" WHERE u."email" ILIKE ${pattern})`,
  fields: {
    id: 'm."id"',
    name: 'm."name"',
    slug: 'm."slug"',
    createdAt: iso('m."createdAt"'),
    members: '(SELECT count(*) FROM "member" mm WHERE mm."organizationId" = m."id")::int',
  },
});

/**
 * Ends every session of a user (their streams close at their next check, within seconds), and
 * records it about them, done by the operator: in their security events and the platform's log
 * (the event of no organization), and in the audit log of each organization they are a member of
 * (one event each, about the user as its entity but not theirs, so that their own security events
 * list it once), whose owners and admins, and webhooks, see that support acted and when.
 * Answers how many sessions ended.
 */
const operatorRevokeSessions = `CREATE OR REPLACE FUNCTION authstrap.operator_revoke_sessions(operator_id uuid, user_id uuid, reason text, context jsonb)
RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
  ended integer;
BEGIN
  PERFORM authstrap.operator_check(operator_id);
  PERFORM set_config('authstrap.maintenance', 'on', true);
  IF NOT EXISTS (SELECT FROM "User" WHERE "id" = user_id) THEN
    PERFORM set_config('authstrap.maintenance', was_maintenance, true);
    RETURN NULL;
  END IF;
  DELETE FROM "session" WHERE "userId" = user_id;
  GET DIAGNOSTICS ended = ROW_COUNT;
  PERFORM authstrap.record_event('operator.revoked_sessions', NULL, user_id, 'User', user_id::text,
    jsonb_build_object('sessions', ended, 'reason', reason), context || jsonb_build_object('actorType', 'user', 'actorId', operator_id::text));
  PERFORM authstrap.record_event('operator.revoked_sessions', m."organizationId", NULL, 'User', user_id::text,
    jsonb_build_object('sessions', ended, 'reason', reason), context || jsonb_build_object('actorType', 'user', 'actorId', operator_id::text))
     FROM "member" m WHERE m."userId" = user_id;
  PERFORM set_config('authstrap.maintenance', was_maintenance, true);
  RETURN ended;
END
$$;`;

/**
 * Records an operator's action about a user (the statements of a function that has `operator_id`,
 * `user_id`, `address`, `context` and the maintenance setting on): once for the platform's log and
 * the user's own security events (no organization), and once in each organization the user is a
 * member of, so that its owners and admins see in their audit log (and webhooks) that support
 * acted, and when. An organization's copy is about the user by entity and address, not by
 * `userId` (the user's security events list the action once), and leaves out what is the
 * platform's business: `privateData` (the reason), and the operator's network address and device.
 */
const recordOperatorAction = (type: string, data: string, privateData: string) => `  PERFORM authstrap.record_event('${type}', NULL, user_id, 'User', user_id::text,
    ${data} || ${privateData}, context || jsonb_build_object('actorType', 'user', 'actorId', operator_id::text));
  PERFORM authstrap.record_event('${type}', m."organizationId", NULL, 'User', user_id::text,
    ${data} || jsonb_build_object('email', address), (context - 'ipAddress' - 'userAgent') || jsonb_build_object('actorType', 'user', 'actorId', operator_id::text))
    FROM "member" m WHERE m."userId" = user_id;`;

/**
 * How an operator's action on a user begins (in a function with `operator_id`, `user_id`,
 * `was_maintenance` and `address`): the operator checked, the maintenance setting on, the user's
 * address read; the function answers null for no such user.
 */
const startActionOnUser = `  PERFORM authstrap.operator_check(operator_id);
  PERFORM set_config('authstrap.maintenance', 'on', true);
  SELECT u."email" INTO address FROM "User" u WHERE u."id" = user_id;
  IF address IS NULL THEN
    PERFORM set_config('authstrap.maintenance', was_maintenance, true);
    RETURN NULL;
  END IF;`;

/** The SQLSTATE of an operator's action that the target's state refuses (an operator to ban, a user who is not banned): a 409. */
const operatorConflictState = 'AS409';

/**
 * Bans a user (docs/operator.md): the ban row (a new one, or new terms for the one there), every
 * session of theirs ended (their streams at their next check), and the action recorded
 * (operator.banned_user). From then on the sign-in rule refuses them (BANNED) and the machine keys
 * they made stop (authstrap.key_creator_refusal), until `ban_expires_at` (null: until lifted). It first
 * takes the exclusive lock a sign-in takes shared (identity-sql.ts, takeSignInLocks), so that a
 * session made meanwhile is either deleted here or waits and then meets the ban. An operator is
 * never banned (themselves included): SQLSTATE AS409. Answers `{ ban, sessions }`; null for no
 * such user. Its arguments come in the order of every operator action (the subject, what the
 * action takes, the reason, the context: operator-query.ts's actOn); the first version took the
 * reason before the end, and is dropped so that no call can reach it.
 */
const operatorBanUser = `DROP FUNCTION IF EXISTS authstrap.operator_ban_user(uuid, uuid, text, timestamptz, jsonb);
CREATE OR REPLACE FUNCTION authstrap.operator_ban_user(operator_id uuid, user_id uuid, ban_expires_at timestamptz, ban_reason text, context jsonb)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
  address text;
  ended integer;
  ban jsonb;
BEGIN
${startActionOnUser}
  IF EXISTS (SELECT FROM "authstrap_operator" o WHERE o."userId" = user_id) THEN
    RAISE EXCEPTION USING ERRCODE = '${operatorConflictState}',
      MESSAGE = 'An operator cannot be banned: revoke their operator role first (authstrap operator revoke <email>)';
  END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended('sign-in:user:' || user_id::text, 0));
  INSERT INTO "authstrap_user_ban" AS b ("userId", "reason", "expiresAt", "bannedBy", "createdAt")
    VALUES (user_id, ban_reason, ban_expires_at, operator_id, now())
    ON CONFLICT ("userId") DO UPDATE SET "reason" = EXCLUDED."reason", "expiresAt" = EXCLUDED."expiresAt", "bannedBy" = EXCLUDED."bannedBy", "createdAt" = EXCLUDED."createdAt"
    RETURNING ${banJson('b')} INTO ban;
  DELETE FROM "session" s WHERE s."userId" = user_id;
  GET DIAGNOSTICS ended = ROW_COUNT;
${recordOperatorAction('operator.banned_user', `jsonb_build_object('expiresAt', ban->'expiresAt', 'sessions', ended)`, `jsonb_build_object('reason', ban_reason)`)}
  PERFORM set_config('authstrap.maintenance', was_maintenance, true);
  RETURN jsonb_build_object('ban', ban, 'sessions', ended);
END
$$;`;

/**
 * Lifts a user's ban in force (operator.unbanned_user, with the operator's reason if they gave
 * one): they may sign in again and the machine keys they made work again; their sessions stay
 * ended. SQLSTATE AS409 for a user who is not banned (never, or no longer). Answers `{ lifted }`,
 * the ban as it was; null for no such user.
 */
const operatorUnbanUser = `CREATE OR REPLACE FUNCTION authstrap.operator_unban_user(operator_id uuid, user_id uuid, unban_reason text, context jsonb)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
  address text;
  lifted jsonb;
BEGIN
${startActionOnUser}
  DELETE FROM "authstrap_user_ban" b WHERE b."userId" = user_id AND ${banInForce('b')}
    RETURNING ${banJson('b')} INTO lifted;
  IF lifted IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = '${operatorConflictState}', MESSAGE = 'This user is not banned';
  END IF;
${recordOperatorAction('operator.unbanned_user', `jsonb_build_object('bannedAt', lifted->'bannedAt', 'expiresAt', lifted->'expiresAt')`, `jsonb_strip_nulls(jsonb_build_object('reason', unban_reason))`)}
  PERFORM set_config('authstrap.maintenance', was_maintenance, true);
  RETURN jsonb_build_object('lifted', lifted);
END
$$;`;

/**
 * Signs the operator in as a user (docs/operator.md, "Impersonation"): a session of the user made
 * by method 'impersonation' and marked with the operator (`impersonatedBy`), ending at
 * `ends_at`, whose secret's hash the backend gives (`token_hash`: the secret goes to the operator
 * only). The session trigger (identity-sql.ts) admits it only for an operator's session of a user
 * who is none, and the rule refuses a banned or deprovisioned user (SQLSTATE AS403, BANNED or
 * DEPROVISIONED); here an operator target, themselves included, is SQLSTATE AS409 first, in words.
 * Recorded as operator.impersonation_started, with the session, its end and the reason.
 * Answers `{ sessionId, expiresAt }`; null for no such user.
 */
const operatorImpersonate = `CREATE OR REPLACE FUNCTION authstrap.operator_impersonate(operator_id uuid, user_id uuid, token_hash text, ends_at timestamptz, impersonation_reason text, context jsonb)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
  address text;
  session_id uuid;
BEGIN
${startActionOnUser}
  IF user_id = operator_id THEN
    RAISE EXCEPTION USING ERRCODE = '${operatorConflictState}', MESSAGE = 'You cannot impersonate yourself';
  END IF;
  IF EXISTS (SELECT FROM "authstrap_operator" o WHERE o."userId" = user_id) THEN
    RAISE EXCEPTION USING ERRCODE = '${operatorConflictState}', MESSAGE = 'An operator cannot be impersonated: operators act as themselves';
  END IF;
  INSERT INTO "session" ("userId", "token", "expiresAt", "ipAddress", "userAgent", "authMethod", "impersonatedBy")
    VALUES (user_id, token_hash, ends_at, context->>'ipAddress', left(context->>'userAgent', 512), 'impersonation', operator_id)
    RETURNING "id" INTO session_id;
${recordOperatorAction('operator.impersonation_started', `jsonb_build_object('sessionId', session_id, 'expiresAt', ${iso('ends_at')})`, `jsonb_build_object('reason', impersonation_reason)`)}
  PERFORM set_config('authstrap.maintenance', was_maintenance, true);
  RETURN jsonb_build_object('sessionId', session_id, 'expiresAt', ${iso('ends_at')});
END
$$;`;

/**
 * Ends an impersonation session (the statements of a function that has `session_id`, `context`,
 * `ended_by`, `operator_id` (the operator ending it, or null) and the maintenance setting on):
 * the session deleted, and operator.impersonation_ended recorded as the start was, with the
 * operator who ended it as the actor (the one who impersonated, when they signed out), and which
 * way it ended (`ended_by`: 'operator' or 'sign-out'). Answers null when there is no such session.
 */
const endImpersonationStatements = `  DELETE FROM "session" s WHERE s."id" = session_id AND s."impersonatedBy" IS NOT NULL
    RETURNING s."userId", s."impersonatedBy" INTO user_id, impersonator;
  operator_id := COALESCE(operator_id, impersonator);
  IF user_id IS NULL THEN
    PERFORM set_config('authstrap.maintenance', was_maintenance, true);
    RETURN NULL;
  END IF;
  SELECT u."email" INTO address FROM "User" u WHERE u."id" = user_id;
${recordOperatorAction('operator.impersonation_ended', `jsonb_build_object('sessionId', session_id, 'endedBy', ended_by, 'impersonatedBy', impersonator)`, `'{}'::jsonb`)}
  PERFORM set_config('authstrap.maintenance', was_maintenance, true);
  RETURN jsonb_build_object('sessionId', session_id, 'userId', user_id);`;

/**
 * An operator ends an impersonation early (any operator: support hands over), before its bound.
 * Answers `{ sessionId, userId }`; null when there is no such impersonation (ended, expired and
 * swept, or a user's own session).
 */
const operatorEndImpersonation = `CREATE OR REPLACE FUNCTION authstrap.operator_end_impersonation(ending_operator_id uuid, session_id uuid, context jsonb)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
  ended_by text := 'operator';
  operator_id uuid := ending_operator_id;
  impersonator uuid;
  user_id uuid;
  address text;
BEGIN
  PERFORM authstrap.operator_check(ending_operator_id);
  PERFORM set_config('authstrap.maintenance', 'on', true);
${endImpersonationStatements}
END
$$;`;

/**
 * The impersonating operator signs out (POST /api/auth/sign-out with the impersonation's token):
 * the holder of the session's secret ends it, so no operator check; the backend calls it only for
 * the session the request presented.
 */
const signOutImpersonation = `CREATE OR REPLACE FUNCTION authstrap.sign_out_impersonation(session_id uuid, context jsonb)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
  ended_by text := 'sign-out';
  operator_id uuid;
  impersonator uuid;
  user_id uuid;
  address text;
BEGIN
  PERFORM set_config('authstrap.maintenance', 'on', true);
${endImpersonationStatements}
END
$$;`;

/** The platform's log's events of `only_type` ('' for every type): what operators did, not the copies kept in the organizations an action touched (recordOperatorAction). */
const platformEvents = `SELECT e.* FROM "authstrap_event" e WHERE e."type" LIKE 'operator.%' AND e."organizationId" IS NULL AND (only_type = '' OR e."type" = only_type)`;

/**
 * An event `p` of the platform's log as the routes answer it (with `extra`, SQL of more fields), with
 * the names its sentence needs: the user's and the operator's address and name (the route writes
 * the sentence). From `p` and its joins, platformEventNames.
 */
const platformEventJson = (extra = '') => `jsonb_build_object(
           'id', p."id", 'type', p."type", 'userId', p."userId", 'userEmail', subject."email", 'userName', subject."name",
           'actorType', p."actorType", 'actorId', p."actorId", 'actorEmail', actor."email", 'actorName', actor."name",
           'entity', p."entity", 'entityId', p."entityId",
           'data', p."data", 'ipAddress', p."ipAddress", 'createdAt', ${iso('p."createdAt"')}${extra})`;
const platformEventNames = `LEFT JOIN "User" subject ON subject."id" = p."userId"
           -- The actor's id is text (a key's or a directory's too): compared as a uuid only when a user acted, so the index finds them.
           LEFT JOIN "User" actor ON p."actorType" = 'user' AND actor."id" = (CASE WHEN p."actorType" = 'user' THEN p."actorId" END)::uuid`;

/**
 * The platform's log: what operators did (the operator.* events), newest first, optionally of one
 * type. Answers `{ total, rows }`, each row as the audit log answers an event.
 */
const operatorEvents = operatorFunction({
  name: 'operator_events',
  parameters: 'only_type text, page_limit integer, page_offset integer',
  body: `  WITH matched AS (
    ${platformEvents}
  ), paged AS (
    SELECT * FROM matched ORDER BY "createdAt" DESC, "id" LIMIT page_limit OFFSET page_offset
  )
  SELECT jsonb_build_object('total', (SELECT count(*) FROM matched), 'rows', COALESCE((SELECT jsonb_agg(${platformEventJson()} ORDER BY p."createdAt" DESC, p."id")
           FROM paged p
           ${platformEventNames}), '[]'::jsonb))
    INTO answer;`,
});

/**
 * The platform's log for its CSV export: the `batch` events of `only_type` after the cursor
 * (`after_at`, `after_id`: the last row of the batch before; null for the first), newest first,
 * each as operator_events answers it with `cursorAt`, its time as PostgreSQL's text (to the
 * microsecond), for the next cursor. Keyset paging: no OFFSET to walk past, however long the log.
 */
const operatorEventsBatch = operatorFunction({
  name: 'operator_events_batch',
  parameters: 'only_type text, after_at timestamptz, after_id uuid, batch integer',
  body: `  WITH paged AS (
    SELECT * FROM (${platformEvents}) e
     WHERE after_at IS NULL OR (e."createdAt", e."id") < (after_at, after_id)
     ORDER BY e."createdAt" DESC, e."id" DESC LIMIT batch
  )
  SELECT COALESCE(jsonb_agg(${platformEventJson(`, 'cursorAt', p."createdAt"::text`)} ORDER BY p."createdAt" DESC, p."id" DESC), '[]'::jsonb)
    INTO answer
    FROM paged p
    ${platformEventNames};`,
});

/**
 * An operator's function as most of them read (the newer ones; the first ones above spell the same
 * steps out): `operator_id` first and checked, the maintenance setting on while `body` runs and as it
 * was after, and `answer` what it returns. `body` may leave early with `EXIT work;`; it leaves
 * `answer` null for "no such thing" (the route's 404).
 */
function operatorFunction({ name, parameters = '', returns = 'jsonb', declare = '', body }: { name: string; parameters?: string; returns?: string; declare?: string; body: string }): string {
  return `CREATE OR REPLACE FUNCTION authstrap.${name}(operator_id uuid${parameters ? `, ${parameters}` : ''})
RETURNS ${returns} LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
  answer ${returns};
${declare}BEGIN
  PERFORM authstrap.operator_check(operator_id);
  PERFORM set_config('authstrap.maintenance', 'on', true);
  <<work>>
  BEGIN
${body}
  END work;
  PERFORM set_config('authstrap.maintenance', was_maintenance, true);
  RETURN answer;
END
$$;`;
}

/**
 * A machine key's `permissions` (Better Auth's JSON text) as JSON for the operator's view; text that
 * does not parse reads as no permissions (as authstrap.key_allows grants it nothing), rather than
 * failing the whole organization.
 */
const keyPermissions = `CREATE OR REPLACE FUNCTION authstrap.key_permissions(permissions text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  RETURN COALESCE(permissions::jsonb, '{}'::jsonb);
EXCEPTION WHEN invalid_text_representation THEN
  RETURN '{}'::jsonb;
END $$;`;

/** An invitation's stored value (`<hash>:<organization>:<role>:<inviter>`, src/auth/invitations.ts): its part `n`, never the hash (part 1). */
const invitationPart = (n: 2 | 3 | 4) => `split_part(v."value", ':', ${n})`;

/**
 * One organization as support needs it: its members and roles (banned or not), its pending
 * invitations (not expired; who sent them), its machine keys (name, the few characters kept in the
 * clear, role, permissions, use: never the key's hash), and its webhook endpoints (never their
 * secrets) with their delivery health from the outbox's webhook messages (failed for good in the
 * last 7 days, still being retried, the last success and the last error). Null for no such
 * organization.
 */
const operatorOrganization = operatorFunction({
  name: 'operator_organization',
  parameters: 'organization_id uuid',
  body: `  SELECT jsonb_build_object(
      'id', o."id", 'name', o."name", 'slug', o."slug", 'createdAt', ${iso('o."createdAt"')},
      'members', COALESCE((SELECT jsonb_agg(jsonb_build_object('userId', u."id", 'email', u."email", 'name', u."name", 'role', m."role", 'joinedAt', ${iso('m."createdAt"')},
                                 'banned', EXISTS (SELECT FROM "authstrap_user_ban" b WHERE b."userId" = u."id" AND ${banInForce('b')}))
                               ORDER BY CASE m."role" WHEN 'owner' THEN 1 WHEN 'admin' THEN 2 ELSE 3 END, m."createdAt", u."id")
                             FROM "member" m JOIN "User" u ON u."id" = m."userId" WHERE m."organizationId" = o."id"), '[]'::jsonb),
      'invitations', COALESCE((SELECT jsonb_agg(jsonb_build_object('id', v."id", 'email', substr(v."identifier", length('invitation:') + 1), 'role', ${invitationPart(3)},
                                     'invitedBy', jsonb_build_object('id', ${invitationPart(4)}, 'email', inviter."email"), 'createdAt', ${iso('v."createdAt"')}, 'expiresAt', ${iso('v."expiresAt"')})
                                   ORDER BY v."createdAt", v."id")
                                 FROM "verification" v LEFT JOIN "User" inviter ON inviter."id"::text = ${invitationPart(4)}
                                WHERE v."identifier" LIKE 'invitation:%' AND ${invitationPart(2)} = o."id"::text AND v."expiresAt" > now()), '[]'::jsonb),
      'machineKeys', COALESCE((SELECT jsonb_agg(jsonb_build_object('id', k."id", 'name', k."name", 'start', k."start", 'role', k."role", 'permissions', authstrap.key_permissions(k."permissions"),
                                     'enabled', k."enabled", 'expiresAt', ${iso('k."expiresAt"')}, 'lastRequest', ${iso('k."lastRequest"')}, 'requestCount', k."requestCount", 'remaining', k."remaining",
                                     'createdBy', CASE WHEN k."createdBy" IS NULL THEN NULL ELSE jsonb_build_object('id', k."createdBy", 'email', maker."email") END, 'createdAt', ${iso('k."createdAt"')})
                                   ORDER BY k."createdAt" DESC, k."id")
                                 FROM "apikey" k LEFT JOIN "User" maker ON maker."id" = k."createdBy" WHERE k."referenceId" = o."id"), '[]'::jsonb),
      'webhookEndpoints', COALESCE((SELECT jsonb_agg(jsonb_build_object('id', w."id", 'url', w."url", 'description', w."description", 'eventTypes', to_jsonb(w."eventTypes"),
                                          'enabled', w."enabled", 'disabledReason', w."disabledReason", 'failureCount', w."failureCount", 'createdAt', ${iso('w."createdAt"')},
                                          'deliveries', health.deliveries)
                                        ORDER BY w."createdAt", w."id")
                                      FROM "authstrap_webhook_endpoint" w
                                      -- The outbox keeps a webhook message 7 days after it is sent (src/outbox/outbox.ts): health is that recent.
                                      CROSS JOIN LATERAL (SELECT jsonb_build_object(
                                          'failedLast7Days', count(*) FILTER (WHERE d."status" = 'failed' AND d."createdAt" > now() - interval '7 days'),
                                          'retrying', count(*) FILTER (WHERE d."status" = 'pending' AND d."attempts" > 0),
                                          'lastSuccessAt', ${iso(`max(d."sentAt") FILTER (WHERE d."status" = 'sent')`)},
                                          'lastError', (array_agg(d."lastError" ORDER BY d."createdAt" DESC) FILTER (WHERE d."lastError" IS NOT NULL))[1]) AS deliveries
                                         FROM "authstrap_outbox" d WHERE d."channel" = 'webhook' AND d."payload"->>'endpointId' = w."id"::text) health
                                     WHERE w."organizationId" = o."id"), '[]'::jsonb))
    INTO answer
    FROM "Organization" o WHERE o."id" = organization_id;`,
});

/**
 * An organization's audit log for an operator: its events, newest first, optionally of one type,
 * as the organization's own GET /audit-events answers them (the route adds each one's sentence).
 * Answers `{ total, rows, directories }`, `directories` the names of the organization's SCIM
 * directories by id (the sentences name them; row-level security hides them from the backend's
 * own statement); null for no such organization.
 */
const operatorOrganizationEvents = operatorFunction({
  name: 'operator_organization_events',
  parameters: 'organization_id uuid, only_type text, page_limit integer, page_offset integer',
  body: `  IF NOT EXISTS (SELECT FROM "Organization" o WHERE o."id" = organization_id) THEN
    EXIT work;
  END IF;
  WITH matched AS (
    SELECT e.* FROM "authstrap_event" e WHERE e."organizationId" = organization_id AND (only_type = '' OR e."type" = only_type)
  ), paged AS (
    SELECT * FROM matched ORDER BY "createdAt" DESC, "id" DESC LIMIT page_limit OFFSET page_offset
  )
  SELECT jsonb_build_object('total', (SELECT count(*) FROM matched),
      'rows', COALESCE((SELECT jsonb_agg(jsonb_build_object('id', p."id", 'type', p."type", 'organizationId', p."organizationId", 'userId', p."userId",
                 'actorType', p."actorType", 'actorId', p."actorId", 'entity', p."entity", 'entityId', p."entityId", 'data', p."data",
                 'requestId', p."requestId", 'ipAddress', p."ipAddress", 'userAgent', p."userAgent", 'createdAt', ${iso('p."createdAt"')}) ORDER BY p."createdAt" DESC, p."id" DESC)
               FROM paged p), '[]'::jsonb),
      'directories', COALESCE((SELECT jsonb_object_agg(d."id", d."name") FROM "authstrap_scim_directory" d WHERE d."organizationId" = organization_id), '{}'::jsonb))
    INTO answer;`,
});

/**
 * The counts of the platform's days from `from_day` up to (not including) `to_day`, UTC, as rows
 * (`day`, `signUps`, `activeUsers`, `newOrganizations`), one per day of the span, zeros included.
 * Active users are the distinct users who acted in an event of the day (a sign-in, a change):
 * the events are read through their time's BRIN index, once for the whole span.
 */
const dayCounts = (fromDay: string, toDay: string) => `SELECT d::date AS "day", COALESCE(s.n, 0)::int AS "signUps", COALESCE(a.n, 0)::int AS "activeUsers", COALESCE(o.n, 0)::int AS "newOrganizations"
      FROM generate_series(${fromDay}, (${toDay}) - 1, interval '1 day') d
      LEFT JOIN (SELECT ("createdAt" AT TIME ZONE 'UTC')::date AS "day", count(*) AS n FROM "User"
                  WHERE "createdAt" >= (${fromDay})::timestamp AT TIME ZONE 'UTC' AND "createdAt" < (${toDay})::timestamp AT TIME ZONE 'UTC' GROUP BY 1) s ON s."day" = d::date
      LEFT JOIN (SELECT "day", count(*) AS n FROM (
                   SELECT DISTINCT (e."createdAt" AT TIME ZONE 'UTC')::date AS "day", e."actorId" FROM "authstrap_event" e
                    WHERE e."createdAt" >= (${fromDay})::timestamp AT TIME ZONE 'UTC' AND e."createdAt" < (${toDay})::timestamp AT TIME ZONE 'UTC' AND e."actorType" = 'user') acting
                  GROUP BY "day") a ON a."day" = d::date
      LEFT JOIN (SELECT ("createdAt" AT TIME ZONE 'UTC')::date AS "day", count(*) AS n FROM "Organization"
                  WHERE "createdAt" >= (${fromDay})::timestamp AT TIME ZONE 'UTC' AND "createdAt" < (${toDay})::timestamp AT TIME ZONE 'UTC' GROUP BY 1) o ON o."day" = d::date`;

/**
 * Counts the past days (UTC) of the last `days` that authstrap_activity_day does not hold yet, in
 * one read of their span's events, and keeps them (a day another caller kept meanwhile stays as
 * it is). Answers how many days it counted. The overview calls it first; the backend also calls it
 * hourly (src/server.ts), so that an operator's first overview after a quiet night does not count
 * a year. It writes only the platform's counts per day and answers a number: no operator check.
 */
const countActivityDays = `CREATE OR REPLACE FUNCTION authstrap.count_activity_days(days integer) RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
  today date := (now() AT TIME ZONE 'UTC')::date;
  first_missing date;
  last_missing date;
  counted integer := 0;
BEGIN
  PERFORM set_config('authstrap.maintenance', 'on', true);
  SELECT min(d::date), max(d::date) INTO first_missing, last_missing FROM generate_series(today - (days - 1), today - 1, interval '1 day') d
   WHERE NOT EXISTS (SELECT FROM "authstrap_activity_day" k WHERE k."day" = d::date);
  IF first_missing IS NOT NULL THEN
    INSERT INTO "authstrap_activity_day" ("day", "signUps", "activeUsers", "newOrganizations")
      SELECT * FROM (${dayCounts('first_missing', 'last_missing + 1')}) span
      ON CONFLICT ("day") DO NOTHING;
    GET DIAGNOSTICS counted = ROW_COUNT;
  END IF;
  PERFORM set_config('authstrap.maintenance', was_maintenance, true);
  RETURN counted;
END
$$;`;

/**
 * The operators' overview (docs/operator.md, "The overview") over the last `days` days, today
 * included: per day (for charts) sign-ups, active users and new organizations; the webhook
 * endpoints that are failing (failures in a row, or disabled after them), worst first; and the
 * organizations near a limit they have: pending invitations at 80 % or more of
 * INVITATIONS_PENDING_MAX (`pending_invitations_max`), and machine keys whose quota is nearly used
 * (at most a tenth of their refill left, or none). Past days come from authstrap_activity_day
 * (count_activity_days, hourly and here for any day not counted yet); today is counted live.
 */
const operatorOverview = operatorFunction({
  name: 'operator_overview',
  parameters: 'days integer, pending_invitations_max integer',
  declare: `  today date := (now() AT TIME ZONE 'UTC')::date;
  first_day date := (now() AT TIME ZONE 'UTC')::date - (days - 1);
`,
  body: `  PERFORM authstrap.count_activity_days(days);
  SELECT jsonb_build_object(
      'days', (SELECT jsonb_agg(jsonb_build_object('day', to_char(c."day", 'YYYY-MM-DD'), 'signUps', c."signUps", 'activeUsers', c."activeUsers", 'newOrganizations', c."newOrganizations") ORDER BY c."day")
                 FROM (SELECT "day", "signUps", "activeUsers", "newOrganizations" FROM "authstrap_activity_day" WHERE "day" >= first_day AND "day" < today
                       UNION ALL ${dayCounts('today', 'today + 1')}) c),
      'failingWebhookEndpoints', COALESCE((SELECT jsonb_agg(jsonb_build_object('id', w."id", 'url', w."url", 'enabled', w."enabled", 'disabledReason', w."disabledReason", 'failureCount', w."failureCount",
                                                'organization', jsonb_build_object('id', o."id", 'name', o."name", 'slug', o."slug")) ORDER BY w."enabled", w."failureCount" DESC, w."id")
                                              FROM (SELECT * FROM "authstrap_webhook_endpoint" WHERE "failureCount" > 0 ORDER BY "enabled", "failureCount" DESC, "id" LIMIT 50) w
                                              JOIN "Organization" o ON o."id" = w."organizationId"), '[]'::jsonb),
      'organizationsNearLimits', COALESCE((SELECT jsonb_agg(near ORDER BY near->>'limit', (near->>'current')::int DESC) FROM (
          SELECT jsonb_build_object('organization', jsonb_build_object('id', o."id", 'name', o."name", 'slug', o."slug"), 'limit', 'pendingInvitations',
                                    'current', p.pending, 'maximum', pending_invitations_max, 'keyId', NULL) AS near
            FROM (SELECT split_part(v."value", ':', 2) AS "organizationId", count(*)::int AS pending FROM "verification" v
                   WHERE v."identifier" LIKE 'invitation:%' AND v."expiresAt" > now() GROUP BY 1
                  HAVING count(*) >= ceil(pending_invitations_max * 0.8)) p
            JOIN "Organization" o ON o."id"::text = p."organizationId"
          UNION ALL
          SELECT jsonb_build_object('organization', jsonb_build_object('id', o."id", 'name', o."name", 'slug', o."slug"), 'limit', 'machineKeyQuota',
                                    'current', k."remaining", 'maximum', k."refillAmount", 'keyId', k."id")
            FROM "apikey" k JOIN "Organization" o ON o."id" = k."referenceId"
           WHERE k."enabled" AND k."remaining" IS NOT NULL AND k."remaining" <= COALESCE(k."refillAmount", 0) / 10
           LIMIT 100) nearing), '[]'::jsonb))
    INTO answer;`,
});

/** The platform's operators: who, since when, granted by whom (the command line, or an operator: their address). */
const operatorOperators = operatorFunction({
  name: 'operator_operators',
  body: `  SELECT COALESCE(jsonb_agg(jsonb_build_object('userId', o."userId", 'email', u."email", 'name', u."name", 'grantedAt', ${iso('o."grantedAt"')},
             'grantedBy', CASE WHEN o."grantedBy" = 'command line' THEN jsonb_build_object('commandLine', true, 'id', NULL, 'email', NULL)
                               ELSE jsonb_build_object('commandLine', false, 'id', o."grantedBy", 'email', granter."email") END)
           ORDER BY o."grantedAt", u."email"), '[]'::jsonb)
    INTO answer
    FROM "authstrap_operator" o JOIN "User" u ON u."id" = o."userId"
    LEFT JOIN "User" granter ON o."grantedBy" <> 'command line' AND granter."id"::text = o."grantedBy";`,
});

/**
 * An operator makes another user an operator, by address (operator.granted about them, the
 * operator as the actor, `data.by` their id: in the platform's log and the user's security events).
 * SQLSTATE AS409 for a user who is one already, or who is banned (an operator is never banned:
 * lift the ban first). Answers `{ userId, email }`; null for no user with that address.
 */
const operatorGrant = operatorFunction({
  name: 'operator_grant',
  parameters: 'address text, context jsonb',
  declare: '  user_id uuid;\n',
  body: `  SELECT u."id" INTO user_id FROM "User" u WHERE lower(u."email") = lower(address);
  IF user_id IS NULL THEN
    EXIT work;
  END IF;
  IF EXISTS (SELECT FROM "authstrap_user_ban" b WHERE b."userId" = user_id AND ${banInForce('b')}) THEN
    RAISE EXCEPTION USING ERRCODE = '${operatorConflictState}', MESSAGE = 'This user is banned: lift the ban before making them an operator';
  END IF;
  INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES (user_id, operator_id::text) ON CONFLICT ("userId") DO NOTHING;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = '${operatorConflictState}', MESSAGE = 'This user is an operator already';
  END IF;
  PERFORM authstrap.record_event('operator.granted', NULL, user_id, 'User', user_id::text, jsonb_build_object('by', operator_id),
    context || jsonb_build_object('actorType', 'user', 'actorId', operator_id::text));
  answer := jsonb_build_object('userId', user_id, 'email', (SELECT u."email" FROM "User" u WHERE u."id" = user_id));`,
});

/**
 * An operator takes the role from an operator (themselves included), never from the last one: the
 * platform always keeps someone who can act, and the command line can still revoke anyone. Every
 * operator's row is locked first, so that two operators revoking each other at once cannot both
 * succeed. The sessions they hold as other users (impersonations) end with the role, as on the
 * command line. Recorded as operator.revoked (the operator as the actor). SQLSTATE AS409 for a
 * user who is no operator, or the last one. Answers `{ userId, email, impersonationsEnded }`;
 * null for no such user.
 */
const operatorRevoke = operatorFunction({
  name: 'operator_revoke',
  parameters: 'user_id uuid, context jsonb',
  declare: '  address text;\n  operators integer;\n  ended integer;\n',
  body: `  SELECT u."email" INTO address FROM "User" u WHERE u."id" = user_id;
  IF address IS NULL THEN
    EXIT work;
  END IF;
  SELECT count(*) INTO operators FROM (SELECT FROM "authstrap_operator" FOR UPDATE) every_operator;
  IF NOT EXISTS (SELECT FROM "authstrap_operator" o WHERE o."userId" = user_id) THEN
    RAISE EXCEPTION USING ERRCODE = '${operatorConflictState}', MESSAGE = 'This user is not an operator';
  END IF;
  IF operators <= 1 THEN
    RAISE EXCEPTION USING ERRCODE = '${operatorConflictState}', MESSAGE = 'This is the last operator: grant the role to someone else first';
  END IF;
  DELETE FROM "authstrap_operator" WHERE "userId" = user_id;
  DELETE FROM "session" WHERE "impersonatedBy" = user_id;
  GET DIAGNOSTICS ended = ROW_COUNT;
  PERFORM authstrap.record_event('operator.revoked', NULL, user_id, 'User', user_id::text, jsonb_build_object('by', operator_id, 'impersonationsEnded', ended),
    context || jsonb_build_object('actorType', 'user', 'actorId', operator_id::text));
  answer := jsonb_build_object('userId', user_id, 'email', address, 'impersonationsEnded', ended);`,
});

/** The SQLSTATE of a thing of an organization an operator named that is not there (another organization's member, key or endpoint): a 404 with its message. */
const operatorNotFoundState = 'AS404';
/** The SQLSTATE of a typed confirmation that does not match: a 422 on `confirm`. */
const operatorConfirmationState = 'AS422';

/** The acting operator, as record_event's context says it. */
const operatorActor = `jsonb_build_object('actorType', 'user', 'actorId', operator_id::text)`;

/**
 * Records an operator's action on a user that touches no organization (a mail sent): in the
 * platform's log and the user's own security events, with the operator as the actor. In a
 * function with `operator_id`, `user_id` and `context`.
 */
const recordUserAction = (type: string, data: string) =>
  `  PERFORM authstrap.record_event('${type}', NULL, user_id, 'User', user_id::text, ${data}, context || ${operatorActor});`;

/**
 * Records an operator's action in an organization (`org`, its row; `type` an SQL expression): once in the platform's log,
 * with the organization named and `privateData` (the reason), about `subject` (a user's id, so
 * their security events list it, or NULL); and once in the organization's own audit log and
 * webhooks, without the reason or the operator's network address and device (as a ban's copies).
 */
const recordOrganizationAction = ({ type, subject = 'NULL', entity, entityId, data, privateData = `'{}'::jsonb` }: { type: string; subject?: string; entity: string; entityId: string; data: string; privateData?: string }) =>
  `  PERFORM authstrap.record_event(${type}, NULL, ${subject}, ${entity}, ${entityId},
    ${data} || ${privateData} || jsonb_build_object('organization', jsonb_build_object('id', org."id", 'name', org."name", 'slug', org."slug")), context || ${operatorActor});
  PERFORM authstrap.record_event(${type}, org."id", NULL, ${entity}, ${entityId}, ${data}, (context - 'ipAddress' - 'userAgent') || ${operatorActor});`;

/** How an action in an organization begins: its row read and locked into `org`; the function answers null (404) for no such organization. */
const startActionInOrganization = `  SELECT * INTO org FROM "Organization" o WHERE o."id" = organization_id FOR UPDATE;
  IF NOT FOUND THEN
    EXIT work;
  END IF;`;

/** Refuses with a 404 that names what is not in this organization. */
const notInOrganization = (what: string) => `RAISE EXCEPTION USING ERRCODE = '${operatorNotFoundState}', MESSAGE = '${what}'`;

/** The reason an operator may give an action: kept in the platform's log and the subject's own security events, never in the organization's copy. */
const reasonData = `jsonb_strip_nulls(jsonb_build_object('reason', reason))`;

/**
 * A mail an operator has the backend send a user through its own flows (src/auth/account-flows.ts):
 * the same request the user's own "send the link again" or "forgot password" writes to the outbox,
 * in this transaction with the event; the worker sends it after commit as it would for the user
 * (no reset link for a user the sign-in rule refuses, SSO's included). The operator never sees
 * the link. `refusal` is SQL that raises when the user's state makes the mail pointless.
 */
const operatorSendsMail = ({ name, kind, type, refusal }: { name: string; kind: string; type: string; refusal: string }) =>
  operatorFunction({
    name,
    parameters: 'user_id uuid, reason text, context jsonb',
    declare: '  address text;\n  verified boolean;\n',
    body: `  SELECT u."email", u."email_verified" INTO address, verified FROM "User" u WHERE u."id" = user_id;
  IF address IS NULL THEN
    EXIT work;
  END IF;
${refusal}
  INSERT INTO "authstrap_outbox" ("channel", "payload") VALUES ('account-mail', jsonb_build_object('kind', '${kind}', 'email', address));
  PERFORM pg_notify('authstrap_outbox', '');
${recordUserAction(type, `jsonb_build_object('email', address) || ${reasonData}`)}
  answer := jsonb_build_object('userId', user_id, 'email', address, 'queued', true);`,
  });

const operatorSendVerification = operatorSendsMail({
  name: 'operator_send_verification',
  kind: 'verify-email',
  type: 'operator.sent_verification_mail',
  refusal: `  IF verified THEN
    RAISE EXCEPTION USING ERRCODE = '${operatorConflictState}', MESSAGE = 'This address is verified already';
  END IF;`,
});

const operatorSendPasswordReset = operatorSendsMail({
  name: 'operator_send_password_reset',
  kind: 'reset-password',
  type: 'operator.sent_password_reset',
  refusal: `  IF EXISTS (SELECT FROM "authstrap_user_ban" b WHERE b."userId" = user_id AND ${banInForce('b')}) THEN
    RAISE EXCEPTION USING ERRCODE = '${operatorConflictState}', MESSAGE = 'This user is banned: no reset link is sent until the ban is lifted';
  END IF;`,
});

/**
 * Changes a member's role (operator.changed_role, `from` and `to`). Never leaves the organization
 * without an owner: the only owner's role changes by a transfer of ownership. Every owner row is
 * locked first (as account-flows.ts's deleteUsers does), so two changes at once cannot both
 * demote the last two owners. Answers `{ userId, from, to }`; null for no such organization.
 */
const operatorChangeRole = operatorFunction({
  name: 'operator_change_role',
  parameters: 'organization_id uuid, user_id uuid, new_role text, reason text, context jsonb',
  declare: '  org "Organization"%ROWTYPE;\n  old_role text;\n  address text;\n',
  body: `${startActionInOrganization}
  PERFORM FROM "member" m WHERE m."organizationId" = organization_id AND m."role" = 'owner' ORDER BY m."id" FOR UPDATE;
  SELECT m."role", u."email" INTO old_role, address FROM "member" m JOIN "User" u ON u."id" = m."userId" WHERE m."organizationId" = organization_id AND m."userId" = user_id FOR UPDATE OF m;
  IF old_role IS NULL THEN
    ${notInOrganization('This user is not a member of this organization')};
  END IF;
  IF old_role = new_role THEN
    RAISE EXCEPTION USING ERRCODE = '${operatorConflictState}', MESSAGE = 'This member has that role already';
  END IF;
  IF old_role = 'owner' AND NOT EXISTS (SELECT FROM "member" m WHERE m."organizationId" = organization_id AND m."role" = 'owner' AND m."userId" <> user_id) THEN
    RAISE EXCEPTION USING ERRCODE = '${operatorConflictState}', MESSAGE = 'This is the only owner: transfer the ownership to another member instead';
  END IF;
  UPDATE "member" SET "role" = new_role, "updatedAt" = now() WHERE "organizationId" = organization_id AND "userId" = user_id;
${recordOrganizationAction({ type: `'operator.changed_role'`, subject: 'user_id', entity: `'User'`, entityId: 'user_id::text', data: `jsonb_build_object('email', address, 'from', old_role, 'to', new_role)`, privateData: reasonData })}
  answer := jsonb_build_object('userId', user_id, 'from', old_role, 'to', new_role);`,
});

/**
 * Makes a member the organization's owner; every other owner becomes an admin (they keep managing
 * it, and nobody is removed). Recorded as operator.transferred_ownership about the new owner, with
 * the previous owners' addresses. Answers `{ owner, previousOwners }`; null for no such organization.
 */
const operatorTransferOwnership = operatorFunction({
  name: 'operator_transfer_ownership',
  parameters: 'organization_id uuid, user_id uuid, reason text, context jsonb',
  declare: '  org "Organization"%ROWTYPE;\n  old_role text;\n  address text;\n  previous jsonb;\n',
  body: `${startActionInOrganization}
  PERFORM FROM "member" m WHERE m."organizationId" = organization_id ORDER BY m."id" FOR UPDATE;
  SELECT m."role", u."email" INTO old_role, address FROM "member" m JOIN "User" u ON u."id" = m."userId" WHERE m."organizationId" = organization_id AND m."userId" = user_id;
  IF old_role IS NULL THEN
    ${notInOrganization('This user is not a member of this organization: they join it first')};
  END IF;
  SELECT COALESCE(jsonb_agg(jsonb_build_object('userId', m."userId", 'email', u."email") ORDER BY u."email"), '[]'::jsonb) INTO previous
    FROM "member" m JOIN "User" u ON u."id" = m."userId" WHERE m."organizationId" = organization_id AND m."role" = 'owner' AND m."userId" <> user_id;
  IF old_role = 'owner' AND previous = '[]'::jsonb THEN
    RAISE EXCEPTION USING ERRCODE = '${operatorConflictState}', MESSAGE = 'This member is the owner already';
  END IF;
  UPDATE "member" SET "role" = 'admin', "updatedAt" = now() WHERE "organizationId" = organization_id AND "role" = 'owner' AND "userId" <> user_id;
  UPDATE "member" SET "role" = 'owner', "updatedAt" = now() WHERE "organizationId" = organization_id AND "userId" = user_id;
${recordOrganizationAction({ type: `'operator.transferred_ownership'`, subject: 'user_id', entity: `'User'`, entityId: 'user_id::text', data: `jsonb_build_object('email', address, 'from', old_role, 'previousOwners', previous)`, privateData: reasonData })}
  answer := jsonb_build_object('owner', jsonb_build_object('userId', user_id, 'email', address), 'previousOwners', previous);`,
});

/**
 * Disables or enables one thing of the organization's (`table`, its organization in
 * `organizationColumn`): SQLSTATE AS404 when the organization has none with that id (another
 * organization's is none of its), AS409 when it is in that state already. The change is `set`
 * (SQL of `enable`), recorded as operator.disabled_<what> / operator.enabled_<what> about it,
 * with `label` (its name, its URL) in the event's data. Answers `{ id, <label>, enabled }`; null
 * for no such organization.
 */
const operatorSetEnabled = ({ name, table, organizationColumn, entity, what, thing, label, set }: { name: string; table: string; organizationColumn: string; entity: string; what: string; thing: string; label: string; set: string }) =>
  operatorFunction({
    name,
    parameters: 'organization_id uuid, thing_id uuid, enable boolean, reason text, context jsonb',
    declare: '  org "Organization"%ROWTYPE;\n  was_enabled boolean;\n  shown text;\n',
    body: `${startActionInOrganization}
  SELECT t."enabled", t."${label}" INTO was_enabled, shown FROM "${table}" t WHERE t."id" = thing_id AND t."${organizationColumn}" = organization_id FOR UPDATE;
  IF was_enabled IS NULL THEN
    ${notInOrganization(`This organization has no ${thing} with that id`)};
  END IF;
  IF was_enabled = enable THEN
    RAISE EXCEPTION USING ERRCODE = '${operatorConflictState}', MESSAGE = CASE WHEN enable THEN 'This ${thing} is enabled already' ELSE 'This ${thing} is disabled already' END;
  END IF;
  UPDATE "${table}" SET ${set}, "updatedAt" = now() WHERE "id" = thing_id;
${recordOrganizationAction({ type: `CASE WHEN enable THEN 'operator.enabled_${what}' ELSE 'operator.disabled_${what}' END`, entity: `'${entity}'`, entityId: 'thing_id::text', data: `jsonb_build_object('${label}', shown)`, privateData: reasonData })}
  answer := jsonb_build_object('id', thing_id, '${label}', shown, 'enabled', enable);`,
  });

/** A machine key disabled is refused from its next request (db/scope.ts: 'disabled'), its streams at their next check; the sentences name it, never show it. */
const operatorSetKeyEnabled = operatorSetEnabled({
  name: 'operator_set_key_enabled',
  table: 'apikey',
  organizationColumn: 'referenceId',
  entity: 'apikey',
  what: 'key',
  thing: 'machine key',
  label: 'name',
  set: '"enabled" = enable',
});

/**
 * A webhook endpoint disabled gets nothing more (the worker skips it, as one disabled by its
 * owners, who see why); enabled again, its count of failures starts over, as when its owners enable it.
 */
const operatorSetWebhookEndpointEnabled = operatorSetEnabled({
  name: 'operator_set_webhook_endpoint_enabled',
  table: 'authstrap_webhook_endpoint',
  organizationColumn: 'organizationId',
  entity: 'webhook_endpoint',
  what: 'webhook_endpoint',
  thing: 'webhook endpoint',
  label: 'url',
  set: `"enabled" = enable, "disabledReason" = CASE WHEN enable THEN NULL ELSE 'disabled by an operator' END, "failureCount" = CASE WHEN enable THEN 0 ELSE "failureCount" END`,
});

/**
 * Deletes a user as account-flows.ts's deleteUsers does for the user themselves: refused (409)
 * while they are the only owner of an organization with other members, and for an operator
 * (revoke the role first) or oneself; their organizations with no other member go with them
 * (their own data, of nobody else); every other organization keeps its rows, and the machine keys
 * they made there (their maker left empty). `confirm` must be the user's address (422 otherwise).
 * Recorded as operator.deleted_user in the platform's log and in each organization they leave
 * (its audit log and webhooks). Answers `{ userId, email, organizationsDeleted }`; null for no such user.
 */
const operatorDeleteUser = operatorFunction({
  name: 'operator_delete_user',
  parameters: 'user_id uuid, confirm text, reason text, context jsonb',
  declare: '  address text;\n  stranded text;\n  deleted integer;\n',
  body: `  SELECT u."email" INTO address FROM "User" u WHERE u."id" = user_id FOR UPDATE;
  IF address IS NULL THEN
    EXIT work;
  END IF;
  IF lower(confirm) IS DISTINCT FROM lower(address) THEN
    RAISE EXCEPTION USING ERRCODE = '${operatorConfirmationState}', MESSAGE = 'must be the address of the user to delete';
  END IF;
  IF EXISTS (SELECT FROM "authstrap_operator" o WHERE o."userId" = user_id) THEN
    RAISE EXCEPTION USING ERRCODE = '${operatorConflictState}', MESSAGE = 'An operator cannot be deleted: revoke their operator role first';
  END IF;
  PERFORM FROM "member" m WHERE m."role" = 'owner' AND m."organizationId" IN (SELECT "organizationId" FROM "member" WHERE "userId" = user_id) ORDER BY m."id" FOR UPDATE;
  SELECT string_agg(format('"%s" (%s)', o."name", o."id"), ', ' ORDER BY o."name") INTO stranded
    FROM "member" m JOIN "Organization" o ON o."id" = m."organizationId"
   WHERE m."userId" = user_id AND m."role" = 'owner'
     AND NOT EXISTS (SELECT FROM "member" other WHERE other."organizationId" = m."organizationId" AND other."role" = 'owner' AND other."userId" <> user_id)
     AND EXISTS (SELECT FROM "member" other WHERE other."organizationId" = m."organizationId" AND other."userId" <> user_id);
  IF stranded IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = '${operatorConflictState}',
      MESSAGE = format('The only owner of %s cannot be deleted while others are members there: transfer the ownership first', stranded);
  END IF;
  PERFORM authstrap.record_event('operator.deleted_user', NULL, NULL, 'User', user_id::text, jsonb_build_object('email', address) || ${reasonData}, context || ${operatorActor});
  PERFORM authstrap.record_event('operator.deleted_user', m."organizationId", NULL, 'User', user_id::text, jsonb_build_object('email', address), (context - 'ipAddress' - 'userAgent') || ${operatorActor})
     FROM "member" m WHERE m."userId" = user_id AND EXISTS (SELECT FROM "member" other WHERE other."organizationId" = m."organizationId" AND other."userId" <> user_id);
  DELETE FROM "Organization" o WHERE o."id" IN (SELECT "organizationId" FROM "member" WHERE "userId" = user_id)
     AND NOT EXISTS (SELECT FROM "member" other WHERE other."organizationId" = o."id" AND other."userId" <> user_id);
  GET DIAGNOSTICS deleted = ROW_COUNT;
  DELETE FROM "User" WHERE "id" = user_id;
  answer := jsonb_build_object('userId', user_id, 'email', address, 'organizationsDeleted', deleted);`,
});

/**
 * Deletes an organization as its own deletion does: the rows of its tables go with it by their
 * foreign keys (members, records, webhook endpoints, domains, directories), its pending
 * invitations and machine keys by the trigger every deletion of an organization runs
 * (`authstrap.organization_leftovers`, identity-sql.ts). Its members keep their accounts and
 * their other organizations; its events stay (pruned by EVENTS_RETENTION_DAYS), and the deletion is in the platform's log (operator.deleted_organization). `confirm` must be its
 * slug (422 otherwise). Answers `{ id, name, slug, members }`; null for no such organization.
 */
const operatorDeleteOrganization = operatorFunction({
  name: 'operator_delete_organization',
  parameters: 'organization_id uuid, confirm text, reason text, context jsonb',
  declare: '  org "Organization"%ROWTYPE;\n  members integer;\n',
  body: `${startActionInOrganization}
  IF confirm IS DISTINCT FROM org."slug" THEN
    RAISE EXCEPTION USING ERRCODE = '${operatorConfirmationState}', MESSAGE = 'must be the slug of the organization to delete';
  END IF;
  SELECT count(*) INTO members FROM "member" m WHERE m."organizationId" = organization_id;
  PERFORM authstrap.record_event('operator.deleted_organization', NULL, NULL, 'Organization', organization_id::text,
    jsonb_build_object('name', org."name", 'slug', org."slug", 'members', members) || ${reasonData}, context || ${operatorActor});
  -- Its invitations and machine keys go with it (authstrap.organization_leftovers, on every path).
  DELETE FROM "Organization" WHERE "id" = organization_id;
  answer := jsonb_build_object('id', org."id", 'name', org."name", 'slug', org."slug", 'members', members);`,
});

export const operatorFunctions = [
  { name: 'operator_check', definition: operatorCheck },
  { name: 'operator_users', definition: operatorUsers },
  { name: 'operator_user', definition: operatorUser },
  { name: 'operator_organizations', definition: operatorOrganizations },
  { name: 'operator_revoke_sessions', definition: operatorRevokeSessions },
  { name: 'operator_ban_user', definition: operatorBanUser },
  { name: 'operator_unban_user', definition: operatorUnbanUser },
  { name: 'operator_impersonate', definition: operatorImpersonate },
  { name: 'operator_end_impersonation', definition: operatorEndImpersonation },
  { name: 'sign_out_impersonation', definition: signOutImpersonation },
  { name: 'operator_events', definition: operatorEvents },
  { name: 'operator_events_batch', definition: operatorEventsBatch },
  { name: 'key_permissions', definition: keyPermissions },
  { name: 'operator_organization', definition: operatorOrganization },
  { name: 'operator_organization_events', definition: operatorOrganizationEvents },
  { name: 'count_activity_days', definition: countActivityDays },
  { name: 'operator_overview', definition: operatorOverview },
  { name: 'operator_operators', definition: operatorOperators },
  { name: 'operator_grant', definition: operatorGrant },
  { name: 'operator_revoke', definition: operatorRevoke },
  { name: 'operator_send_verification', definition: operatorSendVerification },
  { name: 'operator_send_password_reset', definition: operatorSendPasswordReset },
  { name: 'operator_change_role', definition: operatorChangeRole },
  { name: 'operator_transfer_ownership', definition: operatorTransferOwnership },
  { name: 'operator_set_key_enabled', definition: operatorSetKeyEnabled },
  { name: 'operator_set_webhook_endpoint_enabled', definition: operatorSetWebhookEndpointEnabled },
  { name: 'operator_delete_user', definition: operatorDeleteUser },
  { name: 'operator_delete_organization', definition: operatorDeleteOrganization },
];
