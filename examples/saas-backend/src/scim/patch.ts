/**
 * SCIM PATCH (RFC 7644 section 3.5.2) applied to a resource's stored representation, as identity
 * providers send it rather than only as the RFC writes it (docs/enterprise-identity.md 6.2):
 * `op` in any case (Entra ID's `Replace`); booleans as strings (`"False"`); paths with value filters
 * (`emails[type eq "work"].value`, creating the element when there is none); no `path` and a map
 * of attributes whose keys may be dotted (`name.givenName`) or URN-prefixed; `add` on a
 * single-valued attribute replaces it; extensions this server does not keep are ignored.
 *
 * Pure: the caller reads the stored representation, calls applyUserPatch or applyGroupPatch, and
 * writes the result only when `changed` (the same PATCH twice changes nothing, so no new version).
 * A group's members are never materialised here (a group may have 10,000): its PATCH gives the
 * member changes to make instead.
 */
import { booleanOf, checkElementFilter, elementDescribedBy, elementMatches, type Element } from './element-filter.js';
import { ScimError } from './errors.js';
import { parsePath, type PatchPath, type ScimFilter } from './filter.js';
import {
  groupSchema,
  lookup,
  userSchema,
  type AttributeSpec,
  type ResourceSchema,
  type SchemaAttributes,
  type SimpleType,
  type SubAttribute,
} from './resource-schema.js';

export const patchOpSchema = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

/** A resource as stored: its attributes, extensions under their URN. */
export type ScimResource = Record<string, unknown>;

export interface PatchOperation {
  op: 'add' | 'replace' | 'remove';
  /** As sent, for the details of errors. */
  pathText?: string;
  path?: PatchPath;
  value?: unknown;
}

export interface PatchResult {
  resource: ScimResource;
  /** false when the new representation is deep-equal to the stored one. */
  changed: boolean;
}

/**
 * What a group PATCH does to its members, to apply in this order: with `removeAll`, every current
 * member leaves; then `remove` leave; then `add` join (those already in stay). `replace`, present
 * whenever `removeAll` is, is the whole membership afterwards (the same as `add` then), for a
 * caller that would rather remove only those not in it than remove everyone and add them back.
 */
export interface MemberChanges {
  add: string[];
  remove: string[];
  removeAll: boolean;
  replace?: string[];
}

export interface GroupPatchResult extends PatchResult {
  members: MemberChanges;
}

/** Applies a PatchOp `body` to a stored User. */
export function applyUserPatch(stored: ScimResource, body: unknown): PatchResult {
  const operations = readPatchOperations(body);
  const editor = new ResourceEditor(structuredClone(stored), userSchema);
  for (const operation of operations) editor.apply(operation);
  const resource = editor.finish();
  return { resource, changed: !deepEqual(stored, resource) };
}

/** Applies a PatchOp `body` to a stored Group (`displayName`, `externalId`); members come back as changes. */
export function applyGroupPatch(stored: ScimResource, body: unknown): GroupPatchResult {
  const operations = readPatchOperations(body);
  const members = new MemberTracker();
  const editor = new ResourceEditor(structuredClone(stored), groupSchema, members);
  for (const operation of operations) editor.apply(operation);
  const resource = editor.finish();
  return { resource, changed: !deepEqual(stored, resource), members: members.changes() };
}

/** Checks a PatchOp body (its `schemas` and `Operations`) and reads its operations and paths. */
export function readPatchOperations(body: unknown): PatchOperation[] {
  if (!isObject(body)) throw invalidSyntax(`The body must be a JSON object with "schemas": ["${patchOpSchema}"] and "Operations"`);
  const schemas = memberOf(body, 'schemas');
  const listsPatchOp = Array.isArray(schemas) && schemas.some((urn) => typeof urn === 'string' && urn.toLowerCase() === patchOpSchema.toLowerCase());
  if (!listsPatchOp) throw invalidSyntax(`"schemas" must list "${patchOpSchema}"`);
  const operations = memberOf(body, 'Operations');
  if (!Array.isArray(operations) || operations.length === 0) throw invalidSyntax('"Operations" must be a non-empty array');
  return operations.map(readOperation);
}

