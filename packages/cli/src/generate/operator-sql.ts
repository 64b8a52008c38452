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
  WITH matched AS (
    SELECT m."id", m."createdAt" FROM "${table}" m
     WHERE search = '' OR m."id" = by_id OR (by_id IS NULL AND (${matches(containsPattern)}))
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
  },
});

/**
 * One user as support needs them: their organizations and roles, their sessions (device, address,
 * last use), their last 50 sign-ins and failed ones; null for no such user.
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
      'organizations', COALESCE((SELECT jsonb_agg(jsonb_build_object('id', org."id", 'name', org."name", 'slug', org."slug", 'role', m."role", 'joinedAt', ${iso('m."createdAt"')}) ORDER BY m."createdAt")
                                   FROM "member" m JOIN "Organization" org ON org."id" = m."organizationId" WHERE m."userId" = u."id"), '[]'::jsonb),
      'sessions', COALESCE((SELECT jsonb_agg(jsonb_build_object('id', s."id", 'ipAddress', s."ipAddress", 'userAgent', s."userAgent", 'createdAt', ${iso('s."createdAt"')}, 'lastSeenAt', ${iso('s."updatedAt"')}, 'expiresAt', ${iso('s."expiresAt"')}) ORDER BY s."updatedAt" DESC)
                              FROM "session" s WHERE s."userId" = u."id" AND s."expiresAt" > now()), '[]'::jsonb),
      'signIns', COALESCE((SELECT jsonb_agg(jsonb_build_object('type', e."type", 'createdAt', ${iso('e."createdAt"')}, 'ipAddress', e."ipAddress", 'userAgent', e."userAgent") ORDER BY e."createdAt" DESC)
                             FROM (SELECT * FROM "authstrap_event" ev WHERE ev."userId" = u."id" AND ev."type" IN ('session.signed_in', 'session.sign_in_failed')
                                    ORDER BY ev."createdAt" DESC LIMIT 50) e), '[]'::jsonb))
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
    `m."name" ILIKE ${pattern} OR m."slug" ILIKE ${pattern} OR EXISTS (SELECT FROM "member" mm JOIN "User" u ON u."id" = mm."userId" WHERE mm."organizationId" = m."id" AND u."email" ILIKE ${pattern})`,
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
 * The platform's log: what operators did (the operator.* events of no organization: an action's
 * copies in the organizations it touched are theirs), newest first, optionally of one type.
 * Answers `{ total, rows }`, each row as the audit log answers an event, with the names its
 * sentence needs (the user's and the operator's address and name; the route writes the sentence).
 */
const operatorEvents = `CREATE OR REPLACE FUNCTION authstrap.operator_events(operator_id uuid, only_type text, page_limit integer, page_offset integer)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
  answer jsonb;
BEGIN
  PERFORM authstrap.operator_check(operator_id);
  PERFORM set_config('authstrap.maintenance', 'on', true);
  WITH matched AS (
    SELECT e.* FROM "authstrap_event" e WHERE e."type" LIKE 'operator.%' AND e."organizationId" IS NULL AND (only_type = '' OR e."type" = only_type)
  ), paged AS (
    SELECT * FROM matched ORDER BY "createdAt" DESC, "id" LIMIT page_limit OFFSET page_offset
  )
  SELECT jsonb_build_object('total', (SELECT count(*) FROM matched), 'rows', COALESCE((SELECT jsonb_agg(jsonb_build_object(
           'id', p."id", 'type', p."type", 'userId', p."userId", 'userEmail', subject."email", 'userName', subject."name",
           'actorType', p."actorType", 'actorId', p."actorId", 'actorEmail', actor."email", 'actorName', actor."name",
           'entity', p."entity", 'entityId', p."entityId",
           'data', p."data", 'ipAddress', p."ipAddress", 'createdAt', ${iso('p."createdAt"')}) ORDER BY p."createdAt" DESC, p."id")
           FROM paged p
           LEFT JOIN "User" subject ON subject."id" = p."userId"
           -- The actor's id is text (a key's or a directory's too): compared as a uuid only when a user acted, so the index finds them.
           LEFT JOIN "User" actor ON p."actorType" = 'user' AND actor."id" = (CASE WHEN p."actorType" = 'user' THEN p."actorId" END)::uuid), '[]'::jsonb))
    INTO answer;
  PERFORM set_config('authstrap.maintenance', was_maintenance, true);
  RETURN answer;
END
$$;`;

export const operatorFunctions = [
  { name: 'operator_check', definition: operatorCheck },
  { name: 'operator_users', definition: operatorUsers },
  { name: 'operator_user', definition: operatorUser },
  { name: 'operator_organizations', definition: operatorOrganizations },
  { name: 'operator_revoke_sessions', definition: operatorRevokeSessions },
  { name: 'operator_events', definition: operatorEvents },
];
