import type { OpenApiDocument } from './probe-context.js';

/**
 * The generated collections a backend serves, read from its OpenAPI document (which the backend
 * builds from the same zod schemas that validate its requests): what the probes of
 * module-wiring, id-field and tenant-isolation walk. Pure.
 */
export interface Collection {
  /** As the document writes it: `/Projects`, `/Projects/{projectId}/Tasks`. */
  path: string;
  /** The entity it serves, by its schema's name (`Task`). */
  entity: string;
  /** Its routes need `x-organization-id`. */
  tenantScoped: boolean;
  /** The body of its POST (references resolved), when it has one. */
  createBody?: JsonSchema;
  /** A record as its list answers it. */
  record?: JsonSchema;
  /** A nested collection's parent: the path parameter and the parent's entity. */
  parent?: { param: string; entity: string };
  /** The methods of `<path>/{id}` (lowercase), for a flat collection. */
  itemMethods: string[];
}

export type JsonSchema = Record<string, any>;

/**
 * Whether a collection serves an entity authstrap brings (`User`, `account`, ..., whose schemas
 * the document names `User`, `Account`, ...): their routes have rules of their own (invitations,
 * one's own rows only).
 */
export const isBuiltin = (collection: Collection) => ['user', 'account', 'session', 'verification', 'organization', 'member', 'apikey'].includes(collection.entity.toLowerCase());

const flatPath = /^\/([^/{}]+)$/;
const nestedPath = /^\/([^/{}]+)\/\{([^/{}]+)\}\/([^/{}]+)$/;

export function generatedCollections(document: OpenApiDocument): Collection[] {
  const schemas = document.components?.schemas ?? {};
  const resolve = (schema: JsonSchema | undefined): JsonSchema | undefined =>
    typeof schema?.$ref === 'string' ? schemas[schema.$ref.split('/').pop()!] : schema;
  const refName = (schema: JsonSchema | undefined) => (typeof schema?.$ref === 'string' ? (schema.$ref.split('/').pop() as string) : undefined);

  const collections: Collection[] = [];
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    if (path.startsWith('/api/') || !(flatPath.test(path) || nestedPath.test(path))) continue;
    const created = item.post?.responses?.['201']?.content?.['application/json']?.schema?.properties?.data;
    const listed = item.get?.responses?.['200']?.content?.['application/json']?.schema?.properties?.data?.items;
    // The list's items name the entity (a POST may answer something else: an invitation).
    const entity = refName(listed) ?? refName(created);
    if (!entity) continue;
    const parameters: { name: string; in: string }[] = [...(item.get?.parameters ?? []), ...(item.post?.parameters ?? [])];
    const collection: Collection = {
      path,
      entity,
      tenantScoped: parameters.some((parameter) => parameter.in === 'header' && parameter.name === 'x-organization-id'),
      createBody: resolve(item.post?.requestBody?.content?.['application/json']?.schema),
      record: resolve(listed ?? created),
      itemMethods: Object.keys(document.paths[`${path}/{id}`] ?? {}),
    };
    const nested = nestedPath.exec(path);
    if (nested) collection.parent = { param: nested[2]!, entity: '' };
    collections.push(collection);
  }
  // A nested collection's parent is the entity of the flat collection its path starts with.
  for (const collection of collections) {
    if (!collection.parent) continue;
    const first = `/${nestedPath.exec(collection.path)![1]}`;
    collection.parent.entity = collections.find((candidate) => candidate.path === first)?.entity ?? '';
  }
  return collections;
}

/** `/Projects/{projectId}/Tasks` with the parent's id in it. */
export const withParent = (collection: Collection, parentId: string) => collection.path.replace(`{${collection.parent!.param}}`, parentId);

/** `/Projects/{projectId}/Tasks` as people write it: `/Projects/:projectId/Tasks`. */
export const shownPath = (path: string) => path.replace(/\{([^}]+)\}/g, ':$1');
