import fs from 'node:fs';
import path from 'node:path';
import { builtinEntities } from './builtin.js';
import { readSchemaSource, SchemaError, type Locate } from './read-literal.js';
import { isObject, validateSchema } from './validate.js';
import type { Schema } from './types.js';

export { SchemaError, type Locate, type SourceLocation } from './read-literal.js';
export { validateSchema } from './validate.js';
export type * from './types.js';

export const schemaFileName = 'authstrap.schema.ts';
/**
 * Entities that Better Auth's options need, written by @authstrap/better-auth-adapter's
 * `createSchema` (`npx authstrap-better-auth-schema` in the frontend): read with the schema when it is there.
 */
export const betterAuthSchemaFileName = 'better-auth.schema.json';

/** Reads and validates `<projectDir>/authstrap.schema.ts` without executing it. */
export function loadSchema(projectDir: string): Schema {
  return loadSchemaWithSource(projectDir).schema;
}

/** The schema, and where each of its entities, fields and keys is written (for messages). */
export function loadSchemaWithSource(projectDir: string): { schema: Schema; locate: Locate } {
  const filePath = path.join(projectDir, schemaFileName);
  if (!fs.existsSync(filePath)) {
    throw new SchemaError([`${filePath}: not found. Is ${projectDir} an authstrap project? (run \`authstrap setup\` to create one)`]);
  }
  const { value, locate } = readSchemaSource(filePath);
  return { schema: validateSchema(withBetterAuthEntities(value, projectDir), schemaFileName, locate), locate };
}

/**
 * The schema's data with the entities of better-auth.schema.json added. A built-in entity named
 * in both files is extended by both (a field in both is a mistake); any other name in both is one.
 * Kept apart from authstrap.schema.ts so that generating it again never rewrites your own file.
 */
export function withBetterAuthEntities(value: unknown, projectDir: string): unknown {
  const filePath = path.join(projectDir, betterAuthSchemaFileName);
  if (!fs.existsSync(filePath) || !isObject(value) || !isObject(value.entities)) return value;
  const again = 'write it again with `npx authstrap-better-auth-schema --output <this folder>/better-auth.schema.json` in the frontend';
  let part: unknown;
  try {
    part = JSON.parse(fs.readFileSync(filePath, 'utf8'));
  } catch (error) {
    throw new SchemaError([`${betterAuthSchemaFileName}: not valid JSON (${(error as Error).message}); ${again}`]);
  }
  if (!isObject(part) || !isObject(part.entities)) throw new SchemaError([`${betterAuthSchemaFileName}: must be an object with "entities"; ${again}`]);
  const problems: string[] = [];
  const entities: Record<string, unknown> = { ...value.entities };
  for (const [name, entity] of Object.entries(part.entities)) {
    const own = entities[name];
    if (own === undefined) {
      entities[name] = entity;
    } else if (Object.hasOwn(builtinEntities, name) && isObject(own) && isObject(entity) && isObject(own.fields ?? {}) && isObject(entity.fields ?? {})) {
      const ownFields = (own.fields ?? {}) as Record<string, unknown>;
      const theirs = (entity.fields ?? {}) as Record<string, unknown>;
      for (const field of Object.keys(theirs).filter((field) => Object.hasOwn(ownFields, field))) {
        problems.push(`${betterAuthSchemaFileName}: entity "${name}", field "${field}": is also added in ${schemaFileName}; keep it in one of them`);
      }
      entities[name] = { ...own, fields: { ...ownFields, ...theirs }, indexes: [...((own.indexes as unknown[]) ?? []), ...((entity.indexes as unknown[]) ?? [])] };
    } else {
      problems.push(`${betterAuthSchemaFileName}: entity "${name}": is also defined in ${schemaFileName}; keep it in one of them`);
    }
  }
  if (problems.length > 0) throw new SchemaError(problems);
  return { ...value, entities };
}
