import { identityTables } from './identity-tables.js';
import type { Table } from './table-types.js';

/**
 * Tables the backend's own machinery keeps beside the entities' tables, in projects with auth.
 * They are part of the database model, so `generate` creates them (and a project made before they
 * existed gets them in its next migration); they have no routes, no OpenAPI and no client.
 */

/**
 * The transactional outbox (src/outbox/outbox.ts): a message is written here in the same
 * transaction as the change that causes it, and delivered after commit by a worker in every
 * instance. `channel` says who delivers it ('mail'); `payload` is what that channel needs.
 */
export const outboxTable: Table = {
  name: 'authstrap_outbox',
  columns: [
    { name: 'id', type: 'uuid', nullable: false, default: 'gen_random_uuid()', primaryKey: true },
    { name: 'channel', type: 'text', nullable: false },
    { name: 'payload', type: 'jsonb', nullable: false },
    { name: 'status', type: 'text', nullable: false, default: "'pending'" },
    { name: 'attempts', type: 'integer', nullable: false, default: '0' },
    { name: 'nextAttemptAt', type: 'timestamptz', nullable: false, default: 'now()' },
    { name: 'lockedUntil', type: 'timestamptz', nullable: true },
    { name: 'lastError', type: 'text', nullable: true },
    { name: 'sentAt', type: 'timestamptz', nullable: true },
    { name: 'createdAt', type: 'timestamptz', nullable: false, default: 'now()' },
  ],
  constraints: [{ name: 'authstrap_outbox_status_check', definition: "CHECK (\"status\" IN ('pending', 'sent', 'failed'))" }],
  // The workers' one question: which pending messages are due?
  indexes: [{ name: 'authstrap_outbox_status_nextAttemptAt_idx', columns: ['status', 'nextAttemptAt'] }],
  dependsOn: [],
};

/**
 * The event log (src/events/events.ts): what happened, who did it (`actorType`, `actorId`), in
 * which organization, from which request. One row per event, written in the transaction of its
 * change by `authstrap.record_event` (below), never by a request's own statement: requests may
 * read the rows their organization's owners and admins, or their own user, may see, and may
 * neither write, change nor delete one. Kept as long as EVENTS_RETENTION_DAYS says.
 */
export const eventTable: Table = {
  name: 'authstrap_event',
  columns: [
    { name: 'id', type: 'uuid', nullable: false, default: 'gen_random_uuid()', primaryKey: true },
    { name: 'type', type: 'text', nullable: false },
    { name: 'organizationId', type: 'uuid', nullable: true },
    { name: 'userId', type: 'uuid', nullable: true },
    { name: 'actorType', type: 'text', nullable: false },
    { name: 'actorId', type: 'text', nullable: true },
    { name: 'entity', type: 'text', nullable: true },
    { name: 'entityId', type: 'text', nullable: true },
    { name: 'data', type: 'jsonb', nullable: false, default: "'{}'::jsonb" },
    { name: 'requestId', type: 'text', nullable: true },
    { name: 'ipAddress', type: 'text', nullable: true },
    { name: 'userAgent', type: 'text', nullable: true },
    { name: 'createdAt', type: 'timestamptz', nullable: false, default: 'clock_timestamp()' },
    // A data event's place in the stream, taken at its commit (event-sql.ts: positionClaimKey); null for the others.
    { name: 'position', type: 'bigint', nullable: true },
  ],
  constraints: [],
  // Every write of a tenant table writes an event, so each index here is paid on every write:
  // only what the reads need. The audit log lists an organization's events newest first, a user's
  // security events likewise (the data events, most of the table, are about no user and stay out
  // of that index); retention deletes by age, hourly, which a BRIN index serves for a fraction of
  // a B-tree's cost, since rows are written in the order of their "createdAt".
  indexes: [
    { name: 'authstrap_event_organizationId_createdAt_idx', columns: ['organizationId', 'createdAt'], where: '"organizationId" IS NOT NULL' },
    { name: 'authstrap_event_userId_createdAt_idx', columns: ['userId', 'createdAt'], where: '"userId" IS NOT NULL' },
    { name: 'authstrap_event_createdAt_idx', columns: ['createdAt'], method: 'brin' },
    // The streams read every event after a position (src/realtime/).
    { name: 'authstrap_event_position_idx', columns: ['position'], unique: true, where: '"position" IS NOT NULL' },
  ],
  dependsOn: [],
  rowSecurity: {
    policies: [
      {
        name: 'authstrap_select',
        command: 'SELECT',
        using: `("organizationId" = authstrap.organization_id() AND authstrap.role() IN ('owner', 'admin')) OR "userId" = authstrap.user_id()`,
      },
      { name: 'authstrap_maintenance', command: 'ALL', to: 'CURRENT_USER', using: 'authstrap.maintenance()', withCheck: 'authstrap.maintenance()' },
    ],
  },
};

