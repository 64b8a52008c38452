import type { Entity, Schema } from '../schema/types.js';
import { literal, quote } from './sql-text.js';

/**
 * Events as SQL (src/events/ in the backend). Every event is written by one function,
 * `authstrap.record_event`, in the transaction of the change that caused it: the backend's auth
 * flows call it, and a trigger on each tenant table of the schema calls it for every row created,
 * changed or deleted, whatever path the change took (a route, the service key, your own SQL). So a
 * change and its event commit or roll back together, and a statement that changed nothing records
 * nothing.
 *
 * The same function puts one webhook delivery per subscribed endpoint of the organization in the
 * outbox (channel 'webhook'), so deliveries are as transactional as the events.
 *
 * Who and from where come from the transaction's settings: `authstrap.user_id` (the caller, set
 * with the scope: src/db/scope.ts) and `authstrap.request` (JSON: request id, IP, user agent, and
 * the actor when it is not a user: src/events/events.ts).
 */

/**
 * The events the backend's own code records (src/auth/, src/events/): with the
 * entities' events, what generated/events.ts, the OpenAPI document and the typed client list.
 */
export const authEventTypes: Record<string, string> = {
  'user.signed_up': 'A user signed up (or was made by accepting an invitation)',
  'user.deleted': 'A user deleted their account',
  'user.email_verified': 'A user confirmed their e-mail address',
  'user.email_changed': "A user's e-mail address changed (confirmed from the new address)",
  'user.password_changed': 'A user changed their password (their other sessions ended)',
  'user.password_reset': 'A user reset their password with a link from the mail (all their sessions ended)',
  'session.signed_in': 'A user signed in (data.method: how, as the session stores it)',
  'session.sign_in_failed': 'A failed sign-in (data.email: the address as typed; userId: its user, empty for an address without an account)',
  'session.sign_in_refused':
    "A sign-in, sign-up or invitation refused by the sign-in policy (data.code: SSO_REQUIRED, DEPROVISIONED or BANNED; data.method): in the audit log of the organization that requires SSO, or once in that of each organization whose directory deprovisioned the user; a platform ban's refusals are the platform's, in the user's own security events only",
  'sso.break_glass_used': 'An owner signed in with a password while the organization requires single sign-on (break-glass)',
  'session.signed_out': 'A user signed out',
  'session.revoked': "One or more of a user's sessions were signed out by the user",
  'invitation.sent': 'An owner or admin invited an e-mail address to the organization',
  'invitation.accepted': 'An invitation was accepted',
  'invitation.declined': 'An invitation was declined',
  'invitation.revoked': 'An owner or admin withdrew a pending invitation before it was answered',
  'domain.claimed': 'An owner or admin claimed a domain for the organization (pending until its DNS TXT record is found)',
  'domain.verified': "A domain's DNS TXT record was found: the organization owns it (data.previousState; sessions refused by the organization's SSO rule ended)",
  'domain.failing': "A verified domain's DNS TXT record is gone: it still counts until data.lapsesAt (DOMAIN_FAILING_GRACE_DAYS)",
  'domain.lapsed': "A failing domain's grace ended without its DNS TXT record: it no longer routes, captures or enforces anything",
  'domain.removed': 'An owner or admin removed a domain claim',
  'sso_connection.created': 'An owner or admin added a single sign-on connection (disabled until tested and enabled)',
  'sso_connection.updated': "A single sign-on connection's settings changed (data.changedFields; a change of what sign-in reads needs a new test)",
  'sso_connection.deleted': 'A single sign-on connection was removed (data.sessionsEnded: the sessions it made)',
  'sso_connection.enabled': 'A single sign-on connection was turned on: it signs people in',
  'sso_connection.disabled': 'A single sign-on connection was turned off (data.sessionsEnded: the sessions it made)',
  'sso_connection.tested': 'A test sign-in through a connection ended (data.ok; data.error when it failed)',
  'sso_connection.certificate_expiring': "The daily refresh found an IdP signing certificate of a connection that ends within 30 days or has ended (data.certificates: fingerprintSha256, subject, notAfter, expired); at most once a day per connection",
  'sso_connection.refresh_failed': "The daily refresh could not read a connection's identity provider (data.from, data.error); the connection keeps what was read before; at most once a day per connection",
  'sso_policy.updated': "The organization's single sign-on policy changed (data.ssoRequired, data.breakGlass, data.sessionsEnded)",
  'webhook_endpoint.created': 'An owner or admin added a webhook endpoint',
  'webhook_endpoint.updated': 'A webhook endpoint was changed, enabled or disabled (by a person, or by the backend after repeated failures)',
  'webhook_endpoint.deleted': 'A webhook endpoint was removed',
  'key.created': 'An owner or admin made a machine key for the organization (its name, role and permissions; never the key)',
  'key.revoked': 'An owner or admin revoked a machine key',
  'directory.created': 'An owner or admin connected a SCIM directory (an identity provider that provisions members)',
  'directory.updated': "A SCIM directory's name, default role or state changed (data.changedFields)",
  'directory.deleted': 'A SCIM directory was removed (the memberships it made stay)',
  'directory.token_rotated': "A SCIM directory got a new token (data.start; the previous one works for data.overlapSeconds)",
  'directory.token_revoked': "A SCIM directory's token was revoked",
  'directory.user_provisioned': 'A SCIM directory provisioned a user (data.membership: member, or invited for an account outside the verified domains)',
  'directory.user_updated': "A SCIM directory changed a user's attributes (data.changedFields)",
  'directory.user_deprovisioned': "A SCIM directory deactivated or deleted a user: their membership is suspended and their sessions ended (data.reason, data.sessionsEnded)",
  'directory.user_reactivated': 'A SCIM directory reactivated a user: their membership is back',
  'directory.group_created': 'A SCIM directory pushed a group (data.displayName, data.members)',
  'directory.group_updated': "A SCIM directory renamed a group or changed its members",
  'directory.group_deleted': 'A SCIM directory removed a group (roles its mapping gave are recomputed)',
  'directory.role_changed': "A member's role changed because of the directory's groups and role mappings (data.from, data.to)",
  'directory.role_mappings_changed': "An owner or admin changed which directory group gives which role (roles recomputed at once)",
  'directory.request_refused': 'A SCIM request was refused because it would leave the organization without an owner (data.method, data.path, data.detail)',
  'operator.granted': "A user was made an operator of the platform (data.by: 'command line', or the operator who granted it)",
  'operator.revoked': 'A user is no longer an operator of the platform',
  'operator.revoked_sessions': "An operator signed a user out everywhere (data.sessions: how many; data.reason)",
  'operator.banned_user':
    "An operator banned a user: every sign-in refused and the machine keys they made stopped until data.expiresAt (null: until lifted), their sessions ended (data.sessions); data.reason in the platform's log and the user's own events, data.email in each of their organizations' audit logs",
  'operator.unbanned_user': "An operator lifted a user's ban (data.bannedAt, data.expiresAt: the ban lifted; data.reason when given): they may sign in again and their machine keys work again",
  'operator.impersonation_started':
    "An operator signed in as a user until data.expiresAt (data.sessionId); data.reason in the platform's log and the user's own events, data.email in each of their organizations' audit logs. Every event the session makes carries data.impersonatedBy",
  'operator.impersonation_ended': "An operator's session as a user ended before its bound (data.sessionId, data.impersonatedBy; data.endedBy: 'operator' or 'sign-out')",
  'operator.sent_verification_mail': "An operator had the backend mail a user a new link to verify their address (data.email; data.reason when given); the operator never sees the link",
  'operator.sent_password_reset': "An operator had the backend mail a user a link to reset their password (data.email; data.reason when given); the operator never sees the link or the password",
  'operator.changed_role': "An operator changed a member's role (data.email, data.from, data.to); in the platform's log (data.organization, data.reason) and the organization's audit log",
  'operator.transferred_ownership': "An operator made a member the organization's owner; the other owners (data.previousOwners) became admins",
  'operator.disabled_key': "An operator disabled one of the organization's machine keys (data.name): refused from its next request",
  'operator.enabled_key': "An operator enabled one of the organization's machine keys again (data.name)",
  'operator.disabled_webhook_endpoint': "An operator disabled one of the organization's webhook endpoints (data.url): nothing more is delivered to it",
  'operator.enabled_webhook_endpoint': "An operator enabled one of the organization's webhook endpoints again (data.url); its count of failures starts over",
  'operator.deleted_user': "An operator deleted a user's account (data.email), with the organizations where they were the only member",
  'operator.deleted_organization': "An operator deleted an organization with everything in it (data.name, data.slug, data.members): in the platform's log",
};

