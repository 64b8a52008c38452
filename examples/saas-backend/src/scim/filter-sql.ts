/**
 * A parsed SCIM filter (filter.ts) as one parameterised SQL condition, over a fixed map of the
 * attributes a directory may filter by. Users are read as `u` (`authstrap_scim_user`), groups as
 * `g` (`authstrap_scim_group`); the caller adds the directory's own condition beside it.
 *
 * Values only ever travel as parameters (`$n`); attribute names only ever pick an entry of the
 * map below, so nothing of the filter's text reaches the SQL.
 *
 * SCIM's semantics, and how they are kept:
 * - Absent attributes: `ne` matches them (`IS DISTINCT FROM`), and `not ( )` turns an unknown
 *   (NULL) into "not matching" before negating it, so `not (name.givenName eq "x")` finds the
 *   users without a given name too. Elsewhere NULL already reads as "no match".
 * - Multi-valued attributes (`emails`, `members`) match when any of their values does (RFC 7644
 *   section 3.4.2.2), `emails[...]` when one element matches the whole bracket.
 * - Case: `userName`, `displayName`, names and addresses compare case-insensitively (RFC 7643's
 *   caseExact false); `externalId` and `id` exactly.
 */
import { booleanOf } from './element-filter.js';
import { ScimError } from './errors.js';
import type { AttributePath, ComparisonOperator, ComparisonValue, ScimFilter } from './filter.js';
import { coreGroupSchema, coreUserSchema } from './resource-schema.js';

export type ScimResourceType = 'User' | 'Group';

/**
 * `filter` as a boolean SQL expression in parentheses, over `u` (User) or `g` (Group); its values
 * are appended to `params` and referred to as `$n`. An attribute or operator outside the map is a
 * ScimError(400, 'invalidFilter') naming what is supported.
 */
export function compileFilter(filter: ScimFilter, resource: ScimResourceType, params: unknown[]): string {
  return `(${compile(filter, resource === 'User' ? userScope : groupScope, params)})`;
}

type ValueType = 'uuid' | 'text' | 'boolean' | 'dateTime';

/** One value per row: a column, or a field of the stored jsonb. */
interface ScalarAttribute {
  kind: 'scalar';
  /** SQL of the value; NULL when the resource has none. */
  sql: string;
  type: ValueType;
  /** Text only: compared as written (true) or lowercased on both sides (false). */
  caseExact?: boolean;
  /**
   * Text only: the column already holds the value lowercased, so only the filter's value is
   * lowered. The column is then compared bare, and its index serves the filter: under row-level
   * security a function of the column (`lower(...)`, not leakproof) is evaluated after the policy,
   * row by row, and no index on `lower(column)` is used.
   */
  storedLowercase?: boolean;
}

/** A multi-valued attribute: its values are matched through a subquery over its elements. */
interface MultiValuedAttribute {
  kind: 'multiValued';
  /** `emails eq "x"`, `emails.value co "x"`: some value matches. */
  compare(operator: ComparisonOperator, value: ComparisonValue, params: unknown[]): string;
  /** `emails pr`: there is at least one value. */
  present(): string;
  /** `emails[filter]`: some element matches `filter`, whose paths are sub-attributes. */
  elements(filter: ScimFilter, params: unknown[]): string;
}

type Attribute = ScalarAttribute | MultiValuedAttribute;

/** The attributes one may filter by, by their names lowercased (`name.givenname`). */
interface Scope {
  attributes: Map<string, { written: string; attribute: Attribute }>;
  /** The schema URN an attribute path may be prefixed with (a resource's, not an element's). */
  schema?: string;
  /** Inside `emails[...]`: the multi-valued attribute whose elements the paths name. */
  elementsOf?: string;
}

function scopeOf(where: { schema: string } | { elementsOf: string }, entries: [written: string, attribute: Attribute][]): Scope {
  return { ...where, attributes: new Map(entries.map(([written, attribute]) => [written.toLowerCase(), { written, attribute }])) };
}

