import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { streamEntities } from '../generated/realtime.js';

/**
 * GET /realtime in the OpenAPI document: its query parameters, and the messages of the stream
 * (text/event-stream, each message's `data` one StreamEvent). docs/realtime.md says more.
 */

const StreamEvent = z
  .object({
    id: z.uuid().meta({ description: 'The event id (the same in the audit log and in webhooks)' }),
    type: z.string().meta({ description: 'As the SSE `event` field: `task.created`, `task.updated`, `task.deleted`, ...' }),
    organizationId: z.uuid(),
    actorType: z.enum(['user', 'machine_key', 'service', 'system']),
    actorId: z.string().nullable(),
    entity: z.string(),
    entityId: z.string().nullable(),
    createdAt: z.iso.datetime(),
    data: z.object({
      record: z.record(z.string(), z.unknown()).meta({ description: 'The record as the list route shows it to this subscriber (fields it may not read left out); for a deletion, as it was' }),
      changedFields: z.array(z.string()).optional().meta({ description: 'On `.updated`: the fields whose value changed (those it may read)' }),
      previous: z.record(z.string(), z.unknown()).optional().meta({ description: "On `.updated`: the changed fields' values before" }),
    }),
  })
  .meta({
    id: 'StreamEvent',
    description:
      'The `data` of one stream message. The message\'s `id` is its position, the cursor to resume from (Last-Event-ID); its `event` the type. ' +
      'Besides: `event: reset` (the Last-Event-ID is older than the events kept: reload), `event: end` (the stream ends: data.code says why, ' +
      'NOT_A_MEMBER, SESSION_ENDED, KEY_REVOKED, ORGANIZATION_DELETED, TOO_SLOW or SHUTTING_DOWN), and comment lines every REALTIME_HEARTBEAT_MS.',
  });

export function registerRealtimeRoutes(registry: OpenAPIRegistry): void {
  const entities = Object.keys(streamEntities);
  registry.registerPath({
    method: 'get',
    path: '/realtime',
    operationId: 'streamChanges',
    tags: ['realtime'],
    summary: "A live stream (Server-Sent Events) of the changes to the organization's records the caller may read",
    description:
      'Each change is sent when its transaction commits, in commit order, to exactly those who could read its record through the list route then. ' +
      'Any other query parameter is a filter of the entity\'s list route (`?entity=Task&status=todo`, `points[gte]=3`), for one entity. ' +
      'Reconnect with the `Last-Event-ID` header (or `?lastEventId=`) to receive every event since, once.',
    security: [{ bearer: [] }, { sessionCookie: [] }, { machineKey: [] }],
    request: {
      query: z.object({
        entity: z.string().meta({ description: `One or more of ${entities.join(', ') || '(none)'}, comma-separated`, example: entities[0] ?? 'Project' }),
        id: z.string().optional().meta({ description: 'Only the changes of this record (one entity)' }),
        lastEventId: z.string().regex(/^\d+$/).optional().meta({ description: 'As the Last-Event-ID header, for clients that cannot send headers' }),
      }),
      headers: z.object({
        'x-organization-id': z.uuid().optional(),
        'last-event-id': z.string().regex(/^\d+$/).optional().meta({ description: 'The id of the last message received: the stream resumes after it' }),
      }),
    },
    responses: {
      200: { description: 'The stream; each message\'s data is a StreamEvent', content: { 'text/event-stream': { schema: StreamEvent } } },
      400: { description: 'An entity without a stream, a filter or parameter that is not valid for it, or a malformed Last-Event-ID (details names it)' },
      403: { description: 'Not a member of the organization, a role that may list none of these records, or a machine key without `list` on one of them (the message names it)' },
      429: { description: 'Past REALTIME_STREAMS_PER_USER or REALTIME_STREAMS_PER_ORGANIZATION, or a rate limit' },
    },
  });
}
