import { hasEvents } from '../generate/event-sql.js';
import { kebabCase, pascalCase, words } from '../schema/naming.js';
import type { Entity, Field, Schema } from '../schema/types.js';

/**
 * What the frontend templates print about the schema: the business entity its one data page
 * lists and creates, with a form input and a table column per field. Computed here so that the
 * templates stay plain JSX.
 */

export interface FormField {
  name: string;
  label: string;
  /** An <input> type, or `select` (enums) or `checkbox` (booleans). */
  input: 'text' | 'number' | 'datetime-local' | 'select' | 'checkbox';
  required: boolean;
  options?: string[];
  minLength?: number;
  maxLength?: number;
  /** The property of the create input, read from the form: `name: String(form.get('name'))`. */
  assign: string;
  /** Whether an edit that empties it sends null (a nullable field; a checkbox always says yes or no). */
  clearable: boolean;
  /** The input's starting value: the edited record's (`record`), or empty in the create form: `defaultValue={record?.name ?? ''}`. */
  initial: string;
}

export interface FrontendEntityView {
  /** The entity's name, also its property on the typed client (`api.Project`). */
  name: string;
  pascal: string;
  fileBase: string;
  /** The app's route: `/projects`. */
  route: string;
  /** `Projects`, `projects`, `project`. */
  label: string;
  labelLower: string;
  labelSingularLower: string;
  formFields: FormField[];
  /** Whether a form input is a date and time (the panel then converts the record's for the input). */
  hasDateTime: boolean;
  /** What names a row in words, for its buttons ("Edit Apollo"): its first required text field, or its id. */
  rowName: string;
  columns: { label: string; cell: string }[];
  /** The table's columns: the fields shown, and one for each row's buttons (the edit form spans them all). */
  columnCount: number;
  /** Whether its changes are events the backend streams (GET /realtime): the page then follows them live. */
  live: boolean;
}

const sentence = (name: string) => {
  const text = words(name).join(' ').toLowerCase();
  return text.charAt(0).toUpperCase() + text.slice(1);
};

/**
 * The entity the data page shows: the first of the schema's own entities that a signed-in user
 * reaches at the top level of an organization (no parent, not service-only, not built in).
 */
export function pageEntity(schema: Schema): Entity | undefined {
  return schema.entities.find((entity) => !entity.builtin && !entity.serviceOnly && entity.tenantScoped && !entity.parent);
}

/** Fields a person types in: not managed by the backend, not secret, not a reference or JSON. */
const typedByPeople = (field: Field) => !field.system && !field.secret && !field.references && field.type !== 'uuid' && field.type !== 'json';

function formField(field: Field, pascal: string): FormField {
  const required = !field.nullable && field.default === undefined;
  const read = `form.get('${field.name}')`;
  const converted: Record<Field['type'], string> = {
    string: `String(${read})`,
    text: `String(${read})`,
    // One of the options the select offers; the cast names the field's own type.
    enum: `String(${read}) as ${pascal}CreateInput['${field.name}']`,
    integer: `Number(${read})`,
    number: `Number(${read})`,
    datetime: `new Date(String(${read})).toISOString()`,
    boolean: `${read} === 'on'`,
    uuid: `String(${read})`,
    json: `String(${read})`,
  };
  // A checkbox always says something; an optional field left empty is left out (its default applies).
  const assign =
    required || field.type === 'boolean' ? `${field.name}: ${converted[field.type]}` : `...(${read} ? { ${field.name}: ${converted[field.type]} } : {})`;
  const input: FormField['input'] =
    field.type === 'enum' ? 'select' : field.type === 'boolean' ? 'checkbox' : field.type === 'integer' || field.type === 'number' ? 'number' : field.type === 'datetime' ? 'datetime-local' : 'text';
  const value = `record?.${field.name}`;
  const initial =
    field.type === 'boolean' ? `defaultChecked={${value} ?? false}` : field.type === 'datetime' ? `defaultValue={dateTimeInputValue(${value})}` : `defaultValue={${value} ?? ''}`;
  return {
    name: field.name,
    label: sentence(field.name),
    input,
    required,
    options: field.values,
    minLength: field.type === 'string' || field.type === 'text' ? field.minLength : undefined,
    maxLength: field.type === 'string' || field.type === 'text' ? field.maxLength : undefined,
    assign,
    clearable: field.nullable && field.type !== 'boolean',
    initial,
  };
}

function column(field: Field): { label: string; cell: string } {
  const value = `row.${field.name}`;
  const cell =
    field.type === 'datetime'
      ? `{${value} ? new Date(${value}).toLocaleString() : '—'}`
      : field.type === 'boolean'
        ? `{${value} ? 'yes' : 'no'}`
        : field.nullable
          ? `{${value} ?? '—'}`
          : `{${value}}`;
  return { label: sentence(field.name), cell };
}

/** `auth`: whether the backend has sign-in (a frontend always does; its entities then have events unless `events: false`). */
export function frontendEntityView(entity: Entity, auth = true): FrontendEntityView {
  const fields = entity.fields.filter(typedByPeople);
  const pascal = pascalCase(entity.name);
  const created = entity.fields.find((field) => field.name === 'createdAt');
  const pluralWords = words(entity.plural).join(' ');
  const columns = [...fields.slice(0, 4), ...(created ? [created] : [])].map(column);
  const named = fields.find((field) => (field.type === 'string' || field.type === 'text') && !field.nullable);
  return {
    name: entity.name,
    pascal,
    fileBase: kebabCase(entity.name),
    route: kebabCase(entity.plural),
    label: pluralWords.charAt(0).toUpperCase() + pluralWords.slice(1),
    labelLower: pluralWords.toLowerCase(),
    labelSingularLower: words(entity.name).join(' ').toLowerCase(),
    formFields: fields.map((field) => formField(field, pascal)),
    hasDateTime: fields.some((field) => field.type === 'datetime'),
    rowName: named ? `row.${named.name}` : 'String(row.id)',
    columns,
    columnCount: columns.length + 1,
    live: hasEvents(entity, auth),
  };
}