function readOperation(operation: unknown, index: number): PatchOperation {
  const where = `Operations[${index}]`;
  if (!isObject(operation)) throw invalidSyntax(`${where} must be an object`);
  const written = memberOf(operation, 'op');
  const op = typeof written === 'string' ? written.toLowerCase() : '';
  if (op !== 'add' && op !== 'replace' && op !== 'remove') {
    throw invalidSyntax(`${where}.op must be "add", "replace" or "remove", not ${JSON.stringify(written) ?? 'missing'}`);
  }
  const pathText = memberOf(operation, 'path');
  if (pathText !== undefined && pathText !== null && typeof pathText !== 'string') {
    throw new ScimError(400, 'invalidPath', `${where}.path must be a string`);
  }
  const value = memberOf(operation, 'value');
  const hasPath = typeof pathText === 'string' && pathText.trim() !== '';
  if (op === 'remove' && !hasPath) throw new ScimError(400, 'noTarget', `${where}: "remove" needs a "path"`);
  if (op !== 'remove' && value === undefined) throw invalidSyntax(`${where}: "${op}" needs a "value"`);
  return {
    op,
    ...(hasPath ? { pathText, path: parsePathOf(pathText, `${where}.path`) } : {}),
    ...(value !== undefined ? { value } : {}),
  };
}

/** Where an attribute lives: the resource itself, or an extension's object under its URN. */
interface Place {
  attributes: SchemaAttributes;
  /** The extension's URN, or undefined for the core schema. */
  extension?: string;
}

class ResourceEditor {
  /** Extensions this PATCH wrote to: `schemas` is brought in line with them at the end. */
  private readonly touchedExtensions = new Set<string>();

  constructor(
    private readonly resource: ScimResource,
    private readonly schema: ResourceSchema,
    private readonly members?: MemberTracker,
  ) {}

  apply(operation: PatchOperation): void {
    if (operation.path) {
      this.applyAt(operation.op, operation.path, operation.value, operation.pathText ?? '', false);
    } else {
      this.applyMap(operation.op as 'add' | 'replace', operation.value, false);
    }
  }

  /** The resource after every operation. */
  finish(): ScimResource {
    const schemas = this.resource.schemas;
    if (Array.isArray(schemas)) {
      for (const urn of this.touchedExtensions) {
        const present = isObject(this.resource[urn]);
        const listed = schemas.findIndex((entry) => typeof entry === 'string' && entry.toLowerCase() === urn.toLowerCase());
        if (present && listed === -1) schemas.push(urn);
        if (!present && listed !== -1) schemas.splice(listed, 1);
      }
    }
    return this.resource;
  }

  /** `add` or `replace` without a path: `value` maps attributes (`name.givenName`, `urn:...:department`) to values. */
  private applyMap(op: 'add' | 'replace', value: unknown, insideCoreSchema: boolean): void {
    if (!isObject(value)) throw invalidValue(`"${op}" without a "path" takes an object of attributes as its "value"`);
    for (const [key, item] of Object.entries(value)) {
      // `{"urn:ietf:params:scim:schemas:core:2.0:User": {...}}`, once: a body cannot nest it to exhaust the stack.
      if (!insideCoreSchema && sameName(key, this.schema.core.urn)) {
        this.applyMap(op, item, true);
        continue;
      }
      const extension = this.schema.extensions.find((candidate) => sameName(key, candidate.urn));
      if (extension) {
        this.applyToExtension(op, extension, item);
        continue;
      }
      this.applyAt(op, parsePathOf(key, `the attribute "${key}" of "value"`), item, key, true);
    }
  }