const text = (sql: string, caseExact = false, storedLowercase = false): ScalarAttribute => ({ kind: 'scalar', sql, type: 'text', caseExact, storedLowercase });
const scalar = (sql: string, type: ValueType): ScalarAttribute => ({ kind: 'scalar', sql, type });

/** `emails` in the jsonb representation: each element read as `e."element"`. */
const emailElementScope = scopeOf({ elementsOf: 'emails' }, [
  ['value', text(`(e."element"->>'value')`)],
  ['type', text(`(e."element"->>'type')`)],
  ['display', text(`(e."element"->>'display')`)],
  // A stored `primary` that is not a JSON boolean counts as absent rather than failing the cast.
  ['primary', scalar(`(CASE jsonb_typeof(e."element"->'primary') WHEN 'boolean' THEN (e."element"->>'primary')::boolean END)`, 'boolean')],
]);

/** `emails.value` through the lowercased `emails` text[] column (its GIN index), as `e."address"`. */
const emailAddressScope = scopeOf({ elementsOf: 'emails' }, [['value', text(`e."address"`)]]);

const userEmails: MultiValuedAttribute = {
  kind: 'multiValued',
  compare(operator, value, params) {
    return this.elements({ kind: 'compare', path: { attribute: 'value' }, operator, value }, params);
  },
  present: () => `cardinality(u."emails") > 0`,
  elements(filter, params) {
    // `emails.value eq "x"`, `emails[value eq "x"]`: the index's form, the array holding the lowercased address.
    if (filter.kind === 'compare' && filter.operator === 'eq' && typeof filter.value === 'string' && namesOnly(filter, ['value'])) {
      return `u."emails" @> ARRAY[lower(${parameter(params, filter.value)}::text)]`;
    }
    if (namesOnly(filter, ['value'])) {
      return `EXISTS (SELECT 1 FROM unnest(u."emails") AS e("address") WHERE ${compile(filter, emailAddressScope, params)})`;
    }
    const emails = `u."attributes"->'emails'`;
    const elements = `jsonb_array_elements(CASE jsonb_typeof(${emails}) WHEN 'array' THEN ${emails} ELSE '[]'::jsonb END)`;
    return `EXISTS (SELECT 1 FROM ${elements} AS e("element") WHERE ${compile(filter, emailElementScope, params)})`;
  },
};

const memberScope = scopeOf({ elementsOf: 'members' }, [['value', scalar(`m."scimUserId"`, 'uuid')]]);
const groupMembers = (condition: string) =>
  `EXISTS (SELECT 1 FROM "authstrap_scim_group_member" m WHERE m."groupId" = g."id"${condition ? ` AND ${condition}` : ''})`;

const members: MultiValuedAttribute = {
  kind: 'multiValued',
  compare(operator, value, params) {
    return this.elements({ kind: 'compare', path: { attribute: 'value' }, operator, value }, params);
  },
  present: () => groupMembers(''),
  elements: (filter, params) => groupMembers(compile(filter, memberScope, params)),
};

const userScope = scopeOf({ schema: coreUserSchema }, [
  ['id', scalar(`u."id"`, 'uuid')],
  // The column is the name lowercased (the resource keeps it as sent, in `attributes`).
  ['userName', text(`u."userName"`, false, true)],
  ['externalId', text(`u."externalId"`, true)],
  ['displayName', text(`u."displayName"`)],
  ['active', scalar(`u."active"`, 'boolean')],
  ['emails', userEmails],
  ['name.givenName', text(`(u."attributes"->'name'->>'givenName')`)],
  ['name.familyName', text(`(u."attributes"->'name'->>'familyName')`)],
  ['meta.lastModified', scalar(`u."updatedAt"`, 'dateTime')],
]);

const groupScope = scopeOf({ schema: coreGroupSchema }, [
  ['id', scalar(`g."id"`, 'uuid')],
  ['displayName', text(`g."displayName"`)],
  ['externalId', text(`g."externalId"`, true)],
  ['members', members],
  ['meta.lastModified', scalar(`g."updatedAt"`, 'dateTime')],
]);

