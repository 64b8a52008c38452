import { entityEventTypes, eventTypesOf } from './event-sql.js';
import { camelCase } from '../schema/naming.js';
import type { Field, Schema } from '../schema/types.js';
import { projectView, type EntityView } from './view-model.js';

/**
 * Everything the typed client's template prints (templates/client/): each entity a signed-in user
 * reaches, with its fields as TypeScript types. The records are typed as JSON carries them: a
 * datetime is an ISO 8601 string.
 */

/** One property of a declared type: `dueAt?: string | null`. */
export interface ClientProperty {
  name: string;
  type: string;
  optional: boolean;
  description?: string;
}

export interface ClientChild {
  /** The method on the parent's API: `tasks` in `client.Project.tasks(projectId)`. */
  accessor: string;
  /** The child's type name: `Task`. */
  type: string;
  /** `/Projects/:projectId/Tasks` */
  routePath: string;
  parentField: string;
  /** The child's own collection path, which follows the parent's id: `/Tasks`. */
  childPath: string;
  /** As ClientEntityView's: its nested routes keep keyed writes' answers. */
  keyedWrites: boolean;
}

export interface ClientEntityView {
  /** The entity's name, which is also its property on the client: `client.Project`, `client.account`. */
  name: string;
  /** The start of its type names: `Project`, `ProjectCreateInput`; `account` -> `Account`. */
  type: string;
  path: string;
  /** The TypeScript type of its ids. */
  idType: 'string' | 'number';
  tenantScoped: boolean;
  /**
   * Its routes are plain CRUD, so its API is generated. The built-in User, account, session and
   * member have rules of their own, whose API the template spells out.
   */
  crud: boolean;
  /**
   * Its routes keep a keyed write's answer (the backend's src/idempotency/: behind tenantScoped,
   * or, in a project with auth, a signed-in user's writes to any route): the client sends its
   * writes with an Idempotency-Key, and sends them again.
   */
  keyedWrites: boolean;
  /** The template's partial that declares its API: `crud`, or the built-in entity's name. */
  api: string;
  /** What its API's comment says about it. */
  summary: string;
  output: ClientProperty[];
  /** The body of a create (caller-chosen `id` included): required unless nullable or defaulted. */
  create: ClientProperty[];
  /** The field filters of a list, typed `Match<...>` or `Range<...>`. */
  filters: ClientProperty[];
  /** The fields a list sorts by, as a union of string literals. */
  sortFields: string;
  /** The fields `search` matches, for its comment; none when the entity has no searchable field. */
  searchFields?: string;
  hasCreatedAt: boolean;
  /** Set when it is nested: the field its parent's id goes in. */
  parentField?: string;
  children: ClientChild[];
  /** Its event types, as a union of string literals, when GET /realtime streams its changes (those of your own entities that are events). */
  streamEvents?: string;
}

export interface ClientView {
  auth: boolean;
  entities: ClientEntityView[];
  /** The entities whose API is generated, for the client object (the built-in ones are written out). */
  crudEntities: ClientEntityView[];
  /** Whether some record has a json field, so that the `Json` type is declared. */
  usesJson: boolean;
  /** The entity the example at the top of the file lists. */
  example?: string;
  /** Every event type the backend records (its webhooks), with its description as a string literal. */
  events: { type: string; description: string }[];
  /** Whether some entity has a live stream (GET /realtime), so that subscribe() and its types are declared. */
  streaming: boolean;
  /** The entity the example at the top of the file subscribes to. */
  streamExample?: string;
}

/** Built-in entities whose user routes are plain CRUD; the others are written out in the template. */
const builtinCrud: Record<string, string> = {
  Organization: 'the organizations the signed-in user belongs to; whoever creates one owns it. Owners and admins rename one, only an owner deletes one (with all its data)',
};