  /** One operation at `path`; `fromMap`: the path is a key of a map of attributes (read-only ones are skipped). */
  private applyAt(op: PatchOperation['op'], path: PatchPath, value: unknown, pathText: string, fromMap: boolean): void {
    const place = this.placeOf(path, pathText);
    if (place === 'ignored') return;
    if ('wholeExtension' in place) return this.applyToExtension(op, place.wholeExtension, value);
    const attribute = lookup(place.attributes.attributes, path.attribute);
    if (!attribute) {
      throw new ScimError(400, 'invalidPath', `Invalid path "${pathText}": a ${this.schema.resource} has no attribute "${path.attribute}"`);
    }
    const { name, spec } = attribute;
    if (spec.type === 'readOnly') {
      if (fromMap) return;
      throw new ScimError(400, 'mutability', `"${name}" is read-only`);
    }
    if (spec.type === 'writeOnly') return;
    if (spec.type === 'members') return this.members!.apply(op, path, value, pathText);

    const container = this.containerOf(place);
    if (spec.type === 'complex') applyToComplex(op, container, name, spec, path, value, pathText);
    else if (spec.type === 'multiValued') applyToMultiValued(op, container, name, spec.subAttributes, path, value, pathText);
    else applyToSimple(op, container, name, spec, path, value, pathText);
    this.tidy(place);
  }

  /** Which schema `path` writes to, or the whole extension object it names (`urn:...:enterprise:2.0:User`). */
  private placeOf(path: PatchPath, pathText: string): Place | { wholeExtension: SchemaAttributes } | 'ignored' {
    if (path.schema === undefined || sameName(path.schema, this.schema.core.urn)) return { attributes: this.schema.core };
    const whole = this.schema.extensions.find((candidate) => sameName(`${path.schema}:${path.attribute}`, candidate.urn));
    if (whole && path.subAttribute === undefined && path.filter === undefined) return { wholeExtension: whole };
    const extension = this.schema.extensions.find((candidate) => sameName(path.schema!, candidate.urn));
    if (extension) return { attributes: extension, extension: extension.urn };
    if (/^urn:ietf:params:scim:schemas:core:/i.test(path.schema)) {
      throw new ScimError(400, 'invalidPath', `Invalid path "${pathText}": ${path.schema} is not the schema of a ${this.schema.resource}`);
    }
    // An extension this server does not keep (a custom one of the identity provider's): accepted, not stored.
    return 'ignored';
  }

  /** `add`/`replace` of a whole extension merges the attributes given; `remove` removes them all. */
  private applyToExtension(op: PatchOperation['op'], extension: SchemaAttributes, value: unknown): void {
    if (op === 'remove' || value === null) {
      delete this.resource[extension.urn];
      this.touchedExtensions.add(extension.urn);
      return;
    }
    if (!isObject(value)) throw invalidValue(`${extension.urn} takes an object of its attributes`);
    for (const [key, item] of Object.entries(value)) {
      const path = parsePathOf(key, `the attribute "${key}" of ${extension.urn}`);
      // Plain names only: an extension inside an extension would let a body nest it to exhaust the stack.
      if (path.schema !== undefined) throw invalidValue(`the attributes of ${extension.urn} are named without a schema, not "${key}"`);
      this.applyAt(op, { ...path, schema: extension.urn }, item, key, true);
    }
  }

  private containerOf(place: Place): Record<string, unknown> {
    if (place.extension === undefined) return this.resource;
    this.touchedExtensions.add(place.extension);
    const current = this.resource[place.extension];
    if (isObject(current)) return current;
    const created: Record<string, unknown> = {};
    this.resource[place.extension] = created;
    return created;
  }

  /** An extension left without attributes is removed (unassigned, RFC 7643 2.5). */
  private tidy(place: Place): void {
    if (place.extension === undefined) return;
    const object = this.resource[place.extension];
    if (isObject(object) && Object.keys(object).length === 0) delete this.resource[place.extension];
  }
}

/**
 * `name`, the enterprise `manager`: the sub-attributes given are written and the others left as
 * they were (RFC 7644 3.5.2.3), for `add` and `replace` alike.
 */
