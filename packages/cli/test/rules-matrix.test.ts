import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminUrl } from './support/check-cycle.js';
import { createResources } from './support/example-copies.js';
import { addToOrganization, client, prepareScopedCopy, signUp, type Person } from './support/scoped-copies.js';
import { openStream } from '../../../examples/saas-backend/test/support/sse.js';

/**
 * Rules in the schema, enforced: a backend generated from the schema below, and every role x
 * operation x entity tried through HTTP, the answer compared with what the rules say (read here,
 * by the test, not by the generated code), and every refused request checked to have changed
 * nothing in the database. On PostgreSQL and on the embedded database.
 */

type Role = 'owner' | 'admin' | 'member';
type Operation = 'list' | 'read' | 'create' | 'update' | 'delete';
/** A rule as the schema writes it: roles, and row conditions naming fields that must hold the caller. */
type Rule = (Role | Record<string, 'caller'>)[];

const rules: Record<string, Partial<Record<Operation, Rule>>> = {
  Invoice: {
    create: ['owner', 'admin'],
    update: ['owner', 'admin', { authorId: 'caller' }],
    delete: ['owner'],
  },
  Note: {
    read: ['owner', { authorId: 'caller' }],
    create: [{ authorId: 'caller' }],
    update: [{ authorId: 'caller' }],
    delete: ['owner', { authorId: 'caller' }],
  },
  // Nested under Invoice: /Invoices/:invoiceId/invoice-lines.
  InvoiceLine: {
    create: ['owner', 'admin'],
    delete: ['admin'],
  },
  // No rules: every member may do everything.
  Project: {},
};

/** Who may write or read single fields. */
const fieldRules = {
  Invoice: {
    amountCents: { write: ['owner', 'admin'] as Role[] },
    internalNote: { read: ['owner', 'admin'] as Role[], write: ['owner', 'admin'] as Role[] },
  },
};

const schema = `export default {
  auth: true,
  entities: {
    Project: { fields: { name: { type: 'string', minLength: 2 } } },
    Invoice: {
      fields: {
        title: { type: 'string', minLength: 1 },
        amountCents: { type: 'integer', default: 0 },
        authorId: { type: 'uuid', references: 'User', nullable: true },
        internalNote: { type: 'text', nullable: true },
      },
      rules: ${JSON.stringify({ ...rules.Invoice, fields: fieldRules.Invoice })},
    },
    InvoiceLine: {
      parent: 'invoiceId',
      fields: {
        invoiceId: { type: 'uuid', references: 'Invoice', onDelete: 'cascade' },
        label: { type: 'string' },
      },
      rules: ${JSON.stringify(rules.InvoiceLine)},
    },
    Note: {
      fields: { body: { type: 'text' }, authorId: { type: 'uuid', references: 'User' } },
      rules: ${JSON.stringify(rules.Note)},
    },
  },
};
`;

const roles: Role[] = ['owner', 'admin', 'member'];

/** What the rules say: an operation left out is every member's; list follows read. */
function ruleOf(entity: string, operation: Operation): Rule {
  const entityRules = rules[entity]!;
  return entityRules[operation] ?? (operation === 'list' ? entityRules.read : undefined) ?? roles;
}
/** Whether `role` (user `userId`) may `operation` a row with these values, by the rules. */
function allowed(entity: string, operation: Operation, role: Role, userId: string, row: Record<string, unknown>): boolean {
  return ruleOf(entity, operation).some((entry) => (typeof entry === 'string' ? entry === role : Object.keys(entry).every((field) => row[field] === userId)));
}
/** Whether some row could let `role` do `operation`: its role is named, or a row condition is. */
const mayAtAll = (entity: string, operation: Operation, role: Role) => ruleOf(entity, operation).some((entry) => typeof entry !== 'string' || entry === role);
/**
 * The answer to a refused request: 403 when the role may never do it, or (for a change) may see
 * the row but not change it; 404 when the row is one it cannot see, as if it were not there.
 */