function compile(filter: ScimFilter, scope: Scope, params: unknown[]): string {
  switch (filter.kind) {
    case 'and':
    case 'or':
      return `(${filter.filters.map((part) => compile(part, scope, params)).join(filter.kind === 'and' ? ' AND ' : ' OR ')})`;
    case 'not':
      // An unknown (NULL) inside is "no match" before it is negated: absent values match `not`.
      return `NOT COALESCE(${compile(filter.filter, scope, params)}, false)`;
    case 'valuePath': {
      const attribute = filter.path.subAttribute === undefined ? multiValued(filter.path, scope) : undefined;
      if (!attribute) throw unsupported(filter.path, scope, `${written(filter.path)}[...]`);
      return attribute.elements(filter.filter, params);
    }
    case 'present':
    case 'compare': {
      const { attribute, subAttribute } = resolve(filter.path, scope);
      if (attribute.kind === 'multiValued') {
        // `emails.type eq "work"` is `emails[type eq "work"]`; `emails` alone means its values.
        if (subAttribute !== undefined && subAttribute.toLowerCase() !== 'value') {
          return attribute.elements({ ...filter, path: { attribute: subAttribute } }, params);
        }
        return filter.kind === 'present' ? attribute.present() : attribute.compare(filter.operator, filter.value, params);
      }
      return filter.kind === 'present' ? presentScalar(attribute) : compareScalar(attribute, filter, params);
    }
  }
}

/** The map's entry for `path`; a multi-valued one comes with the sub-attribute left to apply. */
function resolve(path: AttributePath, scope: Scope): { attribute: Attribute; subAttribute?: string } {
  const whole = multiValued(path, scope);
  if (whole) return { attribute: whole, subAttribute: path.subAttribute };
  const key = `${path.attribute}${path.subAttribute !== undefined ? `.${path.subAttribute}` : ''}`.toLowerCase();
  const found = schemaAllowed(path, scope) ? scope.attributes.get(key) : undefined;
  if (!found) throw unsupported(path, scope);
  return { attribute: found.attribute };
}

/** The multi-valued attribute `path` names (`emails`, `emails.type`), if it names one. */
function multiValued(path: AttributePath, scope: Scope): MultiValuedAttribute | undefined {
  const entry = schemaAllowed(path, scope) ? scope.attributes.get(path.attribute.toLowerCase()) : undefined;
  return entry?.attribute.kind === 'multiValued' ? entry.attribute : undefined;
}

function schemaAllowed(path: AttributePath, scope: Scope): boolean {
  return path.schema === undefined || path.schema.toLowerCase() === scope.schema?.toLowerCase();
}

function presentScalar(attribute: ScalarAttribute): string {
  // `pr`: a value that is not empty (RFC 7644: "has a non-empty value").
  return attribute.type === 'text' ? `(${attribute.sql} IS NOT NULL AND ${attribute.sql} <> '')` : `${attribute.sql} IS NOT NULL`;
}

const sqlOperators: Record<'gt' | 'ge' | 'lt' | 'le', string> = { gt: '>', ge: '>=', lt: '<', le: '<=' };