/**
 * An organization's webhook endpoints (src/events/webhooks.ts): where its events are sent, which
 * ones, signed with which secret. Reached in the organization's scope only; only its owners and
 * admins add or remove one (the routes check the same first).
 */
export const webhookEndpointTable: Table = {
  name: 'authstrap_webhook_endpoint',
  columns: [
    { name: 'id', type: 'uuid', nullable: false, default: 'gen_random_uuid()', primaryKey: true },
    { name: 'organizationId', type: 'uuid', nullable: false },
    { name: 'url', type: 'text', nullable: false },
    { name: 'description', type: 'text', nullable: true },
    { name: 'eventTypes', type: 'text[]', nullable: false, default: "'{}'" },
    { name: 'secret', type: 'text', nullable: false },
    // After a rotation the secret before it signs too, until this time (the receiver's grace to switch).
    { name: 'previousSecret', type: 'text', nullable: true },
    { name: 'previousSecretExpiresAt', type: 'timestamptz', nullable: true },
    { name: 'enabled', type: 'boolean', nullable: false, default: 'true' },
    { name: 'failureCount', type: 'integer', nullable: false, default: '0' },
    { name: 'disabledReason', type: 'text', nullable: true },
    { name: 'createdAt', type: 'timestamptz', nullable: false, default: 'now()' },
    { name: 'updatedAt', type: 'timestamptz', nullable: false, default: 'now()' },
  ],
  constraints: [
    { name: 'authstrap_webhook_endpoint_organizationId_fkey', definition: 'FOREIGN KEY ("organizationId") REFERENCES "Organization" ("id") ON DELETE CASCADE' },
  ],
  indexes: [{ name: 'authstrap_webhook_endpoint_organizationId_idx', columns: ['organizationId'] }],
  dependsOn: ['Organization'],
  rowSecurity: {
    policies: [
      { name: 'authstrap_select', command: 'SELECT', using: '"organizationId" = authstrap.organization_id()' },
      { name: 'authstrap_insert', command: 'INSERT', withCheck: `"organizationId" = authstrap.organization_id() AND authstrap.role() IN ('owner', 'admin')` },
      // The delivery worker, in the organization's scope without a role, counts failures and disables.
      { name: 'authstrap_update', command: 'UPDATE', using: '"organizationId" = authstrap.organization_id()', withCheck: '"organizationId" = authstrap.organization_id()' },
      { name: 'authstrap_delete', command: 'DELETE', using: `"organizationId" = authstrap.organization_id() AND authstrap.role() IN ('owner', 'admin')` },
      { name: 'authstrap_maintenance', command: 'ALL', to: 'CURRENT_USER', using: 'authstrap.maintenance()', withCheck: 'authstrap.maintenance()' },
    ],
  },
};

/** Who a request acts for, as an idempotency key's owner: the signed-in user, or the machine key. */
const idempotencyCaller = `COALESCE('user:' || authstrap.user_id(), 'key:' || NULLIF(current_setting('authstrap.key_id', true), ''))`;
/**
 * A key is its caller's in their organization; or, in no organization ("organizationId" null),
 * the trusted server's (caller 'service', reached only by a transaction that says it is the
 * service's, `authstrap.service()`), a signed-in user's outside any organization (caller
 * 'user:<id>', reached only as that user), or an anonymous caller's (caller 'anonymous', reached
 * only by a transaction that says it is anonymous). The kinds never meet.
 */