/**
 * Whether an entity's changes are events: the tenant tables of the schema (unless it says
 * `events: false`), and the organizations and their members.
 */
export const hasEvents = (entity: Entity, auth: boolean) =>
  auth && ((entity.tenantScoped && !entity.builtin && entity.events !== false) || (entity.builtin && builtinEventEntities.has(entity.name)));

/** Every event type of a schema's backend, sorted, each with its description as a string literal. */
export function eventTypesOf(schema: Schema): { type: string; description: string }[] {
  if (!schema.auth) return [];
  const described: [string, string][] = Object.entries(authEventTypes);
  for (const entity of schema.entities.filter((candidate) => hasEvents(candidate, schema.auth))) {
    const [created, updated, deleted] = entityEventTypes(entity);
    described.push([created!, `${entity.name} created`], [updated!, `${entity.name} changed (changedFields names what)`], [deleted!, `${entity.name} deleted`]);
  }
  return described.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([type, description]) => ({ type, description: JSON.stringify(description) }));
}

/** `Project` -> `project`, `TaskItem` -> `task_item`: the prefix of an entity's event types. */
export const eventPrefix = (entity: Pick<Entity, 'name'>) => entity.name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();

/** The entity event types: `project.created`, `project.updated`, `project.deleted`. */
export const entityEventTypes = (entity: Pick<Entity, 'name'>) => ['created', 'updated', 'deleted'].map((what) => `${eventPrefix(entity)}.${what}`);

