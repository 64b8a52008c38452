import { describe, expect, it } from 'vitest';
import { databaseModel } from '../src/generate/table-model.js';
import { SchemaError } from '../src/schema/read-literal.js';
import type { Entity } from '../src/schema/types.js';
import { validateSchema } from '../src/schema/validate.js';

/** The problems validateSchema reports for a schema file's data. */
function problemsOf(raw: unknown): string[] {
  try {
    validateSchema(raw);
  } catch (error) {
    expect(error).toBeInstanceOf(SchemaError);
    return (error as SchemaError).problems;
  }
  throw new Error('expected the schema to be refused');
}

/** The problems of a schema with one entity `Project` that has the given fields. */
const fieldProblems = (fields: Record<string, unknown>) => problemsOf({ entities: { Project: { fields } } });

const entity = (schema: { entities: Entity[] }, name: string): Entity => {
  const found = schema.entities.find((candidate) => candidate.name === name);
  if (!found) throw new Error(`no entity ${name}`);
  return found;
};

describe('validateSchema: problems name the entity and the field', () => {
  it('refuses an unknown field type', () => {
    expect(fieldProblems({ title: { type: 'varchar' } })).toEqual([
      'authstrap.schema.ts: entity "Project", field "title": "type" must be one of string, text, integer, number, boolean, datetime, uuid, enum, json (got "varchar")',
    ]);
  });

  it('refuses an enum without values and an enum listing a value twice', () => {
    expect(fieldProblems({ status: { type: 'enum' } })).toEqual([
      expect.stringMatching(/entity "Project", field "status": an enum needs "values"/),
    ]);
    expect(fieldProblems({ status: { type: 'enum', values: [] } })).toEqual([expect.stringMatching(/field "status": an enum needs "values"/)]);
    expect(fieldProblems({ status: { type: 'enum', values: ['a', 'b', 'a'] } })).toEqual([
      expect.stringMatching(/entity "Project", field "status": "values" lists a value twice/),
    ]);
  });

  it.each([
    [{ type: 'integer', default: 1.5 }, '1.5 is not a valid integer'],
    [{ type: 'boolean', default: 'yes' }, '"yes" is not a valid boolean'],
    [{ type: 'enum', values: ['a', 'b'], default: 'c' }, '"c" is not a valid enum'],
    [{ type: 'datetime', default: 'tomorrow' }, '"tomorrow" is not a valid datetime (use "now" or an ISO date string)'],
    [{ type: 'uuid', default: 'not-a-uuid' }, '"not-a-uuid" is not a valid uuid'],
    [{ type: 'string', default: null }, 'null is not a valid string'],
  ])('refuses a default that does not fit the type: %j', (field, message) => {
    expect(fieldProblems({ value: field })).toEqual([`authstrap.schema.ts: entity "Project", field "value": the default ${message}`]);
  });

  it('accepts defaults that fit the type', () => {
    const schema = validateSchema({
      entities: {
        Project: {
          fields: {
            count: { type: 'integer', default: -3 },
            due: { type: 'datetime', default: 'now' },
            since: { type: 'datetime', default: '2024-01-01T00:00:00Z' },
            note: { type: 'string', nullable: true, default: null },
            meta: { type: 'json', default: { a: 1 } },
          },
        },
      },
    });
    const defaults = entity(schema, 'Project').fields.filter((field) => !field.system).map((field) => [field.name, field.default]);
    expect(Object.fromEntries(defaults)).toEqual({ count: -3, due: 'now', since: '2024-01-01T00:00:00Z', note: null, meta: { a: 1 } });
  });

  it('refuses minLength larger than maxLength, and length limits on a number', () => {
    expect(fieldProblems({ code: { type: 'string', minLength: 10, maxLength: 5 } })).toEqual([
      'authstrap.schema.ts: entity "Project", field "code": "minLength" is larger than "maxLength"',
    ]);
    expect(fieldProblems({ count: { type: 'integer', maxLength: 5 } })).toEqual([
      expect.stringMatching(/field "count": "maxLength" applies to string and text fields only/),
    ]);
  });

  it('refuses a reference to an entity the schema does not have', () => {
    expect(fieldProblems({ ownerId: { type: 'uuid', references: 'Team' } })).toEqual([
      'authstrap.schema.ts: entity "Project", field "ownerId": references "Team", which is not an entity of this schema',
    ]);
  });

  it('refuses a reference on a field whose type is not the target id type', () => {
    expect(fieldProblems({ ownerId: { type: 'string', references: 'User' } })).toEqual([
      'authstrap.schema.ts: entity "Project", field "ownerId": references "User", whose id is a uuid, so its type must be "uuid"',
    ]);
  });

  it('refuses onDelete "set null" on a field that is not nullable', () => {
    expect(fieldProblems({ ownerId: { type: 'uuid', references: 'User', onDelete: 'set null' } })).toEqual([
      'authstrap.schema.ts: entity "Project", field "ownerId": "onDelete": "set null" needs "nullable": true',
    ]);
  });

  it('allows "set null" between two tenant-scoped entities: the key then nulls the reference column only', () => {
    const schema = validateSchema({
      entities: {
        Project: { fields: {} },
        Task: { fields: { projectId: { type: 'uuid', nullable: true, references: 'Project' } } },
      },
    });
    const task = databaseModel(schema).tables.find((table) => table.name === 'Task')!;
    expect(task.constraints.find((constraint) => constraint.name === 'Task_projectId_fkey')!.definition).toBe(
      'FOREIGN KEY ("projectId", "organizationId") REFERENCES "Project" ("id", "organizationId") ON DELETE SET NULL ("projectId")',
    );
  });

  it('refuses a reference whose type is not the type of the target id', () => {
    const problems = problemsOf({
      entities: {
        Ledger: { idType: 'integer', fields: {} },
        Entry: { fields: { ledgerId: { type: 'uuid', references: 'Ledger' }, ownerId: { type: 'integer', references: 'Project' } } },
        Project: { fields: {} },
      },
    });
    expect(problems).toEqual([
      expect.stringMatching(/entity "Entry", field "ledgerId": references "Ledger", whose id is an integer, so its type must be "integer"/),
      expect.stringMatching(/entity "Entry", field "ownerId": references "Project", whose id is a uuid, so its type must be "uuid"/),
    ]);
  });

  it('maps the id type and the timestamp columns, or leaves the timestamps out', () => {
    const schema = validateSchema({
      auth: false,
      entities: { Invoice: { table: 'invoices', idType: 'integer', createdAt: 'issued_at', updatedAt: false, fields: {} } },
    });
    const invoice = schema.entities[0]!;
    expect(invoice.idType).toBe('integer');
    expect(invoice.fields.map((field) => [field.name, field.column, field.type])).toEqual([
      ['id', 'id', 'integer'],
      ['createdAt', 'issued_at', 'datetime'],
    ]);
  });

  it('refuses a bad idType or timestamp column', () => {
    const problems = problemsOf({ auth: false, entities: { Invoice: { idType: 'serial', createdAt: 'issued at', updatedAt: true, fields: {} } } });
    expect(problems).toEqual([
      expect.stringMatching(/"idType" must be one of uuid, integer \(got "serial"\)/),
      expect.stringMatching(/"createdAt" must be the name of its column or false \(got "issued at"\)/),
      expect.stringMatching(/"updatedAt" must be the name of its column or false \(got true\)/),
    ]);
  });

  it.each(['id', 'createdAt', 'updatedAt', 'organizationId'])('refuses the system field name "%s"', (name) => {
    expect(fieldProblems({ [name]: { type: 'uuid' } })).toEqual([
      expect.stringMatching(new RegExp(`^authstrap\\.schema\\.ts: entity "Project", field "${name}": "${name}" is added by authstrap to every entity`)),
    ]);
  });

  it.each([
    ['Account', 'account'],
    ['Session', 'session'],
    ['user', 'User'],
    ['users', 'User'],
    ['Users', 'User'],
    ['Verification', 'verification'],
    ['ORGANIZATION', 'Organization'],
    ['Members', 'member'],
    ['ApiKey', 'apikey'],
    ['APIKEYS', 'apikey'],
  ])('refuses an entity "%s" that clashes with the built-in "%s"', (name, builtin) => {
    expect(problemsOf({ entities: { [name]: { fields: {} } } })).toEqual([
      `authstrap.schema.ts: entity "${name}": clashes with the built-in entity "${builtin}" (names and paths are matched case-insensitively); rename one of them`,
    ]);
  });

  it('extends a built-in entity named exactly: its fields gain yours, the built-in ones stay', () => {
    const schema = validateSchema({
      entities: { User: { fields: { plan: { type: 'enum', values: ['free', 'pro'], default: 'free' }, nickname: { type: 'string', nullable: true } }, indexes: [['plan']] } },
    });
    const user = entity(schema, 'User');
    expect(user.builtin).toBe(true);
    expect(user.tenantScoped).toBe(false);
    expect(user.fields.map((field) => field.name)).toEqual(['id', 'email', 'name', 'email_verified', 'image', 'plan', 'nickname', 'createdAt', 'updatedAt']);
    expect(user.indexes).toEqual([['plan']]);
    expect(schema.entities.filter((candidate) => candidate.name === 'User')).toHaveLength(1);
  });

  it('says to write better-auth.schema.json again when it still has apikey as a serviceOnly entity (older than the built-in machine keys)', () => {
    expect(problemsOf({ entities: { apikey: { serviceOnly: true, fields: { key: { type: 'text' }, referenceId: { type: 'text' } } } } })).toEqual([
      'authstrap.schema.ts: entity "apikey" (built in; only fields and indexes can be added to it): is built in now, so it is no serviceOnly entity: write better-auth.schema.json again (npx authstrap-better-auth-schema), or remove this definition',
    ]);
  });

  it('refuses an extension that redefines a built-in field, adds a required field, or changes more than fields', () => {
    expect(
      problemsOf({
        entities: {
          User: { fields: { email: { type: 'string', nullable: true }, id: { type: 'uuid', nullable: true }, plan: { type: 'string' } } },
          session: { tenantScoped: true, fields: {} },
          account: 'no',
        },
      }),
    ).toEqual([
      'authstrap.schema.ts: entity "User" (built in; only fields and indexes can be added to it), field "email": is a built-in field; choose another name for yours',
      'authstrap.schema.ts: entity "User" (built in; only fields and indexes can be added to it), field "id": is a built-in field; choose another name for yours',
      'authstrap.schema.ts: entity "User" (built in; only fields and indexes can be added to it), field "plan": must be nullable or have a default: the backend creates these rows without it',
      'authstrap.schema.ts: entity "account" (built in; only fields and indexes can be added to it): must be an object like { fields: { ... } }',
      'authstrap.schema.ts: entity "session" (built in; only fields and indexes can be added to it): unknown key "tenantScoped" (allowed: fields, indexes)',
    ]);
  });

  it('takes serviceOnly entities: global, with an organizationId of their own allowed; never tenant-scoped or without auth', () => {
    const schema = validateSchema({
      entities: { invitation: { serviceOnly: true, fields: { organizationId: { type: 'uuid', references: 'Organization', onDelete: 'cascade' }, email: { type: 'string' } } } },
    });
    expect(entity(schema, 'invitation')).toMatchObject({ serviceOnly: true, tenantScoped: false });
    expect(entity(schema, 'invitation').fields.find((field) => field.name === 'organizationId')).toMatchObject({ system: false, references: { entity: 'Organization' } });
    expect(problemsOf({ entities: { invitation: { serviceOnly: true, tenantScoped: true, fields: {} } } })).toEqual([
      'authstrap.schema.ts: entity "invitation": is serviceOnly, so it cannot be tenant-scoped: the service key acts in no organization; set "tenantScoped": false',
    ]);
    expect(problemsOf({ auth: false, entities: { invitation: { serviceOnly: true, fields: {} } } })).toEqual([
      'authstrap.schema.ts: entity "invitation": "serviceOnly" needs auth (the service key comes with it)',
    ]);
    expect(problemsOf({ entities: { Project: { fields: { organizationId: { type: 'uuid' } } } } })).toEqual([
      'authstrap.schema.ts: entity "Project", field "organizationId": "organizationId" is added by authstrap to every entity that is tenant-scoped; remove it from "fields"',
    ]);
  });

  it('takes `events: false` on a tenant-scoped entity of your own, and refuses it where there are no events to turn off', () => {
    expect(entity(validateSchema({ entities: { Reading: { events: false, fields: { value: { type: 'number' } } } } }), 'Reading').events).toBe(false);
    expect(entity(validateSchema({ entities: { Reading: { events: true, fields: {} } } }), 'Reading').events).toBeUndefined();
    expect(problemsOf({ entities: { Reading: { events: 'no', fields: {} } } })).toEqual(['authstrap.schema.ts: entity "Reading": "events" must be true or false']);
    const noEvents = '"events": false is for tenant-scoped entities of your own, the only ones whose changes are events; remove it';
    expect(problemsOf({ entities: { Country: { tenantScoped: false, events: false, fields: {} } } })).toEqual([`authstrap.schema.ts: entity "Country": ${noEvents}`]);
    expect(problemsOf({ auth: false, entities: { Reading: { events: false, fields: {} } } })).toEqual([`authstrap.schema.ts: entity "Reading": ${noEvents}`]);
  });

  it('allows the built-in names when auth is off', () => {
    const schema = validateSchema({ auth: false, entities: { Account: { fields: {} }, users: { fields: {} } } });
    expect(schema.entities.map((candidate) => candidate.name)).toEqual(['Account', 'users']);
  });

  it('refuses entity names the generated code already uses', () => {
    expect(problemsOf({ entities: { Router: { fields: {} } } })).toEqual([expect.stringMatching(/entity "Router": is a name the generated TypeScript already uses/)]);
  });

  it('refuses unknown keys at every level, so a typo is not silently ignored', () => {
    expect(problemsOf({ entites: {}, entities: { Project: { tenantscoped: false, fields: { note: { type: 'text', nulable: true } } } } })).toEqual([
      expect.stringMatching(/^authstrap\.schema\.ts: schema: unknown key "entites"/),
      expect.stringMatching(/^authstrap\.schema\.ts: entity "Project": unknown key "tenantscoped"/),
      expect.stringMatching(/^authstrap\.schema\.ts: entity "Project", field "note": unknown key "nulable" \(allowed: type, nullable,/),
    ]);
  });

  it('accepts renamedFrom on an entity and a field, and refuses one that is not a plain name or takes over a system column', () => {
    const schema = validateSchema({ entities: { Board: { renamedFrom: 'Project', fields: { name: { type: 'string', renamedFrom: 'title' } } } } });
    const board = schema.entities.find((entity) => entity.name === 'Board')!;
    expect(board.renamedFrom).toBe('Project');
    expect(board.fields.find((field) => field.name === 'name')!.renamedFrom).toBe('title');
    expect(problemsOf({ entities: { Board: { renamedFrom: 'old table', fields: { name: { type: 'string', renamedFrom: 'id' }, note: { type: 'text', renamedFrom: 3 } } } } })).toEqual([
      'authstrap.schema.ts: entity "Board": "renamedFrom" must be the old name of the table, a plain SQL identifier',
      'authstrap.schema.ts: entity "Board", field "name": "renamedFrom" cannot take over "id", a column authstrap manages itself',
      'authstrap.schema.ts: entity "Board", field "note": "renamedFrom" must be the old name of the column, a plain SQL identifier',
    ]);
  });

  it('refuses a tenant-scoped entity in a schema without auth', () => {
    expect(problemsOf({ auth: false, entities: { Project: { tenantScoped: true, fields: {} } } })).toEqual([
      'authstrap.schema.ts: entity "Project": is tenant-scoped but the schema has `auth: false`; tenants (organizations) come with auth',
    ]);
  });

  it('refuses nesting a tenant-scoped entity under a global one', () => {
    const problems = problemsOf({
      entities: {
        Catalog: { tenantScoped: false, fields: {} },
        Item: { parent: 'catalogId', fields: { catalogId: { type: 'uuid', references: 'Catalog' } } },
      },
    });
    expect(problems).toEqual([
      'authstrap.schema.ts: entity "Item": is nested under "Catalog", so both must be tenant-scoped or both not',
    ]);
  });

  it('refuses a "parent" that is not a reference field of the entity', () => {
    expect(problemsOf({ entities: { Task: { parent: 'projectId', fields: { projectId: { type: 'uuid' } } } } })).toEqual([
      expect.stringMatching(/entity "Task": "parent" must name one of its own fields that references another entity \(got "projectId"\)/),
    ]);
  });

  it('refuses uniqueTogether and indexes naming fields that do not exist', () => {
    expect(problemsOf({ entities: { Project: { fields: { name: { type: 'string' } }, uniqueTogether: [['name', 'slug']], indexes: [['nmae']] } } })).toEqual([
      'authstrap.schema.ts: entity "Project": "uniqueTogether" names "slug", which is not a field of "Project"',
      'authstrap.schema.ts: entity "Project": "indexes" names "nmae", which is not a field of "Project"',
    ]);
  });

  it('reports every problem of the schema at once', () => {
    const problems = problemsOf({
      entities: {
        Project: {
          fields: {
            title: { type: 'strin' },
            status: { type: 'enum' },
            ownerId: { type: 'uuid', references: 'Team' },
          },
        },
        Session: { fields: {} },
      },
    });
    expect(problems).toHaveLength(4);
    expect(problems.join('\n')).toMatch(/field "title": "type" must be one of/);
    expect(problems.join('\n')).toMatch(/field "status": an enum needs "values"/);
    expect(problems.join('\n')).toMatch(/field "ownerId": references "Team"/);
    expect(problems.join('\n')).toMatch(/entity "Session": clashes with the built-in entity "session"/);
  });

  it('refuses a default export that is not an object', () => {
    expect(problemsOf([])).toEqual(['authstrap.schema.ts: the default export must be an object like { entities: { ... } }']);
    expect(problemsOf({ auth: true })).toEqual(['authstrap.schema.ts: schema: "entities" must be an object of entity definitions']);
  });
});

describe('validateSchema: the resolved schema', () => {
  const builtins = ['User', 'account', 'session', 'verification', 'Organization', 'member', 'apikey'];

  it('adds the built-in entities before your own when auth is on (the default)', () => {
    const schema = validateSchema({ entities: { Project: { fields: {} } } });
    expect(schema.auth).toBe(true);
    expect(schema.entities.map((candidate) => candidate.name)).toEqual([...builtins, 'Project']);
    expect(schema.entities.filter((candidate) => candidate.builtin).map((candidate) => candidate.name)).toEqual(builtins);
  });

  it('leaves the built-in entities out with auth: false, and makes entities global', () => {
    const schema = validateSchema({ auth: false, entities: { Project: { fields: {} } } });
    expect(schema.auth).toBe(false);
    expect(schema.entities.map((candidate) => candidate.name)).toEqual(['Project']);
    expect(entity(schema, 'Project').tenantScoped).toBe(false);
  });

  it('lists the system fields in order around your own: id, organizationId, ..., createdAt, updatedAt', () => {
    const schema = validateSchema({
      entities: {
        Project: { fields: { name: { type: 'string' }, budget: { type: 'number' } } },
        Tag: { tenantScoped: false, fields: { label: { type: 'string' } } },
      },
    });
    const project = entity(schema, 'Project');
    expect(project.fields.map((field) => field.name)).toEqual(['id', 'organizationId', 'name', 'budget', 'createdAt', 'updatedAt']);
    expect(project.fields.map((field) => field.system)).toEqual([true, true, false, false, true, true]);
    expect(project.fields[1]).toMatchObject({ type: 'uuid', nullable: false, references: { entity: 'Organization', onDelete: 'cascade' } });
    expect(entity(schema, 'Tag').fields.map((field) => field.name)).toEqual(['id', 'label', 'createdAt', 'updatedAt']);
  });

  it('makes "name" searchable unless the entity marks other fields searchable', () => {
    const schema = validateSchema({
      entities: {
        Project: { fields: { name: { type: 'string' }, code: { type: 'string' } } },
        Task: { fields: { name: { type: 'string' }, title: { type: 'string', searchable: true } } },
      },
    });
    const searchable = (name: string) => entity(schema, name).fields.filter((field) => field.searchable).map((field) => field.name);
    expect(searchable('Project')).toEqual(['name']);
    expect(searchable('Task')).toEqual(['title']);
  });

  it('fills defaults: not nullable, not unique, cascade for required references, set null for nullable ones', () => {
    const schema = validateSchema({
      entities: {
        Project: {
          fields: {
            ownerId: { type: 'uuid', references: 'User' },
            reviewerId: { type: 'uuid', nullable: true, references: 'User' },
          },
        },
      },
    });
    const [owner, reviewer] = entity(schema, 'Project').fields.filter((field) => !field.system);
    expect(owner).toMatchObject({ nullable: false, unique: false, secret: false, column: 'ownerId', references: { entity: 'User', onDelete: 'cascade' } });
    expect(reviewer).toMatchObject({ nullable: true, references: { entity: 'User', onDelete: 'set null' } });
  });

  it('makes "unique" per organization in a tenant-scoped entity and global elsewhere', () => {
    const schema = validateSchema({
      entities: {
        Project: { fields: { code: { type: 'string', unique: true } } },
        Country: { tenantScoped: false, fields: { code: { type: 'string', unique: true } } },
      },
    });
    const constraints = (table: string) => databaseModel(schema).tables.find((candidate) => candidate.name === table)!.constraints;
    expect(constraints('Project')).toContainEqual({ name: 'Project_organizationId_code_key', definition: 'UNIQUE ("organizationId", "code")' });
    expect(constraints('Country')).toContainEqual({ name: 'Country_code_key', definition: 'UNIQUE ("code")' });
  });

  it('resolves "parent" to the field and the entity it references', () => {
    const schema = validateSchema({
      entities: {
        Project: { fields: {} },
        Task: { parent: 'projectId', fields: { projectId: { type: 'uuid', references: 'Project' } } },
      },
    });
    expect(entity(schema, 'Task').parent).toEqual({ field: 'projectId', entity: 'Project' });
  });

  it('maps an entity to another table and a field to another column', () => {
    const schema = validateSchema({ auth: false, entities: { Invoice: { table: 'invoices', fields: { total: { type: 'number', column: 'total_amount' } } } } });
    const invoice = entity(schema, 'Invoice');
    expect(invoice.table).toBe('invoices');
    expect(invoice.fields.find((field) => field.name === 'total')?.column).toBe('total_amount');
  });
});

describe('validateSchema: rules', () => {
  const task = (rules: unknown, fields: Record<string, unknown> = {}) => ({
    entities: {
      Task: {
        fields: {
          title: { type: 'string' },
          assigneeId: { type: 'uuid', references: 'User', nullable: true },
          projectCode: { type: 'uuid', nullable: true },
          budget: { type: 'integer', nullable: true },
          ...fields,
        },
        rules,
      },
    },
  });

  it('fills in what the schema leaves out: every member, and list as read', () => {
    const rules = entity(validateSchema(task({ read: ['owner', { assigneeId: 'caller' }], delete: [], fields: { budget: { write: ['owner'] } } })), 'Task').rules!;
    expect(rules.operations).toEqual({
      list: { roles: ['owner'], callerFields: [['assigneeId']] },
      read: { roles: ['owner'], callerFields: [['assigneeId']] },
      create: { roles: ['owner', 'admin', 'member'], callerFields: [] },
      update: { roles: ['owner', 'admin', 'member'], callerFields: [] },
      delete: { roles: [], callerFields: [] },
    });
    expect(rules.fields).toEqual([{ field: 'budget', read: ['owner', 'admin', 'member'], write: ['owner'] }]);
    // No rules: none at all, which is every member doing everything.
    expect(entity(validateSchema(task(undefined)), 'Task').rules).toBeUndefined();
  });

  it('refuses what is not a role, an operation or a row condition on a user', () => {
    expect(problemsOf(task({ update: ['owner', 'admn'], publish: ['owner'] }))).toEqual([
      'authstrap.schema.ts: entity "Task", rules: unknown key "publish" (allowed: list, read, create, update, delete, fields)',
      `authstrap.schema.ts: entity "Task", rules, update: "admn" is not a role; the roles are 'owner', 'admin', 'member'`,
    ]);
    expect(problemsOf(task({ update: [{ projectCode: 'caller' }, { title: 'caller' }, { assigneeId: 'me' }, { nobody: 'caller' }] }))).toEqual([
      `authstrap.schema.ts: entity "Task", rules, update: "projectCode" must hold a user's id (a uuid field with references: 'User') to be compared with the caller`,
      `authstrap.schema.ts: entity "Task", rules, update: "title" must hold a user's id (a uuid field with references: 'User') to be compared with the caller`,
      `authstrap.schema.ts: entity "Task", rules, update: a row condition compares a field with 'caller' (got "me")`,
      'authstrap.schema.ts: entity "Task", rules, update: "nobody" is not a field of "Task"',
    ]);
    expect(problemsOf(task({ delete: 'owner' }))).toEqual([
      `authstrap.schema.ts: entity "Task", rules, delete: must be a list of who may delete: roles ('owner', 'admin', 'member') and row conditions like { authorId: 'caller' }`,
    ]);
  });

  it('refuses field rules a record could not live with', () => {
    expect(problemsOf(task({ fields: { budget: { write: ['owner'], read: ['owner', 'admn'] }, id: { write: [] }, nope: {} } }))).toEqual([
      'authstrap.schema.ts: entity "Task", rules, fields, "budget": "read" must be a list of roles (\'owner\', \'admin\', \'member\')',
      'authstrap.schema.ts: entity "Task", rules, fields: "id" is not a field of "Task" that callers read and write (authstrap manages it)',
      'authstrap.schema.ts: entity "Task", rules, fields: "nope" is not a field of "Task" that callers read and write',
    ]);
    expect(problemsOf(task({ fields: { budget: { read: ['owner'], write: ['owner', 'admin'] } } }))).toEqual([
      'authstrap.schema.ts: entity "Task", rules, fields, "budget": admin may write it but not read it; let them read it too, or not write it',
    ]);
    expect(problemsOf(task({ create: ['owner', 'member'], fields: { priority: { write: ['owner'] } } }, { priority: { type: 'integer' } }))).toEqual([
      'authstrap.schema.ts: entity "Task", rules, fields, "priority": is required, and member may create a "Task" but not write it: give the field a "default", make it "nullable", or let them write it',
    ]);
    expect(problemsOf(task({ fields: { title: { read: ['owner'], write: ['owner'] } } }, { title: { type: 'string', searchable: true } }))).toEqual([
      'authstrap.schema.ts: entity "Task", rules, fields, "title": is searchable, so every role could find out what it holds: limit who reads it, or make it not searchable (searchable: false on another field)',
      'authstrap.schema.ts: entity "Task", rules, fields, "title": is required, and admin, member may create a "Task" but not write it: give the field a "default", make it "nullable", or let them write it',
    ]);
  });

  it('refuses rules where no organization role decides: global and built-in entities', () => {
    expect(problemsOf({ entities: { Tag: { tenantScoped: false, fields: { name: { type: 'string' } }, rules: { create: ['owner'] } } } })).toEqual([
      'authstrap.schema.ts: entity "Tag", rules: rules are for your own tenant-scoped entities: who may do what is decided by a role in an organization',
    ]);
    expect(problemsOf({ entities: { User: { rules: {} } } })).toEqual([
      expect.stringContaining('entity "User" (built in; only fields and indexes can be added to it): unknown key "rules"'),
    ]);
  });
});