const ownKey =
  `("organizationId" = authstrap.organization_id() AND "caller" = ${idempotencyCaller})` +
  ` OR ("organizationId" IS NULL AND "caller" = 'service' AND authstrap.service())` +
  ` OR ("organizationId" IS NULL AND "caller" = 'user:' || authstrap.user_id())` +
  ` OR ("organizationId" IS NULL AND "caller" = 'anonymous' AND current_setting('authstrap.anonymous', true) = 'on')`;

/**
 * A write's answer kept for its repeats (src/idempotency/): the `Idempotency-Key` a client sent,
 * whose it is (the organization and the caller, or the service key: keys of two callers never
 * meet), what the request was (`fingerprint`: its method, path and body), and the answer, written
 * in the write's own transaction. A caller reaches only its own keys; expired ones are deleted
 * hourly by `authstrap.prune_idempotency_keys`.
 */
export const idempotencyKeyTable: Table = {
  name: 'authstrap_idempotency_key',
  columns: [
    { name: 'id', type: 'uuid', nullable: false, default: 'gen_random_uuid()', primaryKey: true },
    // Null for the service key's keys.
    { name: 'organizationId', type: 'uuid', nullable: true },
    { name: 'caller', type: 'text', nullable: false },
    { name: 'key', type: 'text', nullable: false },
    { name: 'fingerprint', type: 'text', nullable: false },
    { name: 'status', type: 'integer', nullable: true },
    { name: 'body', type: 'text', nullable: true },
    { name: 'createdAt', type: 'timestamptz', nullable: false, default: 'now()' },
    { name: 'expiresAt', type: 'timestamptz', nullable: false },
  ],
  constraints: [
    { name: 'authstrap_idempotency_key_organizationId_fkey', definition: 'FOREIGN KEY ("organizationId") REFERENCES "Organization" ("id") ON DELETE CASCADE' },
  ],
  indexes: [
    // A repeat finds its key here; a second request with the same key waits on this index entry
    // until the first one's transaction ends (src/idempotency/).
    { name: 'authstrap_idempotency_key_caller_key_idx', columns: ['organizationId', 'caller', 'key'], unique: true },
    // The same for the keys without an organization (a null is never equal to another): the service
    // key's, a user's outside any organization, an anonymous caller's; their caller tells them apart.
    { name: 'authstrap_idempotency_key_service_key_idx', columns: ['caller', 'key'], unique: true, where: '"organizationId" IS NULL' },
    // The hourly prune deletes by age; rows are written in the order of their expiry.
    { name: 'authstrap_idempotency_key_expiresAt_idx', columns: ['expiresAt'], method: 'brin' },
  ],
  dependsOn: ['Organization'],
  rowSecurity: {
    policies: [
      { name: 'authstrap_select', command: 'SELECT', using: ownKey },
      { name: 'authstrap_insert', command: 'INSERT', withCheck: ownKey },
      { name: 'authstrap_update', command: 'UPDATE', using: ownKey, withCheck: ownKey },
      { name: 'authstrap_delete', command: 'DELETE', using: ownKey },
      { name: 'authstrap_maintenance', command: 'ALL', to: 'CURRENT_USER', using: 'authstrap.maintenance()', withCheck: 'authstrap.maintenance()' },
    ],
  },
};

/** Deletes the idempotency keys past their expiry, which a request may do only for its own; returns how many. */
const pruneIdempotencyKeys = `CREATE OR REPLACE FUNCTION authstrap.prune_idempotency_keys() RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
  pruned integer;
BEGIN
  PERFORM set_config('authstrap.maintenance', 'on', true);
  DELETE FROM "authstrap_idempotency_key" WHERE "expiresAt" < now();
  GET DIAGNOSTICS pruned = ROW_COUNT;
  PERFORM set_config('authstrap.maintenance', was_maintenance, true);
  RETURN pruned;
END
$$;`;

export const systemFunctions = [{ name: 'prune_idempotency_keys', definition: pruneIdempotencyKeys }];

/**
 * The platform's operators (src/operator/): the people who run the product, above every
 * organization. Granted from the command line (`authstrap operator grant <email>`, as the tables'
 * owner) and, later, by another operator through an audited function; never by a request of its
 * own. A user may read whether they are one (their own row); nobody else's.
 */
