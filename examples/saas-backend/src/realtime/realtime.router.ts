import { Router, type Request } from 'express';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { Role } from '../auth/types.js';
import { resolveCaller, type CallerDeps } from '../generated/guards/auth.guard.js';
import { assertMayList } from '../generated/guards/rules.js';
import { scopeOf } from '../generated/guards/scope.guard.js';
import { checkMachineKeyNow } from '../generated/guards/tenant.guard.js';
import { streamEntities } from '../generated/realtime.js';
import { badRequest, forbidden, HttpError, tooManyRequests } from '../http/errors.js';
import { listParameters, parseListQuery, type ListQuery } from '../http/list-query.js';
import { isUuid } from '../http/validate.js';
import { hashMachineKey, presentedMachineKey } from '../http/session-token.js';
import type { Interest, Listener } from './stream-rules.js';
import type { Holder, Streams } from './streams.js';

/**
 * GET /realtime: a live stream (Server-Sent Events) of the changes to an organization's records
 * that the caller may read, exactly as its list routes would show them (docs/realtime.md).
 *
 *   /realtime?entity=Task                          every Task change
 *   /realtime?entity=Project,Task                  both
 *   /realtime?entity=Task&id=<id>                  one record
 *   /realtime?entity=Task&projectId=<id>&status=todo   what the list filters match
 *
 * Authenticated like every route (the session cookie, a Bearer session token, or a machine key
 * with `list` permission on each entity), in the organization of `x-organization-id` or the
 * session's active one. Every refusal comes before the stream starts, as an error envelope: 401,
 * 403 naming the entity, 400 naming the parameter, 429 past a limit. `Last-Event-ID` (the header,
 * or `?lastEventId=` where a client cannot send headers) resumes after the last event received.
 */
export function realtimeRouter(deps: CallerDeps & { db: Database; config: Pick<Config, 'realtime'>; streams: Streams }) {
  const router = Router();
  router.get('/', async (req, res) => {
    const { interests, resumeAfter } = parseSubscription(req);
    const { organizationId, listener, holder } = await subscriber(deps, req, res, interests);
    for (const interest of interests) {
      // 403 when the role may list none of these records, or filters by a field it may not read.
      if (interest.stream.rules) assertMayList(interest.stream.rules, listener.role, { filters: interest.filters, sort: interest.stream.spec.defaultSort } as ListQuery);
    }
    const { perUser, perOrganization, heartbeatMs } = deps.config.realtime;
    // A stream whose client went away without closing it is found at its next heartbeat: by then a place may be free.
    const placeFreeSeconds = Math.max(1, Math.ceil(heartbeatMs / 1000));
    if (deps.streams.heldBy(holder) >= perUser) {
      throw tooManyRequests(`You hold ${perUser} streams already (REALTIME_STREAMS_PER_USER): close one first`, placeFreeSeconds);
    }
    if (deps.streams.heldIn(organizationId) >= perOrganization) {
      throw tooManyRequests(`This organization holds ${perOrganization} streams already (REALTIME_STREAMS_PER_ORGANIZATION)`, placeFreeSeconds);
    }
    await deps.streams.open(res, { organizationId, listener, holder, interests, resumeAfter });
  });
  return router;
}

/** Who is subscribing: a machine key (checked for `list` on every entity asked for) or a member. */
async function subscriber(deps: CallerDeps & { db: Database }, req: Request, res: Parameters<typeof resolveCaller>[2], interests: Interest[]) {
  const key = presentedMachineKey(req);
  if (key !== undefined) {
    for (const interest of interests) await checkMachineKeyNow(deps, req, res, key, { entity: interest.entity, operation: 'list' });
    const caller = req.caller;
    if (caller?.kind !== 'key') throw new HttpError(401, 'UNAUTHORIZED', 'This machine key is not valid');
    const holder: Holder = { kind: 'key', hashedKey: hashMachineKey(key), keyId: caller.keyId };
    const listener: Listener = { userId: null, role: caller.role };
    return { organizationId: caller.organizationId, listener, holder };
  }
  await resolveCaller(deps, req, res);
  const caller = req.caller;
  if (caller?.kind !== 'user') throw forbidden('Streams are for the members of an organization and its machine keys, not the service key');
  const { organizationId, role } = scopeOf(req);
  const holder: Holder = { kind: 'session', sessionId: caller.session.id, userId: caller.user.id };
  const listener: Listener = { userId: caller.user.id, role: role as Role };
  return { organizationId, listener, holder };
}

/** The list parameters that have no meaning for a stream (it has no pages and no order but the commits'). */
const notForStreams = new Set<string>(listParameters);

/** What the query string asks for; every mistake is a 400 naming its parameter. */
export function parseSubscription(req: Pick<Request, 'query' | 'header'>): { interests: Interest[]; resumeAfter?: number } {
  const { entity, id, lastEventId, ...rest } = req.query as Record<string, unknown>;
  const named = (Array.isArray(entity) ? entity : [entity]).filter((value) => value !== undefined).flatMap((value) => String(value).split(','));
  const known = Object.keys(streamEntities);
  if (named.length === 0 || named.some((name) => name === '')) {
    throw badRequest('Say which entities to stream: ?entity=' + (known[0] ?? 'Name'), { entity: `One or more of: ${known.join(', ')}` });
  }
  for (const name of named) {
    if (!Object.hasOwn(streamEntities, name)) throw badRequest(`There is no stream of "${name}"`, { entity: `One or more of: ${known.join(', ')}` });
  }
  const entities = [...new Set(named)];
  for (const name of Object.keys(rest)) {
    if (notForStreams.has(name)) throw badRequest(`"${name}" does not apply to a stream`, { [name]: 'A stream sends every change as it commits, in commit order: leave it out' });
  }
  if ((Object.keys(rest).length > 0 || id !== undefined) && entities.length > 1) {
    throw badRequest('Filters and id apply to one entity: open one stream per entity to filter', { entity: 'Name one entity' });
  }
  const interests = entities.map((name): Interest => {
    const stream = streamEntities[name]!;
    return { entity: name, stream, filters: parseListQuery(rest, stream.spec).filters };
  });
  if (id !== undefined) {
    const integer = interests[0]!.stream.spec.fields.id?.type === 'integer';
    if (typeof id !== 'string' || !(integer ? /^\d{1,16}$/.test(id) : isUuid(id))) throw badRequest('Invalid value for "id"', { id: `Must be the id of a ${entities[0]}` });
    interests[0]!.recordId = id.toLowerCase();
  }
  const cursor = req.header('last-event-id') ?? (typeof lastEventId === 'string' ? lastEventId : undefined);
  if (cursor === undefined || cursor === '') return { interests };
  if (!/^\d{1,15}$/.test(cursor)) throw badRequest('Last-Event-ID must be the id of an event this stream sent', { 'last-event-id': 'A whole number, as the stream sent it' });
  return { interests, resumeAfter: Number(cursor) };
}
