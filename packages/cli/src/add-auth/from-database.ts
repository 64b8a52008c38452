import path from 'node:path';
import { newMigration, planGenerate, type FileWrite, type MigrationsState } from '../generate/index.js';
import { snapshotPath } from '../generate/migrations-plan.js';
import { databaseModel } from '../generate/table-model.js';
import type { Templates } from '../generate/templates.js';
import type { Catalog } from '../introspect/catalog.js';
import { authstrapTables, baselineModel, printSchema, schemaFromCatalog } from '../introspect/to-schema.js';
import { readSchemaLiteral, SchemaError } from '../schema/read-literal.js';
import { schemaFileName, validateSchema } from '../schema/index.js';
import { planSchemaEdit, type SchemaEditPlan } from './schema-edit.js';

/**
 * `authstrap add-auth` for a database without a schema file, as a plan: the live tables read
 * into `authstrap.schema.ts` (auth off), the migration baseline that records those tables as
 * they are, then the same edit as for an authstrap project (auth on, clashing names renamed)
 * and the project it generates. Pure: catalog in, files out; nothing is written here.
 */

/** The first migration: it records the tables that were there and changes nothing. */
export const baselineMigration = 'migrations/0000_existing_tables.sql';

export interface DatabasePlan {
  /** The schema file as read from the database, before auth is added: shown by --dry-run. */
  introspected: string;
  edit: SchemaEditPlan;
  notes: string[];
  writes: FileWrite[];
  /** The migration that adds auth and tenancy. */
  migration?: FileWrite;
  problems: string[];
}

export function planFromDatabase(
  projectDir: string,
  catalog: Catalog,
  options: {
    source: string;
    renames: Record<string, string>;
    templates: Templates;
    /** For the new backend's README and package.json (see RenderOptions). */
    backendPort?: number;
    authstrapDependency?: string;
  },
): DatabasePlan {
  const empty = (introspected: string, problems: string[], notes: string[] = []): DatabasePlan => ({
    introspected,
    edit: { before: introspected, after: introspected, authWasOn: false, renames: [], problems: [] },
    notes,
    writes: [],
    problems,
  });
  const managed = catalog.tables.filter((table) => authstrapTables.includes(table.name)).map((table) => table.name);
  if (managed.length > 0) {
    return empty('', [
      `the database already has authstrap's tables (${managed.join(', ')}): it belongs to an authstrap project. Run add-auth or generate in that project's folder instead.`,
    ]);
  }
  const introspection = schemaFromCatalog(catalog);
  const introspected = printSchema(introspection, options.source);
  if (introspection.entities.length === 0) {
    return empty(introspected, ['no table of the database can be mapped to an entity (see the notes above); there is nothing to add auth beside.'], introspection.notes);
  }

  const schemaFile = path.join(projectDir, schemaFileName);
  try {
    const before = validateSchema(readSchemaLiteral(schemaFile, introspected), schemaFileName);
    const edit = planSchemaEdit(introspected, { renames: options.renames });
    if (edit.problems.length > 0) return { ...empty(introspected, edit.problems, introspection.notes), edit };
    const schema = validateSchema(readSchemaLiteral(schemaFile, edit.after), schemaFileName);

    const baseline = baselineModel(databaseModel(before), catalog);
    const migrationsState: MigrationsState = { files: [path.basename(baselineMigration)], snapshot: baseline };
    const plan = planGenerate(projectDir, schema, options.templates, {
      migrationsState,
      backendPort: options.backendPort,
      authstrapDependency: options.authstrapDependency,
    });
    if (plan.problems.length > 0) return { ...empty(introspected, plan.problems, introspection.notes), edit };

    const tables = introspection.entities.map(([, definition]) => definition.table!).join(', ');
    const writes: FileWrite[] = [
      { path: schemaFileName, action: 'create', contents: edit.after },
      {
        path: baselineMigration,
        action: 'create',
        contents:
          `-- Written by authstrap add-auth. The tables ${tables} existed before authstrap;\n` +
          `-- ${snapshotPath} started from them as they were. This migration changes nothing.\n`,
      },
      ...plan.writes,
    ];
    return { introspected, edit, notes: introspection.notes, writes, migration: newMigration(plan.writes), problems: [] };
  } catch (error) {
    if (!(error instanceof SchemaError)) throw error;
    // The introspection wrote something the schema rules refuse: a bug to report, with the details.
    return empty(introspected, error.problems.map((problem) => `the schema read from the database does not validate: ${problem}`), introspection.notes);
  }
}