function applyToComplex(
  op: PatchOperation['op'],
  container: Record<string, unknown>,
  name: string,
  spec: Extract<AttributeSpec, { type: 'complex' }>,
  path: PatchPath,
  value: unknown,
  pathText: string,
): void {
  if (path.filter) throw new ScimError(400, 'invalidPath', `Invalid path "${pathText}": "${name}" is not multi-valued, it takes no filter`);
  const object = isObject(container[name]) ? container[name] : {};
  if (path.subAttribute !== undefined) {
    const sub = lookup(spec.subAttributes, path.subAttribute);
    if (!sub) throw new ScimError(400, 'invalidPath', `Invalid path "${pathText}": "${name}" has no sub-attribute "${path.subAttribute}"`);
    if (op === 'remove' || value === null) delete object[sub.name];
    else object[sub.name] = simpleValue(sub.type, value, `${name}.${sub.name}`);
  } else if (op === 'remove' || value === null) {
    delete container[name];
    return;
  } else {
    const given = spec.shorthand !== undefined && typeof value === 'string' ? { [spec.shorthand]: value } : value;
    if (!isObject(given)) throw invalidValue(`"${name}" takes an object of its sub-attributes`);
    for (const [key, item] of Object.entries(given)) {
      const sub = lookup(spec.subAttributes, key);
      if (!sub) throw invalidValue(`"${name}" has no sub-attribute "${key}"`);
      if (item === null) delete object[sub.name];
      else object[sub.name] = simpleValue(sub.type, item, `${name}.${sub.name}`);
    }
  }
  if (Object.keys(object).length > 0) container[name] = object;
  else delete container[name];
}

function applyToSimple(
  op: PatchOperation['op'],
  container: Record<string, unknown>,
  name: string,
  spec: { type: SimpleType; required?: boolean },
  path: PatchPath,
  value: unknown,
  pathText: string,
): void {
  if (path.subAttribute !== undefined || path.filter) {
    throw new ScimError(400, 'invalidPath', `Invalid path "${pathText}": "${name}" has no sub-attributes`);
  }
  if (op === 'remove' || value === null) {
    if (spec.required) throw new ScimError(400, 'mutability', `"${name}" is required and cannot be removed`);
    delete container[name];
    return;
  }
  const written = simpleValue(spec.type, value, name);
  if (spec.required && written === '') throw invalidValue(`"${name}" cannot be empty`);
  container[name] = written;
}

/**
 * `emails`, `addresses`, ...: RFC 7644 3.5.2's rules for multi-valued attributes. Without a filter,
 * `add` appends (a value already there is not added twice), `replace` replaces the list and
 * `remove` removes it; with one, the operation applies to the matching elements, and `add` or
 * `replace` creates the element the filter describes when none matches.
 */