/**
 * What record_event and the tables' trigger both write, as SQL text, so that the two say it once:
 * the actor of the transaction, and the outbox messages of the organization's subscribed
 * endpoints. They expect the variables `request` (the context, jsonb) and `key_id` (text).
 */
const actorType = `COALESCE(request->>'actorType', CASE WHEN authstrap.user_id() IS NOT NULL THEN 'user' WHEN key_id IS NOT NULL THEN 'machine_key' ELSE 'system' END)`;
const actorId = `COALESCE(request->>'actorId', authstrap.user_id()::text, key_id)`;
const eventColumns = `"type", "organizationId", "userId", "actorType", "actorId", "entity", "entityId", "data", "requestId", "ipAddress", "userAgent"`;
const requestValues = `request->>'requestId', request->>'ipAddress', left(request->>'userAgent', 512)`;
/**
 * The event's `data`, given as the SQL `data`, with the operator who made the change while signed
 * in as the user (an impersonation session: docs/operator.md) when the context names one: the
 * audit log, the security events and the webhooks all show it. A `?` on the context costs nothing
 * measurable for every other write.
 */
const dataWithImpersonation = (data: string) =>
  `CASE WHEN request ? 'impersonatedBy' THEN ${data} || jsonb_build_object('impersonatedBy', request->'impersonatedBy') ELSE ${data} END`;
/**
 * The end of the event's INSERT: its id, and whether the organization has an enabled webhook
 * endpoint at all. Most have none, and asking in the INSERT's own RETURNING costs a bare index
 * probe, where a statement of its own (or an INSERT into the outbox, which opens the outbox and
 * its indexes even for no row) costs a PL/pgSQL statement started and ended on every write.
 */
const returningEvent = (organization: string) =>
  `RETURNING "id", EXISTS (SELECT FROM "authstrap_webhook_endpoint" w WHERE w."organizationId" = ${organization} AND w."enabled") INTO event_id, has_endpoints;`;

