import { fail, pass, skip, type Check } from './check.js';
import { generatedCollections, isBuiltin, shownPath } from './collections.js';
import { describe } from './probe-context.js';
import { requiredReferences, sampleBody } from './sample-body.js';

/** How long a change may take to reach a subscriber before the check fails. */
export const deliveryTimeoutMs = 5000;

/**
 * A change reaches a subscriber: Alice opens GET /realtime for an entity of her organization,
 * creates a record of it through the API, and its `.created` event must arrive within a few
 * seconds. The entity is the first tenant-scoped collection whose record verify can make from
 * its schema alone (no other record first) and whose changes the backend streams.
 */
export const realtime: Check = {
  id: 'realtime',
  title: 'A change reaches a subscriber',
  probe: {
    needs: 'http',
    async run(context) {
      const { http, people } = context;
      const alice = people.alice;
      if (!alice) return skip('needs a signed-up user');
      const document = await context.openApi();
      if (!document) return skip('the backend serves no OpenAPI document (/api/docs/openapi.json) to find its streams in');
      if (!document.paths['/realtime']) return skip('the backend has no live streams (GET /realtime): a project generated before them; `authstrap generate` adds them');
      const candidates = generatedCollections(document).filter(
        (collection) => collection.tenantScoped && !isBuiltin(collection) && !collection.parent && requiredReferences(collection.createBody).every((entity) => entity === 'User' || entity === 'Organization'),
      );
      const asAlice = { token: alice.token, organizationId: alice.organizationId };
      for (const collection of candidates) {
        const planned = sampleBody(collection.createBody, { unique: `${context.runId}-live`, reference: (entity) => (entity === 'User' ? alice.id : entity === 'Organization' ? alice.organizationId : undefined) });
        if ('problem' in planned) continue;
        const subscription = `/realtime?entity=${encodeURIComponent(collection.entity)}`;
        const stream = await http.stream(subscription, asAlice);
        try {
          // 400 naming `entity`: this one's changes are not streamed (events: false); try the next.
          if (stream.status === 400 && stream.body?.error?.details?.entity) continue;
          if (stream.status !== 200) return fail(`GET ${subscription} answered ${describe(stream)}`);
          const started = Date.now();
          const made = await http('POST', collection.path, { ...asAlice, body: planned.body });
          if (made.status !== 201) return fail(`POST ${shownPath(collection.path)} answered ${describe(made)} to ${JSON.stringify(planned.body)}`);
          const id = String(made.body?.data?.id);
          const created = await stream.next((message) => message.event.endsWith('.created') && JSON.parse(message.data).entityId === id, deliveryTimeoutMs);
          if (!created) return fail(`the ${collection.entity} created through POST ${shownPath(collection.path)} did not reach GET ${subscription} within ${deliveryTimeoutMs / 1000} s`);
          return pass(`${created.event} reached GET ${subscription} in ${Date.now() - started} ms`);
        } finally {
          stream.close();
        }
      }
      return skip(candidates.length === 0 ? 'no entity of your own whose record verify can make' : 'no entity whose changes are streamed (each says `events: false`, or verify cannot make its records)');
    },
  },
  // Without the generated routes mounted, no record can be made to stream.
  causes: ['module-wiring'],
  advice:
    "each instance reads new events from the database (authstrap.stream_events) and passes them to its streams: see the backend's log for 'realtime:' warnings, and behind a proxy, that it does not buffer text/event-stream (docs/deploy.md)",
};