const refusal = (entity: string, operation: Operation, role: Role, seen: boolean) => (!mayAtAll(entity, operation, role) || seen ? 403 : 404);

const paths: Record<string, string> = { Project: '/Projects', Invoice: '/Invoices', Note: '/Notes', InvoiceLine: '/invoice-lines' };

describe.each(['postgres', 'embedded'] as const)('rules from the schema, every role x operation x entity, %s database', (kind) => {
  const resources = createResources({ adminUrl, name: 'rules', backendEnv: { REQUIRE_EMAIL_VERIFICATION: 'false' } });
  let url: string;
  let serviceApiKey: string;
  const people = {} as Record<Role, Person>;
  let organizationId: string;
  let outsider: Person;
  const as = (role: Role) => client(url, people[role].token, organizationId);
  const rowsOf = async (table: string) => (await client(url, serviceApiKey)('GET', `/test/rows/${table}`)).body.rows as Record<string, unknown>[];

  beforeAll(async () => {
    if (kind === 'postgres' && !adminUrl) return;
    const dir = resources.copyOfExample('ALLOWED_ORIGINS=http://localhost:5173\n');
    prepareScopedCopy(dir, schema);
    const backend = await resources.startBackend(dir, kind === 'embedded' ? 'embedded' : undefined);
    ({ url, serviceApiKey } = backend);
    people.owner = await signUp(url, 'owner@example.com');
    organizationId = people.owner.organizationId;
    for (const role of ['admin', 'member'] as const) {
      people[role] = await signUp(url, `${role}@example.com`);
      await addToOrganization(url, serviceApiKey, people[role], organizationId, role);
    }
    outsider = await signUp(url, 'outsider@example.com');
  }, 180_000);
  afterAll(() => resources.cleanup());

  /**
   * One record per role as its author (made by the owner, who may write any field), so that each
   * row condition is tried on the caller's own row and on somebody else's.
   */
  async function recordsByAuthor(entity: 'Invoice' | 'Note'): Promise<Record<Role, Record<string, unknown>>> {
    const made = {} as Record<Role, Record<string, unknown>>;
    for (const author of roles) {
      // Notes are made by their author (the only way the rules allow); invoices by the owner.
      const maker = entity === 'Note' ? author : 'owner';
      const body = entity === 'Note' ? { body: `by ${author}`, authorId: people[author].id } : { title: `by ${author}`, authorId: people[author].id, internalNote: 'secret' };
      const created = await as(maker)('POST', paths[entity]!, body);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      made[author] = created.body.data;
    }
    return made;
  }

  it.runIf(kind === 'embedded' || adminUrl)('lets each role list, read, create, update and delete exactly as the rules say, and a refusal changes nothing', async () => {
    for (const entity of ['Project', 'Invoice', 'Note'] as const) {
      for (const role of roles) {
        const me = people[role];
        const rows = entity === 'Project' ? { owner: (await as('owner')('POST', '/Projects', { name: `P ${role}` })).body.data } : await recordsByAuthor(entity);
        const targets = entity === 'Project' ? [rows.owner as Record<string, unknown>] : roles.map((author) => (rows as Record<Role, Record<string, unknown>>)[author]);

        // list: the rows the role may see, and no others
        const listed = await as(role)('GET', `${paths[entity]}?limit=100`);
        expect(listed.status, `${role} lists ${entity}`).toBe(mayAtAll(entity, 'list', role) ? 200 : 403);
        const visibleIds = new Set((listed.body.data ?? []).map((row: { id: string }) => row.id));
        for (const target of targets) {
          expect(visibleIds.has(target.id), `${role} lists ${entity} ${target.id}`).toBe(allowed(entity, 'list', role, me.id, target));
        }

        for (const target of targets) {
          const seen = allowed(entity, 'read', role, me.id, target);
          const read = await as(role)('GET', `${paths[entity]}/${target.id}`);
          expect(read.status, `${role} reads ${entity} by ${target.authorId}`).toBe(seen ? 200 : mayAtAll(entity, 'read', role) ? 404 : 403);

          // update: allowed, refused (403 when the row is visible, 404 when not), nothing changed when refused
          const before = await rowsOf(entity);
          const patch = entity === 'Note' ? { body: `edited by ${role}` } : entity === 'Invoice' ? { title: `edited by ${role}` } : { name: `edited by ${role}` };
          const updated = await as(role)('PATCH', `${paths[entity]}/${target.id}`, patch);
          const mayUpdate = allowed(entity, 'update', role, me.id, target);
          expect(updated.status, `${role} updates ${entity} by ${target.authorId}`).toBe(mayUpdate ? 200 : refusal(entity, 'update', role, seen));
          if (!mayUpdate) expect(await rowsOf(entity), `${role}'s refused update`).toEqual(before);
        }

        // create: as the rules say, with the caller as author, and never as somebody else when the rule asks for the caller
        const before = await rowsOf(entity);
        const own = entity === 'Note' ? { body: 'mine', authorId: me.id } : entity === 'Invoice' ? { title: 'mine', authorId: me.id } : { name: `mine ${role}` };
        const created = await as(role)('POST', paths[entity]!, own);
        const mayCreate = allowed(entity, 'create', role, me.id, own);
        expect(created.status, `${role} creates ${entity}`).toBe(mayCreate ? 201 : 403);
        if (!mayCreate) expect(await rowsOf(entity), `${role}'s refused create`).toEqual(before);
        if (entity === 'Note') {
          const other = people[role === 'owner' ? 'member' : 'owner'];
          const forged = await as(role)('POST', paths[entity]!, { body: 'forged', authorId: other.id });
          expect(forged.status, `${role} creates a Note as ${other.email}`).toBe(403);
        }

        // delete: allowed, refused (403 when visible, 404 when not), nothing deleted when refused
        for (const target of targets) {
          const exists = (await rowsOf(entity)).some((row) => row.id === target.id);
          if (!exists) continue;
          const beforeDelete = await rowsOf(entity);
          const deleted = await as(role)('DELETE', `${paths[entity]}/${target.id}`);
          const mayDelete = allowed(entity, 'delete', role, me.id, target);
          const seen = allowed(entity, 'read', role, me.id, target);
          expect(deleted.status, `${role} deletes ${entity} by ${target.authorId}`).toBe(mayDelete ? 204 : refusal(entity, 'delete', role, seen));
          if (!mayDelete) expect(await rowsOf(entity), `${role}'s refused delete`).toEqual(beforeDelete);
        }
      }
    }
  });

  it.runIf(kind === 'embedded' || adminUrl)('holds the rules of a nested entity on its nested and its own routes', async () => {
    const invoice = (await as('owner')('POST', '/Invoices', { title: 'With lines' })).body.data;
    for (const role of roles) {
      const before = await rowsOf('InvoiceLine');
      const created = await as(role)('POST', `/Invoices/${invoice.id}/invoice-lines`, { label: `by ${role}` });
      const mayCreate = allowed('InvoiceLine', 'create', role, people[role].id, {});
      expect(created.status, `${role} creates a line`).toBe(mayCreate ? 201 : 403);
      if (!mayCreate) expect(await rowsOf('InvoiceLine')).toEqual(before);
      expect((await as(role)('GET', `/Invoices/${invoice.id}/invoice-lines`)).status).toBe(200);
    }
    const line = (await as('owner')('POST', '/invoice-lines', { invoiceId: invoice.id, label: 'flat' })).body.data;
    for (const role of roles) {
      const mayDelete = allowed('InvoiceLine', 'delete', role, people[role].id, {});
      const exists = (await rowsOf('InvoiceLine')).some((row) => row.id === line.id);
      if (!exists) continue;
      expect((await as(role)('DELETE', `/invoice-lines/${line.id}`)).status, `${role} deletes a line`).toBe(mayDelete ? 204 : refusal('InvoiceLine', 'delete', role, true));
    }
  });

  it.runIf(kind === 'embedded' || adminUrl)('lets only the named roles write or read a field, and a refused write changes nothing', async () => {
    const invoice = (await as('owner')('POST', '/Invoices', { title: 'Fields', authorId: people.member.id, internalNote: 'for admins' })).body.data;
    for (const role of roles) {
      // Every role may update this invoice (the member as its author), but not every field of it.
      // Each writes a value of its own: writing the value a field already has changes nothing, and is not refused.
      for (const [field, value] of [['amountCents', 1000 + roles.indexOf(role)], ['internalNote', `note by ${role}`]] as const) {
        const before = await rowsOf('Invoice');
        const answer = await as(role)('PATCH', `/Invoices/${invoice.id}`, { [field]: value });
        const mayWrite = fieldRules.Invoice[field].write.includes(role);
        expect(answer.status, `${role} writes Invoice.${field}`).toBe(mayWrite ? 200 : 403);
        if (!mayWrite) {
          expect(answer.body.error.details, `${role} writes Invoice.${field}`).toHaveProperty(field);
          expect(await rowsOf('Invoice')).toEqual(before);
        }
      }
      // internalNote is read by owners and admins only: members get the record without it.
      const read = await as(role)('GET', `/Invoices/${invoice.id}`);
      const mayRead = fieldRules.Invoice.internalNote.read.includes(role);
      expect(Object.hasOwn(read.body.data, 'internalNote'), `${role} reads internalNote`).toBe(mayRead);
      const listed = (await as(role)('GET', '/Invoices?limit=100')).body.data.find((row: { id: string }) => row.id === invoice.id);
      expect(Object.hasOwn(listed, 'internalNote'), `${role} lists internalNote`).toBe(mayRead);
      // Nor may a member find it out by filtering or sorting on it.
      expect((await as(role)('GET', '/Invoices?internalNote=for%20admins')).status).toBe(mayRead ? 200 : 403);
      expect((await as(role)('GET', '/Invoices?sort=internalNote')).status).toBe(mayRead ? 200 : 403);
    }
    // A member may create nothing here, a field of it neither; an admin's create with the field is kept.
    const made = await as('admin')('POST', '/Invoices', { title: 'Admin', amountCents: 5, internalNote: 'ok' });
    expect(made.status).toBe(201);
    expect(made.body.data).toMatchObject({ amountCents: 5, internalNote: 'ok' });
  });

  it.runIf(kind === 'embedded' || adminUrl)('holds the same rules in PostgreSQL alone: statements without the generated conditions, under each role\'s scope', async () => {
    const invoices = await recordsByAuthor('Invoice');
    const notes = await recordsByAuthor('Note');
    for (const role of roles) {
      const scope = { organizationId, userId: people[role].id, role };
      const run = async (text: string, params: unknown[]) => (await client(url, serviceApiKey)('POST', '/test/under-scope', { scope, text, params })).body;
      for (const author of roles) {
        // UPDATE and DELETE with only the key: the policies decide which rows they reach.
        const invoice = invoices[author];
        const updated = await run('UPDATE "Invoice" SET "title" = $2 WHERE "id" = $1', [invoice.id, `raw ${role}`]);
        expect(updated.rowCount, `${role} updates ${author}'s invoice`).toBe(allowed('Invoice', 'update', role, people[role].id, invoice) ? 1 : 0);
        const seen = await run('SELECT "id" FROM "Note" WHERE "id" = $1', [notes[author].id]);
        expect(seen.rows.length, `${role} sees ${author}'s note`).toBe(allowed('Note', 'read', role, people[role].id, notes[author]) ? 1 : 0);
      }
      // INSERT: the policy's check on the new row's values, and the trigger of a field rule.
      const inserted = await run('INSERT INTO "Invoice" ("organizationId", "title") VALUES ($1, $2) RETURNING "id"', [organizationId, `raw ${role}`]);
      if (allowed('Invoice', 'create', role, people[role].id, {})) expect(inserted.rows, role).toHaveLength(1);
      else expect(inserted.error, role).toBe('42501');
      const priced = await run('UPDATE "Invoice" SET "amountCents" = "amountCents" + 1 WHERE "id" = $1', [invoices.member.id]);
      if (fieldRules.Invoice.amountCents.write.includes(role)) expect(priced.rowCount, role).toBe(1);
      else expect(priced, role).toMatchObject({ error: '42501', message: expect.stringContaining('"amountCents"') });
      const forged = await run('INSERT INTO "Note" ("organizationId", "body", "authorId") VALUES ($1, $2, $3) RETURNING "id"', [organizationId, 'forged', people.owner.id === people[role].id ? people.member.id : people.owner.id]);
      expect(forged.error, `${role} forges a note`).toBe('42501');
    }
  });

  it.runIf(kind === 'embedded' || adminUrl)("keeps another organization's rows out of every rule's reach", async () => {
    const mine = (await as('owner')('POST', '/Invoices', { title: 'Not yours' })).body.data;
    const theirs = client(url, outsider.token, outsider.organizationId);
    for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
      expect((await theirs(method, `/Invoices/${mine.id}`, method === 'PATCH' ? { title: 'x' } : undefined)).status).toBe(404);
    }
    expect((await client(url, outsider.token, organizationId)('GET', '/Invoices')).status).toBe(403);
    expect((await rowsOf('Invoice')).find((row) => row.id === mine.id)).toMatchObject({ title: 'Not yours' });
  });
  it.runIf(kind === 'embedded' || adminUrl)('streams to each role exactly what its list route shows: row conditions, deletions as the record was, hidden fields left out, a demotion followed', async () => {
    const streamAs = (role: Role, query = 'entity=Invoice,Note') =>
      openStream(url, `/realtime?${query}`, { authorization: `Bearer ${people[role].token}`, 'x-organization-id': organizationId });
    // Filtering by a field the role may not read is refused, as on the list route.
    expect((await streamAs('member', 'entity=Invoice&internalNote=secret')).status).toBe(403);
    const streams = { owner: await streamAs('owner'), admin: await streamAs('admin'), member: await streamAs('member') };
    const notes = await recordsByAuthor('Note');
    const invoice = await as('owner')('POST', '/Invoices', { title: 'Shared', internalNote: 'for owners and admins' });
    expect(invoice.status).toBe(201);
    expect((await as('member')('PATCH', `/Notes/${notes.member.id}`, { body: 'edited by its author' })).status).toBe(200);
    expect((await as('owner')('DELETE', `/Notes/${notes.admin.id}`)).status).toBe(204);
    // The admin becomes a member: what follows reaches them as a member.
    const memberships = (await as('owner')('GET', '/members?limit=100')).body.data as { id: string; userId: string }[];
    expect((await as('owner')('PATCH', `/members/${memberships.find((row) => row.userId === people.admin.id)!.id}`, { role: 'member' })).status).toBe(200);
    const after = await as('owner')('POST', '/Invoices', { title: 'After the demotion', internalNote: 'owners only now' });
    for (const stream of Object.values(streams)) await stream.next((message) => JSON.parse(message.data).entityId === after.body.data.id, 10_000);

    const seen = (role: Role) => streams[role].events().map((event) => `${event.type} ${event.data.record.body ?? event.data.record.title}`);
    expect(seen('owner')).toEqual(['note.created by owner', 'note.created by admin', 'note.created by member', 'invoice.created Shared', 'note.updated edited by its author', 'note.deleted by admin', 'invoice.created After the demotion']);
    expect(seen('admin')).toEqual(['note.created by admin', 'invoice.created Shared', 'note.deleted by admin', 'invoice.created After the demotion']);
    expect(seen('member')).toEqual(['note.created by member', 'invoice.created Shared', 'note.updated edited by its author', 'invoice.created After the demotion']);
    const internalNotes = (role: Role) => streams[role].events('invoice.created').map((event) => event.data.record.internalNote);
    expect(internalNotes('owner')).toEqual(['for owners and admins', 'owners only now']);
    expect(internalNotes('admin')).toEqual(['for owners and admins', undefined]);
    expect(internalNotes('member')).toEqual([undefined, undefined]);
    for (const stream of Object.values(streams)) stream.close();
  });
});