function applyToMultiValued(
  op: PatchOperation['op'],
  container: Record<string, unknown>,
  name: string,
  subAttributes: Map<string, SubAttribute>,
  path: PatchPath,
  value: unknown,
  pathText: string,
): void {
  let list: Element[] = Array.isArray(container[name]) ? container[name].filter(isObject) : [];
  if (path.filter) checkElementFilter(path.filter, name, subAttributes);
  const sub = path.subAttribute === undefined ? undefined : lookup(subAttributes, path.subAttribute);
  if (path.subAttribute !== undefined && !sub) {
    throw new ScimError(400, 'invalidPath', `Invalid path "${pathText}": "${name}" has no sub-attribute "${path.subAttribute}"`);
  }
  const elementsOf = (given: unknown) => (Array.isArray(given) ? given : [given]).map((item) => elementOf(item, name, subAttributes));
  let written: Element[] = [];

  if (!path.filter && !sub) {
    if (op === 'remove') {
      // Entra ID's older form names the values to remove in `value` rather than in a filter.
      const named = Array.isArray(value) ? elementsOf(value).map((element) => element.value) : [];
      list = named.length > 0 ? list.filter((element) => !named.some((given) => sameValue(element.value, given))) : [];
    } else {
      const given = value === null ? [] : elementsOf(value);
      if (op === 'replace') list = given;
      else for (const element of given) if (!list.some((existing) => deepEqual(existing, element))) list.push(element);
      written = given;
    }
  } else {
    const selected = path.filter ? list.filter((element) => elementMatches(path.filter!, element)) : list;
    if (op === 'remove') {
      if (path.filter && selected.length === 0) throw new ScimError(400, 'noTarget', `No element of "${name}" matches "${pathText}"`);
      if (sub) for (const element of selected) delete element[sub.name];
      list = list.filter((element) => (sub ? Object.keys(element).length > 0 : !selected.includes(element)));
    } else if (selected.length === 0) {
      const described = path.filter ? elementDescribedBy(path.filter, subAttributes) : {};
      if (!described) {
        throw new ScimError(400, 'noTarget', `No element of "${name}" matches "${pathText}", and its filter does not say which to create (eq comparisons joined by and do)`);
      }
      const element = sub ? { ...described, [sub.name]: simpleValue(sub.type, value, `${name}.${sub.name}`) } : { ...described, ...elementOf(value, name, subAttributes) };
      list.push(element);
      written = [element];
    } else {
      for (const element of selected) {
        if (sub && value === null) delete element[sub.name];
        else if (sub) element[sub.name] = simpleValue(sub.type, value, `${name}.${sub.name}`);
        else if (op === 'replace') replaceContents(element, elementOf(value, name, subAttributes));
        else Object.assign(element, elementOf(value, name, subAttributes));
      }
      written = selected;
    }
  }

  // One primary at most (RFC 7643 2.4): the element just made primary takes it from the others.
  const primary = [...written].reverse().find((element) => element.primary === true);
  if (primary) for (const element of list) if (element !== primary && element.primary === true) element.primary = false;
  if (list.length > 0) container[name] = list;
  else delete container[name];
}

/** One element of a multi-valued attribute, its sub-attributes checked and named as stored. */
function elementOf(given: unknown, name: string, subAttributes: Map<string, SubAttribute>): Element {
  if (!isObject(given)) throw invalidValue(`"${name}" takes objects such as {"value": "...", "type": "work"}`);
  const element: Element = {};
  for (const [key, item] of Object.entries(given)) {
    if (item === null || item === undefined) continue;
    const sub = lookup(subAttributes, key);
    if (!sub) throw invalidValue(`"${name}" has no sub-attribute "${key}"`);
    element[sub.name] = simpleValue(sub.type, item, `${name}.${sub.name}`);
  }
  if (Object.keys(element).length === 0) throw invalidValue(`an element of "${name}" needs at least one sub-attribute`);
  return element;
}

function simpleValue(type: SimpleType, value: unknown, name: string): string | boolean {
  if (type === 'string') {
    if (typeof value !== 'string') throw invalidValue(`"${name}" takes a string, not ${describe(value)}`);
    return value;
  }
  const flag = booleanOf(value);
  if (flag === undefined) throw invalidValue(`"${name}" takes true or false, not ${describe(value)}`);
  return flag;
}

/**
 * A group's member changes, in the order the operations came: while the membership is known whole
 * (after a `replace` or a `remove` of all), `exact` holds it; before, adds and removes accumulate.
 */
class MemberTracker {
  private exact?: Set<string>;
  private readonly added = new Set<string>();
  private readonly removed = new Set<string>();

  apply(op: PatchOperation['op'], path: PatchPath, value: unknown, pathText: string): void {
    if (path.subAttribute !== undefined) {
      throw new ScimError(400, 'invalidPath', `Invalid path "${pathText}": members are added, removed or replaced whole ("members", or members[value eq "<id>"] to remove one)`);
    }
    if (path.filter) {
      const ids = op === 'remove' ? memberIdsSelectedBy(path.filter) : undefined;
      if (!ids) throw new ScimError(400, 'invalidPath', `Invalid path "${pathText}": a filter on members can only remove them, by value eq "<id>"`);
      return this.remove(ids);
    }
    if (op === 'remove' && (value === undefined || value === null)) return this.replace([]);
    const ids = memberIdsOf(value);
    if (op === 'add') this.add(ids);
    else if (op === 'remove') this.remove(ids);
    else this.replace(ids);
  }