/**
 * One webhook delivery per enabled endpoint of the organization subscribed to the event's type,
 * when returningEvent found one: the event row is made JSON only then. A delivery written
 * notifies the channel `authstrap_outbox`, which PostgreSQL sends at commit: the workers start at once.
 */
const fanOut = `IF has_endpoints THEN
    INSERT INTO "authstrap_outbox" ("channel", "payload")
    SELECT 'webhook', jsonb_build_object('endpointId', w."id", 'organizationId', w."organizationId", 'event', to_jsonb(e))
      FROM "authstrap_event" e
      JOIN "authstrap_webhook_endpoint" w ON w."organizationId" = e."organizationId" AND w."enabled"
       AND (cardinality(w."eventTypes") = 0 OR e."type" = ANY (w."eventTypes"))
     WHERE e."id" = event_id;
    -- Wakes the outbox workers of every instance when (and only if) the transaction commits (src/outbox/wake-ups.ts).
    IF FOUND THEN
      PERFORM pg_notify('authstrap_outbox', '');
    END IF;
  END IF;`;

/**
 * The maintenance setting switched on for the function's own statements, and back. An assignment,
 * not PERFORM: PL/pgSQL evaluates it as a bare expression, where PERFORM starts a query each time.
 */
const maintenanceOn = `setting := set_config('authstrap.maintenance', 'on', true);`;
const maintenanceBack = `setting := set_config('authstrap.maintenance', was_maintenance, true);`;

/**
 * Records an event the backend's code names (an auth flow's, a webhook route's, yours). Runs as
 * the tables' owner (SECURITY DEFINER) with the maintenance setting on for its own statements
 * only: requests can neither write an event nor read another organization's endpoints, but the
 * event of their change is written, and delivered to every endpoint subscribed.
 */
const recordEvent = `CREATE OR REPLACE FUNCTION authstrap.record_event(event_type text, organization_id uuid, subject_user_id uuid, entity text, entity_id text, data jsonb, context jsonb DEFAULT NULL)
RETURNS uuid LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  request jsonb := COALESCE(context, NULLIF(current_setting('authstrap.request', true), '')::jsonb, '{}'::jsonb);
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
  -- A machine key's request (db/scope.ts) is no user's: its key is the actor.
  key_id text := NULLIF(current_setting('authstrap.key_id', true), '');
  setting text;
  event_id uuid;
  has_endpoints boolean;
BEGIN
  ${maintenanceOn}
  INSERT INTO "authstrap_event" (${eventColumns})
  VALUES (event_type, organization_id, subject_user_id, ${actorType}, ${actorId}, entity, entity_id, ${dataWithImpersonation(`COALESCE(data, '{}'::jsonb)`)}, ${requestValues})
  -- An event of no organization (a user's own: a sign-in) has no endpoints.
  ${returningEvent('organization_id')}
  ${fanOut}
  ${maintenanceBack}
  RETURN event_id;
END
$$;`;

/**
 * The stream's order (GET /realtime, src/realtime/). A data event takes its `position` from one
 * sequence when its transaction commits: the table's trigger is deferred to the commit, so
 * positions follow the order in which transactions commit, not the order in which they wrote
 * (nor the events' ids, which are random). A reader that sees position 7 committed and 6 not yet
 * cannot tell a transaction still committing from one that rolled back after taking 6; so every
 * transaction holds this advisory lock, shared, from before it takes a position until it ends
 * (PostgreSQL releases it after the commit is visible). The reader waits for the transactions
 * holding it when it saw the gap: once they have ended, 6 is either visible or never will be.
 * Shared: committing transactions never wait for each other; the reader only looks (pg_locks).
 */
export const positionClaimKey = [1635087464, 1] as const;

/** The sequence the positions come from (made before the functions that use it). */
const eventPosition = `CREATE SEQUENCE IF NOT EXISTS authstrap.event_position AS bigint;`;

