import { fail, pass, skip, warn, type Check, type Outcome } from './check.js';
import { generatedCollections, isBuiltin, shownPath, withParent, type Collection } from './collections.js';
import { describe, type Person, type ProbeContext } from './probe-context.js';
import { requiredReferences, sampleBody } from './sample-body.js';

/**
 * Two fresh organizations (Alice's and Bob's) cannot see or change each other's rows: users, and a
 * record of every tenant-scoped collection the backend's OpenAPI document lists. Alice creates
 * each record with a body made from the collection's schema, the records it references first
 * (nested collections under her parent record); Bob, in his organization, must not list it, read
 * it, delete it, or make a record of his own that points at hers.
 */
export const tenantIsolation: Check = {
  id: 'tenant-isolation',
  title: 'Organizations cannot see each other',
  probe: {
    needs: 'http',
    async run(context) {
      const { alice, bob } = context.people;
      if (!alice || !bob) return skip('needs two signed-up users');
      const users = await usersIsolated(context, alice, bob);
      if (users) return fail(users);
      const document = await context.openApi();
      if (!document) return warn('checked /Users; no other collection: the backend serves no OpenAPI document (/api/docs/openapi.json) listing them');
      const collections = generatedCollections(document).filter((collection) => collection.tenantScoped && !isBuiltin(collection));
      return collectionsIsolated(context, alice, bob, collections);
    },
  },
  // A leak needs both walls down: a generated repository edited by hand (module-wiring re-renders
  // it) or records without ids, and row-level security off or opened up.
  causes: ['module-wiring', 'id-field', 'row-level-security'],
  advice: 'every statement of a tenant-scoped entity must filter by organizationId, and its table keep row-level security: check the code of the collection named, the extensions that serve it, and the row-level-security check',
};

async function usersIsolated({ http }: ProbeContext, alice: Person, bob: Person): Promise<string | undefined> {
  const asBob = { token: bob.token, organizationId: bob.organizationId };
  const users = await http('GET', '/Users?limit=100', asBob);
  if (users.body?.data?.some?.((user: { id: string }) => user.id === alice.id)) return "GET /Users in Bob's organization lists Alice";
  if ((await http('GET', `/Users/${alice.id}`, asBob)).status !== 404) return "Bob can read Alice's user by id";
  const intruding = await http('GET', '/Users', { token: bob.token, organizationId: alice.organizationId });
  if (intruding.status !== 403) return `naming Alice's organization answered ${intruding.status}, not 403`;
  return undefined;
}

/** Every collection in an order where what it references exists first; each checked once. */
async function collectionsIsolated(context: ProbeContext, alice: Person, bob: Person, collections: Collection[]): Promise<Outcome> {
  // Alice's record of each entity, which later bodies and nested paths point at.
  const records = new Map<string, string | number>([
    ['User', alice.id],
    ['Organization', alice.organizationId],
  ]);
  const needs = (collection: Collection) => [...requiredReferences(collection.createBody), ...(collection.parent ? [collection.parent.entity] : [])];
  const checked = ['/Users'];
  const notChecked: string[] = [];
  let pending = [...collections];
  while (pending.length > 0) {
    const ready = pending.filter((collection) => needs(collection).every((entity) => records.has(entity)));
    if (ready.length === 0) break;
    for (const collection of ready) {
      const outcome = await collectionIsolated(context, alice, bob, collection, records);
      if ('failure' in outcome) return fail(outcome.failure);
      if ('problem' in outcome) notChecked.push(`${shownPath(collection.path)} (${outcome.problem})`);
      else checked.push(shownPath(collection.path));
    }
    pending = pending.filter((collection) => !ready.includes(collection));
  }
  for (const collection of pending) {
    const missing = needs(collection).filter((entity) => !records.has(entity));
    notChecked.push(`${shownPath(collection.path)} (needs a ${missing.join(' and a ')} first, which verify could not make)`);
  }
  if (notChecked.length > 0) return warn(`checked ${checked.join(', ')}; not checked: ${notChecked.join('; ')}`);
  return pass(`checked ${checked.join(', ')}`);
}

type CollectionOutcome = { ok: true } | { failure: string } | { problem: string };

async function collectionIsolated(context: ProbeContext, alice: Person, bob: Person, collection: Collection, records: Map<string, string | number>): Promise<CollectionOutcome> {
  const { http } = context;
  const asAlice = { token: alice.token, organizationId: alice.organizationId };
  const asBob = { token: bob.token, organizationId: bob.organizationId };
  const path = collection.parent ? withParent(collection, String(records.get(collection.parent.entity))) : collection.path;
  const shown = shownPath(collection.path);
  const body = (suffix: string) => sampleBody(collection.createBody, { unique: `${context.runId}-${records.size}${suffix}`, reference: (entity) => records.get(entity) });

  const planned = body('a');
  if ('problem' in planned) return { problem: planned.problem };
  const made = await http('POST', path, { ...asAlice, body: planned.body });
  if (made.status !== 201) return { failure: `POST ${shown} in Alice's organization answered ${describe(made)} to ${JSON.stringify(planned.body)}` };
  const id = made.body?.data?.id;
  if (typeof id !== 'string' && typeof id !== 'number') return { failure: `POST ${shown} answered 201 without the record's id` };
  if (!records.has(collection.entity)) records.set(collection.entity, id);

  // Bob lists the collection (a nested one under Alice's parent record: not his, so 404).
  const listed = await http('GET', `${path}?limit=100`, asBob);
  const lists = listed.status === 200 && Array.isArray(listed.body?.data) && listed.body.data.some((row: { id: unknown }) => row.id === id);
  if (lists) return { failure: `GET ${shown} in Bob's organization lists Alice's record` };
  if (collection.parent ? listed.status !== 404 && listed.status !== 200 : listed.status !== 200) {
    return { failure: `GET ${shown} in Bob's organization answered ${describe(listed)}` };
  }
  if (collection.itemMethods.includes('get')) {
    const read = await http('GET', `${path}/${id}`, asBob);
    if (read.status !== 404) return { failure: `GET ${shown}/:id of Alice's record in Bob's organization answered ${read.status}, not 404` };
  }
  if (collection.itemMethods.includes('delete')) {
    const removed = await http('DELETE', `${path}/${id}`, asBob);
    if (removed.status !== 404) return { failure: `DELETE ${shown}/:id of Alice's record in Bob's organization answered ${removed.status}, not 404` };
  }
  // A record of Bob's that points at Alice's (her parent, or the records its body references).
  const pointsAtAlice = collection.parent !== undefined || requiredReferences(collection.createBody).some((entity) => entity !== 'User' && entity !== 'Organization');
  if (pointsAtAlice) {
    const own = body('b');
    if ('problem' in own) return { problem: own.problem };
    const intruding = await http('POST', path, { ...asBob, body: own.body });
    if (intruding.status >= 200 && intruding.status < 300) return { failure: `POST ${shown} in Bob's organization made a record pointing at Alice's (${intruding.status})` };
  }
  return { ok: true };
}
