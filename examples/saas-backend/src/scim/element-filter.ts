/**
 * A PATCH path's value filter (`emails[type eq "work"]`) applied in memory to the elements of a
 * multi-valued attribute, the way filter-sql.ts applies a filter in the database: sub-attribute
 * names and strings compared case-insensitively (RFC 7643's caseExact false for `type`, `value`,
 * `display`), booleans also given as strings ("True").
 */
import { ScimError } from './errors.js';
import type { ComparisonOperator, ComparisonValue, ScimFilter } from './filter.js';
import { lookup, type SubAttribute } from './resource-schema.js';

export type Element = Record<string, unknown>;

/** Refuses a filter naming anything but `subAttributes` (a typo would otherwise select nothing). */
export function checkElementFilter(filter: ScimFilter, attribute: string, subAttributes: Map<string, SubAttribute>): void {
  switch (filter.kind) {
    case 'and':
    case 'or':
      for (const part of filter.filters) checkElementFilter(part, attribute, subAttributes);
      return;
    case 'not':
      return checkElementFilter(filter.filter, attribute, subAttributes);
    case 'valuePath':
      throw new ScimError(400, 'invalidPath', `Invalid path: the filter of ${attribute}[...] cannot hold another [...]`);
    default: {
      const { schema, attribute: name, subAttribute } = filter.path;
      if (schema === undefined && subAttribute === undefined && lookup(subAttributes, name)) return;
      const known = [...subAttributes.values()].map((sub) => sub.name).join(', ');
      throw new ScimError(400, 'invalidPath', `Invalid path: ${attribute} has no sub-attribute '${name}${subAttribute ? `.${subAttribute}` : ''}'; it has ${known}`);
    }
  }
}

/** Whether `element` matches `filter` (checked by checkElementFilter). */
export function elementMatches(filter: ScimFilter, element: Element): boolean {
  switch (filter.kind) {
    case 'and':
      return filter.filters.every((part) => elementMatches(part, element));
    case 'or':
      return filter.filters.some((part) => elementMatches(part, element));
    case 'not':
      return !elementMatches(filter.filter, element);
    case 'valuePath':
      return false;
    case 'present':
      return isPresent(subAttributeOf(element, filter.path.attribute));
    case 'compare':
      return compare(subAttributeOf(element, filter.path.attribute), filter.operator, filter.value);
  }
}

/**
 * The element a filter describes, when it is `sub eq value` comparisons joined by `and`
 * (`type eq "work"` -> `{ type: 'work' }`): what `replace emails[type eq "work"].value` creates
 * when the user has no work address yet. Otherwise undefined: there is nothing sure to create.
 */
export function elementDescribedBy(filter: ScimFilter, subAttributes: Map<string, SubAttribute>): Element | undefined {
  if (filter.kind === 'and') {
    const parts = filter.filters.map((part) => elementDescribedBy(part, subAttributes));
    return parts.every((part) => part !== undefined) ? Object.assign({}, ...parts) : undefined;
  }
  if (filter.kind !== 'compare' || filter.operator !== 'eq' || filter.value === null) return undefined;
  const sub = lookup(subAttributes, filter.path.attribute);
  if (!sub) return undefined;
  const value = sub.type === 'boolean' ? booleanOf(filter.value) : filter.value;
  return value === undefined ? undefined : { [sub.name]: value };
}

/** true and false, also as the strings Entra ID sends ("False", "true"). */
export function booleanOf(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  return undefined;
}

function subAttributeOf(element: Element, name: string): unknown {
  const wanted = name.toLowerCase();
  const key = Object.keys(element).find((candidate) => candidate.toLowerCase() === wanted);
  return key === undefined ? undefined : element[key];
}

function isPresent(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '' && !(Array.isArray(value) && value.length === 0);
}

function compare(actual: unknown, operator: ComparisonOperator, expected: ComparisonValue): boolean {
  if (expected === null) return operator === 'eq' ? !isPresent(actual) : operator === 'ne' && isPresent(actual);
  if (!isPresent(actual)) return operator === 'ne';
  if (typeof expected === 'boolean') {
    const flag = booleanOf(actual);
    if (operator === 'eq') return flag === expected;
    return operator === 'ne' && flag !== expected;
  }
  if (typeof expected === 'number') {
    const number = typeof actual === 'number' ? actual : Number.NaN;
    return ordered(number === expected ? 0 : number < expected ? -1 : number > expected ? 1 : Number.NaN, operator);
  }
  if (typeof actual !== 'string') return operator === 'ne';
  const left = actual.toLowerCase();
  const right = expected.toLowerCase();
  switch (operator) {
    case 'co':
      return left.includes(right);
    case 'sw':
      return left.startsWith(right);
    case 'ew':
      return left.endsWith(right);
    default:
      return ordered(left === right ? 0 : left < right ? -1 : 1, operator);
  }
}

/** `operator` applied to the sign of a comparison (NaN: the values do not compare). */
function ordered(sign: number, operator: ComparisonOperator): boolean {
  switch (operator) {
    case 'eq':
      return sign === 0;
    case 'ne':
      return sign !== 0;
    case 'gt':
      return sign > 0;
    case 'ge':
      return sign >= 0;
    case 'lt':
      return sign < 0;
    case 'le':
      return sign <= 0;
    default:
      return false;
  }
}