/**
 * The trigger of every tenant table of the schema, and of the organizations and their members. Its
 * arguments: the event type prefix, the entity's name, the columns no event may carry (secret
 * fields), and the column that holds the organization ("id" for the organizations themselves).
 *
 * It writes the event itself rather than through record_event: it runs on every write of every
 * tenant table, where a second PL/pgSQL call, with its own owner switch and settings, is paid
 * each time (bench/README.md, "The write cost, second pass"). SECURITY DEFINER for the same reason
 * as record_event. AFTER the row: it sees the row as stored (defaults, other triggers' changes),
 * and an INSERT that ON CONFLICT DO NOTHING skipped records nothing. Deferred to the commit (a
 * constraint trigger, INITIALLY DEFERRED): it still sees each row version as that change left it,
 * and its event takes its stream position at commit (streamPosition above).
 */
const dataEvent = `CREATE OR REPLACE FUNCTION authstrap.data_event() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  request jsonb := COALESCE(NULLIF(current_setting('authstrap.request', true), '')::jsonb, '{}'::jsonb);
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
  key_id text := NULLIF(current_setting('authstrap.key_id', true), '');
  event_type text;
  organization_id uuid;
  record_id text;
  data jsonb;
  changed text[];
  previous jsonb;
  setting text;
  event_id uuid;
  has_endpoints boolean;
BEGIN
  IF TG_OP = 'DELETE' THEN
    event_type := TG_ARGV[0] || '.deleted';
    -- The record as it was: who could read it decides who hears of its deletion (src/realtime/).
    data := jsonb_build_object('record', CASE WHEN TG_ARGV[2] = '{}' THEN to_jsonb(OLD) ELSE to_jsonb(OLD) - TG_ARGV[2]::text[] END);
    organization_id := (data->'record'->>TG_ARGV[3])::uuid;
    record_id := OLD."id"::text;
  ELSE
    -- The record without its secret fields (most tables have none: nothing to take out).
    data := jsonb_build_object('record', CASE WHEN TG_ARGV[2] = '{}' THEN to_jsonb(NEW) ELSE to_jsonb(NEW) - TG_ARGV[2]::text[] END);
    organization_id := (data->'record'->>TG_ARGV[3])::uuid;
    record_id := NEW."id"::text;
    IF TG_OP = 'INSERT' THEN
      event_type := TG_ARGV[0] || '.created';
    ELSE
      -- The fields whose value changed (secret ones by name only), and their values before, as
      -- Stripe's previous_attributes (a member's role change: { "role": "member" }); the
      -- timestamp of the change is not one.
      SELECT array_agg(n.key ORDER BY n.key), COALESCE(jsonb_object_agg(o.key, o.value) FILTER (WHERE o.key <> ALL (TG_ARGV[2]::text[])), '{}'::jsonb)
        INTO changed, previous
        FROM jsonb_each(to_jsonb(NEW)) n JOIN jsonb_each(to_jsonb(OLD)) o USING (key)
       WHERE n.value IS DISTINCT FROM o.value AND n.key <> 'updatedAt';
      IF changed IS NULL THEN
        RETURN NULL;
      END IF;
      event_type := TG_ARGV[0] || '.updated';
      data := jsonb_build_object('changedFields', to_jsonb(changed), 'previous', previous) || data;
    END IF;
  END IF;
  ${maintenanceOn}
  -- Its place in the stream (src/realtime/), taken now, at commit: see streamPosition.
  PERFORM pg_advisory_xact_lock_shared(${positionClaimKey.join(', ')});
  INSERT INTO "authstrap_event" (${eventColumns}, "position")
  VALUES (event_type, organization_id, NULL, ${actorType}, ${actorId}, TG_ARGV[1], record_id, ${dataWithImpersonation('data')}, ${requestValues}, nextval('authstrap.event_position'))
  ${returningEvent('organization_id')}
  ${fanOut}
  ${maintenanceBack}
  -- An AFTER trigger's answer is ignored.
  RETURN NULL;
END
$$;`;

