import { skip, warn, type Outcome } from './check.js';
import type { ProjectSnapshot } from './project-snapshot.js';

/** Why a check of the live database cannot run: no database (skipped, with the reason) or no schema to compare with. */
export function databaseUnchecked(project: ProjectSnapshot): Outcome | undefined {
  if (!project.database) return skip(`database not checked: ${project.databaseNote ?? 'no database'}`);
  if (!project.schema) return warn(`cannot read the schema: ${project.schemaProblem ?? 'unknown problem'}`);
  return undefined;
}
