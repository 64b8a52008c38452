import fs from 'node:fs';
import path from 'node:path';
import { readSchemaSource, SchemaError, type Locate } from './read-literal.js';
import { validateSchema } from './validate.js';
import type { Schema } from './types.js';

export { SchemaError, type Locate, type SourceLocation } from './read-literal.js';
export { validateSchema } from './validate.js';
export type * from './types.js';

export const schemaFileName = 'authstrap.schema.ts';

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
  return { schema: validateSchema(value, schemaFileName, locate), locate };
}