  changes(): MemberChanges {
    if (this.exact) return { add: [...this.exact], remove: [], removeAll: true, replace: [...this.exact] };
    return { add: [...this.added], remove: [...this.removed], removeAll: false };
  }

  private add(ids: string[]): void {
    for (const id of ids) {
      if (this.exact) this.exact.add(id);
      else {
        this.removed.delete(id);
        this.added.add(id);
      }
    }
  }

  private remove(ids: string[]): void {
    for (const id of ids) {
      if (this.exact) this.exact.delete(id);
      else {
        this.added.delete(id);
        this.removed.add(id);
      }
    }
  }

  private replace(ids: string[]): void {
    this.exact = new Set(ids);
    this.added.clear();
    this.removed.clear();
  }
}

/** `[{"value": "<id>", "display": "..."}]` (or one such object; null: none) -> the ids. */
function memberIdsOf(value: unknown): string[] {
  if (value === null) return [];
  return (Array.isArray(value) ? value : [value]).map((member) => {
    const id = isObject(member) ? memberOf(member, 'value') : undefined;
    if (typeof id !== 'string' || id === '') throw invalidValue('"members" takes a list of {"value": "<id of a User>"}');
    return id;
  });
}

/** `value eq "<id>"`, or several joined by `or`: the ids; any other filter: undefined. */
function memberIdsSelectedBy(filter: ScimFilter): string[] | undefined {
  if (filter.kind === 'or') {
    const parts = filter.filters.map(memberIdsSelectedBy);
    return parts.every((part) => part !== undefined) ? parts.flat() : undefined;
  }
  const selectsById =
    filter.kind === 'compare' &&
    filter.operator === 'eq' &&
    typeof filter.value === 'string' &&
    filter.path.schema === undefined &&
    filter.path.subAttribute === undefined &&
    sameName(filter.path.attribute, 'value');
  return selectsById ? [filter.value as string] : undefined;
}

function parsePathOf(text: string, where: string): PatchPath {
  try {
    return parsePath(text);
  } catch (error) {
    if (error instanceof ScimError) throw new ScimError(error.status, error.scimType, `${where}: ${error.detail}`);
    throw error;
  }
}

function replaceContents(element: Element, contents: Element): void {
  for (const key of Object.keys(element)) delete element[key];
  Object.assign(element, contents);
}

/** Two values of a multi-valued attribute's `value`: strings compared case-insensitively. */
function sameValue(left: unknown, right: unknown): boolean {
  return typeof left === 'string' && typeof right === 'string' ? left.toLowerCase() === right.toLowerCase() : left === right;
}

function sameName(left: string, right: string): boolean {
  return left.toLowerCase() === right.toLowerCase();
}

/** A member of a JSON object whose name may come in any case (SCIM's names are case-insensitive). */
function memberOf(object: Record<string, unknown>, name: string): unknown {
  if (Object.hasOwn(object, name)) return object[name];
  const key = Object.keys(object).find((candidate) => sameName(candidate, name));
  return key === undefined ? undefined : object[key];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** JSON values compared by content: key order does not matter, array order does. */
export function deepEqual(left: unknown, right: unknown): boolean {
  if (left === right) return true;
  if (Array.isArray(left)) return Array.isArray(right) && left.length === right.length && left.every((item, index) => deepEqual(item, right[index]));
  if (!isObject(left) || !isObject(right)) return false;
  const keys = Object.keys(left);
  return keys.length === Object.keys(right).length && keys.every((key) => Object.hasOwn(right, key) && deepEqual(left[key], right[key]));
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (isObject(value)) return 'an object';
  return JSON.stringify(value) ?? String(value);
}

function invalidSyntax(detail: string): ScimError {
  return new ScimError(400, 'invalidSyntax', detail);
}

function invalidValue(detail: string): ScimError {
  return new ScimError(400, 'invalidValue', detail);
}