/** Deletes events older than `days` (EVENTS_RETENTION_DAYS), which requests may not; returns how many. */
const pruneEvents = `CREATE OR REPLACE FUNCTION authstrap.prune_events(days integer) RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
  pruned integer;
BEGIN
  PERFORM set_config('authstrap.maintenance', 'on', true);
  DELETE FROM "authstrap_event" WHERE "createdAt" < now() - make_interval(days => days);
  GET DIAGNOSTICS pruned = ROW_COUNT;
  PERFORM set_config('authstrap.maintenance', was_maintenance, true);
  RETURN pruned;
END
$$;`;

/**
 * The stream's events after `after`, in position order, at most `max_events` (src/realtime/):
 * for every organization at once, or for one (a subscriber catching up). Runs as the tables'
 * owner with the maintenance setting on, like prune_events: the realtime reader of each instance
 * reads every organization's events, and decides in the backend who may see each.
 */
const streamEvents = `CREATE OR REPLACE FUNCTION authstrap.stream_events(after bigint, max_events integer, only_organization uuid DEFAULT NULL, up_to bigint DEFAULT NULL)
RETURNS TABLE ("position" bigint, "event" text) LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
BEGIN
  PERFORM set_config('authstrap.maintenance', 'on', true);
  RETURN QUERY
    SELECT e."position", jsonb_build_object('id', e."id", 'type', e."type", 'organizationId', e."organizationId", 'actorType', e."actorType",
             'actorId', e."actorId", 'entity', e."entity", 'entityId', e."entityId", 'data', e."data", 'createdAt', e."createdAt")::text
      FROM "authstrap_event" e
     WHERE e."position" > after AND (up_to IS NULL OR e."position" <= up_to)
       AND (only_organization IS NULL OR e."organizationId" = only_organization)
     ORDER BY e."position"
     LIMIT max_events;
  PERFORM set_config('authstrap.maintenance', was_maintenance, true);
END
$$;`;

/** The oldest position still kept (retention deletes older events), and the newest committed. */
const streamBounds = `CREATE OR REPLACE FUNCTION authstrap.stream_bounds(OUT oldest bigint, OUT newest bigint) LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
BEGIN
  PERFORM set_config('authstrap.maintenance', 'on', true);
  SELECT min(e."position"), max(e."position") INTO oldest, newest FROM "authstrap_event" e WHERE e."position" IS NOT NULL;
  PERFORM set_config('authstrap.maintenance', was_maintenance, true);
END
$$;`;

export const eventFunctions = [
  { name: 'event_position', definition: eventPosition },
  { name: 'record_event', definition: recordEvent },
  { name: 'data_event', definition: dataEvent },
  { name: 'prune_events', definition: pruneEvents },
  { name: 'stream_events', definition: streamEvents },
  { name: 'stream_bounds', definition: streamBounds },
];

/** What a tenant table's event trigger is made of (table-model: Table.events). */
export interface TableEvents {
  prefix: string;
  entity: string;
  hidden: string[];
  organizationColumn: string;
  /** When the trigger runs: at the commit (streamPosition), for every table since the streams. */
  at: 'commit';
}

/** The built-in tables whose changes are events too: organizations, and who is a member with which role. */
export const builtinEventEntities = new Set(['Organization', 'member']);

export function tableEvents(entity: Entity): TableEvents {
  return {
    prefix: eventPrefix(entity),
    entity: entity.name,
    hidden: entity.fields.filter((field) => field.secret).map((field) => field.column),
    organizationColumn: entity.name === 'Organization' ? 'id' : 'organizationId',
    at: 'commit',
  };
}

/** The trigger that records a tenant table's changes (made again, in case it was dropped). */
export function eventTriggerStatements(table: string, events: TableEvents | undefined): string[] {
  const drop = `DROP TRIGGER IF EXISTS ${quote('authstrap_events')} ON ${quote(table)};`;
  if (!events) return [drop];
  const hidden = `{${events.hidden.map((column) => `"${column}"`).join(',')}}`;
  return [
    drop,
    `CREATE CONSTRAINT TRIGGER ${quote('authstrap_events')} AFTER INSERT OR UPDATE OR DELETE ON ${quote(table)} DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION authstrap.data_event(${literal(events.prefix)}, ${literal(events.entity)}, ${literal(hidden)}, ${literal(events.organizationColumn)});`,
  ];
}