export const operatorTable: Table = {
  name: 'authstrap_operator',
  columns: [
    { name: 'userId', type: 'uuid', nullable: false, primaryKey: true },
    // Who granted it: 'command line', or the granting operator's user id.
    { name: 'grantedBy', type: 'text', nullable: false },
    { name: 'grantedAt', type: 'timestamptz', nullable: false, default: 'now()' },
  ],
  constraints: [{ name: 'authstrap_operator_userId_fkey', definition: 'FOREIGN KEY ("userId") REFERENCES "User" ("id") ON DELETE CASCADE' }],
  indexes: [],
  dependsOn: ['User'],
  rowSecurity: {
    policies: [
      { name: 'authstrap_select', command: 'SELECT', using: '"userId" = authstrap.user_id()' },
      { name: 'authstrap_maintenance', command: 'ALL', to: 'CURRENT_USER', using: 'authstrap.maintenance()', withCheck: 'authstrap.maintenance()' },
    ],
  },
};

/**
 * Users the platform's operators banned (src/operator/; docs/operator.md): at most one ban per
 * user, with why, until when (null: until an operator lifts it), by whom and since when. The
 * sign-in rule refuses a user whose ban is in force (`BANNED`, on every method and both sign-in
 * paths), and a machine key they made stops (db/scope.ts, creatorAllowed). Kept apart from
 * Better Auth's admin-plugin columns on `User`, so that it works in every project; the rule
 * honours those too. No request reads or writes it: only the operators' functions
 * (`authstrap.operator_ban_user`, `operator_unban_user`), the rule and `authstrap.key_creator_refusal`,
 * all as the tables' owner.
 */
export const userBanTable: Table = {
  name: 'authstrap_user_ban',
  columns: [
    { name: 'userId', type: 'uuid', nullable: false, primaryKey: true },
    { name: 'reason', type: 'text', nullable: false },
    // Past this time the ban no longer refuses anything (the row stays until a new ban or an unban).
    { name: 'expiresAt', type: 'timestamptz', nullable: true },
    // The operator who banned; null once their account is deleted (the event keeps who it was).
    { name: 'bannedBy', type: 'uuid', nullable: true },
    { name: 'createdAt', type: 'timestamptz', nullable: false, default: 'now()' },
  ],
  constraints: [
    { name: 'authstrap_user_ban_userId_fkey', definition: 'FOREIGN KEY ("userId") REFERENCES "User" ("id") ON DELETE CASCADE' },
    { name: 'authstrap_user_ban_bannedBy_fkey', definition: 'FOREIGN KEY ("bannedBy") REFERENCES "User" ("id") ON DELETE SET NULL' },
  ],
  indexes: [],
  dependsOn: ['User'],
  rowSecurity: {
    policies: [{ name: 'authstrap_maintenance', command: 'ALL', to: 'CURRENT_USER', using: 'authstrap.maintenance()', withCheck: 'authstrap.maintenance()' }],
  },
};

/**
 * The platform's activity per day (UTC) for the operators' overview (src/operator/overview.ts):
 * sign-ups, active users (who acted or signed in: a distinct acting user of an event) and new
 * organizations. Counting active users reads every event of a day, too slow for a year's chart on
 * each request; a day that is over no longer changes, so `authstrap.operator_overview` counts each
 * past day once, the first time an overview covers it, and keeps it here (today is counted live).
 * No request reads or writes it: only that function, as the tables' owner.
 */
export const activityDayTable: Table = {
  name: 'authstrap_activity_day',
  columns: [
    { name: 'day', type: 'date', nullable: false, primaryKey: true },
    { name: 'signUps', type: 'integer', nullable: false },
    { name: 'activeUsers', type: 'integer', nullable: false },
    { name: 'newOrganizations', type: 'integer', nullable: false },
    { name: 'countedAt', type: 'timestamptz', nullable: false, default: 'now()' },
  ],
  constraints: [],
  indexes: [],
  dependsOn: [],
  rowSecurity: {
    policies: [{ name: 'authstrap_maintenance', command: 'ALL', to: 'CURRENT_USER', using: 'authstrap.maintenance()', withCheck: 'authstrap.maintenance()' }],
  },
};

// Enterprise identity's tables (single sign-on, domains, SCIM, suspensions) follow the engine's own.
export const systemTables: Table[] = [outboxTable, eventTable, webhookEndpointTable, idempotencyKeyTable, operatorTable, userBanTable, activityDayTable, ...identityTables];