const stringLiterals = (values: readonly string[]) => values.map((value) => `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`).join(' | ');
/** A description in a `/** ... *\/` comment: one line, and no early end of the comment. */
const commentText = (text: string | undefined) => text?.replace(/\s+/g, ' ').replace(/\*\//g, '*\\/').trim();

/** A field's value type, without null. `input` dates may be Date objects: JSON.stringify makes them ISO strings. */
function valueType(field: Field, direction: 'output' | 'input'): string {
  switch (field.type) {
    case 'string':
    case 'text':
    case 'uuid':
      return 'string';
    case 'enum':
      return field.values ? stringLiterals(field.values) : 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'datetime':
      return direction === 'input' ? 'string | Date' : 'string';
    case 'json':
      return 'Json';
  }
}

/** `['email', 'name']` -> `email and name`; nothing for no names. */
const inWords = (names: string[]) => (names.length === 0 ? undefined : names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`);

const orNull = (type: string, field: Field) => (field.nullable ? `${type} | null` : type);

/** Lists compare numbers and dates by range, everything else by equality (the list-query module's rule). */
function filterType(field: Field): string {
  const comparison = field.type === 'integer' || field.type === 'number' || field.type === 'datetime' ? 'Range' : 'Match';
  return `${comparison}<${orNull(valueType(field, 'input'), field)}>`;
}

function clientEntity(view: EntityView, fields: Field[], all: EntityView[], auth: boolean): ClientEntityView {
  const visible = fields.filter((field) => !field.secret);
  const listed = visible.filter((field) => field.type !== 'json');
  const idType = view.idType === 'integer' ? 'number' : 'string';
  const create: ClientProperty[] = [
    ...(view.callerChosenId ? [{ name: 'id', type: 'string', optional: true, description: 'Chosen by the caller; the backend picks one when it is left out.' }] : []),
    ...fields
      .filter((field) => !field.system)
      .map((field) => ({
        name: field.name,
        type: orNull(valueType(field, 'input'), field),
        optional: field.nullable || field.default !== undefined,
        description: commentText(field.description),
      })),
  ];
  const crud = !view.builtin || Object.hasOwn(builtinCrud, view.name);
  const children: ClientChild[] = crud
    ? all
        .filter((child) => child.parent?.entity === view.name && !child.serviceOnly)
        .map((child) => ({
          accessor: camelCase(child.path.slice(1).replace(/-/g, ' ')),
          type: child.pascal,
          routePath: child.parent!.routePath,
          parentField: child.parent!.field,
          childPath: child.path,
          keyedWrites: child.machineKeys || auth,
        }))
    : [];
  return {
    name: view.name,
    type: view.pascal,
    path: view.path,
    idType,
    tenantScoped: view.tenantScoped,
    crud,
    keyedWrites: view.machineKeys || auth,
    api: crud ? 'crud' : view.name,
    summary: builtinCrud[view.name] ?? `the ${view.name} records${view.tenantScoped ? ' of the organization set with setOrganization()' : ''}`,
    output: visible.map((field) => ({ name: field.name, type: orNull(valueType(field, 'output'), field), optional: false, description: commentText(field.description) })),
    create,
    filters: listed.map((field) => ({ name: field.name, type: filterType(field), optional: true })),
    sortFields: stringLiterals(listed.map((field) => field.name)),
    searchFields: inWords(fields.filter((field) => field.searchable).map((field) => field.name)),
    hasCreatedAt: fields.some((field) => field.name === 'createdAt'),
    parentField: view.parent?.field,
    children,
    // What src/generated/realtime.ts lists: the entities of your own whose changes are events.
    streamEvents: view.eventPrefix && !view.builtin ? stringLiterals(entityEventTypes(view)) : undefined,
  };
}

/** The client's view of a schema: the entities with routes for signed-in users (service-only ones have none). */
export function clientView(schema: Schema): ClientView {
  const views = projectView(schema).entities;
  const fieldsOf = new Map(schema.entities.map((entity) => [entity.name, entity.fields]));
  const entities = views.filter((view) => !view.serviceOnly).map((view) => clientEntity(view, fieldsOf.get(view.name)!, views, Boolean(schema.auth)));
  const exampleEntity = entities.find((entity) => entity.crud && entity.tenantScoped) ?? entities.find((entity) => entity.crud);
  return {
    auth: schema.auth,
    entities,
    crudEntities: entities.filter((entity) => entity.crud),
    usesJson: entities.some((entity) => entity.output.some((field) => /\bJson\b/.test(field.type))),
    example: exampleEntity?.name,
    events: eventTypesOf(schema),
    // With auth, the organization's memberships stream (GET /realtime?entity=member: the members page).
    streaming: schema.auth || entities.some((entity) => entity.streamEvents !== undefined),
    streamExample: (exampleEntity?.streamEvents ? exampleEntity : entities.find((entity) => entity.streamEvents))?.name,
  };
}
