import fs from 'node:fs';
import path from 'node:path';
import { readSchemaLiteral, SchemaError } from './read-literal.js';
import { validateSchema } from './validate.js';
import type { Schema } from './types.js';

export { SchemaError } from './read-literal.js';
export { validateSchema } from './validate.js';
export type * from './types.js';

export const schemaFileName = 'authstrap.schema.ts';

/** Reads and validates `<projectDir>/authstrap.schema.ts` without executing it. */
export function loadSchema(projectDir: string): Schema {
  const filePath = path.join(projectDir, schemaFileName);
  if (!fs.existsSync(filePath)) {
    throw new SchemaError([`${filePath}: not found. Is ${projectDir} an authstrap project? (run \`authstrap setup\` to create one)`]);
  }
  return validateSchema(readSchemaLiteral(filePath), schemaFileName);
}