function compareScalar(attribute: ScalarAttribute, filter: Extract<ScimFilter, { kind: 'compare' }>, params: unknown[]): string {
  const { operator, value } = filter;
  const refuse = (why: string) => new ScimError(400, 'invalidFilter', `Invalid filter: ${written(filter.path)} ${operator} ${JSON.stringify(value)}: ${why}`);
  if (value === null) {
    // `eq null` asks for an absent value, `ne null` for a present one.
    if (operator === 'eq') return `${attribute.sql} IS NULL`;
    if (operator === 'ne') return `${attribute.sql} IS NOT NULL`;
    throw refuse('only eq and ne compare with null');
  }
  switch (attribute.type) {
    case 'uuid': {
      if (operator !== 'eq' && operator !== 'ne') throw refuse('an id compares with eq or ne only');
      if (typeof value !== 'string') throw refuse('an id is a string');
      // Not an id: no row has it. Refused here rather than by PostgreSQL's cast, which would fail the statement.
      if (!isUuid(value)) return operator === 'eq' ? 'FALSE' : 'TRUE';
      const id = `${parameter(params, value.toLowerCase())}::uuid`;
      return operator === 'eq' ? `${attribute.sql} = ${id}` : `${attribute.sql} IS DISTINCT FROM ${id}`;
    }
    case 'boolean': {
      if (operator !== 'eq' && operator !== 'ne') throw refuse('a boolean compares with eq or ne only');
      const flag = booleanOf(value);
      if (flag === undefined) throw refuse('the value must be true or false');
      const bound = `${parameter(params, flag)}::boolean`;
      return operator === 'eq' ? `${attribute.sql} = ${bound}` : `${attribute.sql} IS DISTINCT FROM ${bound}`;
    }
    case 'dateTime': {
      if (operator === 'co' || operator === 'sw' || operator === 'ew') throw refuse('a date-time compares with eq, ne, gt, ge, lt or le');
      if (typeof value !== 'string' || !isDateTime(value)) throw refuse('the value must be a date-time such as "2011-05-13T04:42:34Z"');
      const bound = `${parameter(params, value)}::timestamptz`;
      if (operator === 'eq') return `${attribute.sql} = ${bound}`;
      if (operator === 'ne') return `${attribute.sql} IS DISTINCT FROM ${bound}`;
      return `${attribute.sql} ${sqlOperators[operator]} ${bound}`;
    }
    case 'text': {
      if (typeof value !== 'string') throw refuse('the value must be a string in double quotes');
      const lowered = (sql: string) => (attribute.caseExact ? sql : `lower(${sql})`);
      const column = attribute.storedLowercase ? attribute.sql : lowered(attribute.sql);
      if (operator === 'co' || operator === 'sw' || operator === 'ew') {
        const escaped = escapeLike(value);
        const pattern = operator === 'sw' ? `${escaped}%` : operator === 'ew' ? `%${escaped}` : `%${escaped}%`;
        return `${column} LIKE ${lowered(`${parameter(params, pattern)}::text`)} ESCAPE '\\'`;
      }
      const bound = lowered(`${parameter(params, value)}::text`);
      if (operator === 'eq') return `${column} = ${bound}`;
      if (operator === 'ne') return `${column} IS DISTINCT FROM ${bound}`;
      return `${column} ${sqlOperators[operator]} ${bound}`;
    }
  }
}

function parameter(params: unknown[], value: unknown): string {
  return `$${params.push(value)}`;
}

/** `%`, `_` and the escape character itself, written literally in a LIKE pattern. */
function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (character) => `\\${character}`);
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
function isUuid(value: string): boolean {
  return uuidPattern.test(value);
}

const dateTimePattern = /^\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:[Zz]|[+-]\d{2}:?\d{2})?)?$/;
function isDateTime(value: string): boolean {
  return dateTimePattern.test(value) && !Number.isNaN(Date.parse(value.replace(' ', 'T')));
}

/** Whether every attribute path in `filter` is one of `names`, without a schema or sub-attribute. */
function namesOnly(filter: ScimFilter, names: string[]): boolean {
  switch (filter.kind) {
    case 'and':
    case 'or':
      return filter.filters.every((part) => namesOnly(part, names));
    case 'not':
      return namesOnly(filter.filter, names);
    case 'valuePath':
      return false;
    default:
      return filter.path.schema === undefined && filter.path.subAttribute === undefined && names.includes(filter.path.attribute.toLowerCase());
  }
}

function written(path: AttributePath): string {
  return `${path.schema !== undefined ? `${path.schema}:` : ''}${path.attribute}${path.subAttribute !== undefined ? `.${path.subAttribute}` : ''}`;
}

function unsupported(path: AttributePath, scope: Scope, what = written(path)): ScimError {
  const supported = [...scope.attributes.values()].map(({ written: name, attribute }) =>
    attribute.kind === 'multiValued' ? `${name}, ${name}.value, ${name}[...]` : name,
  );
  const owner = scope.elementsOf !== undefined ? `${scope.elementsOf} ` : '';
  return new ScimError(400, 'invalidFilter', `Filtering ${owner}by ${what} is not supported; use one of: ${supported.join(', ')}`);
}
